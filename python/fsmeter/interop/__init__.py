"""fio interoperability: fio job files in (fio_jobfile, fio_map), fio-shaped JSON out (fio_export)."""
