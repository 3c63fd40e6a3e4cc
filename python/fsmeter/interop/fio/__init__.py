"""fio jobs as fsmeter access workloads, one module per concern: `options` (what is mapped, accepted or refused),
`values` (reading option values), `files` (file placement and sizes), `pattern` and `offsets` (where requests
go), `pacing` (rate, latency target, steady state, priorities), `cpus`, `content` (buffers, patterns, dedupe,
verify), `engines`, `logs`, `on_error`; `job` maps one job, `load` a job file. docs/fio.md lists the mapping."""
