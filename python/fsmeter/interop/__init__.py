"""fio interoperability: fio job files in (fio_jobfile, the fio package), fio-shaped JSON out (fio_export)."""
