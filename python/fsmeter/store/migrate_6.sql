-- Version 6: the storage under a campaign's target, measured before mkfs (fsmeter.provision.storage_probe):
-- random 4 KiB read latency at queue depth 1, sequential MB/s, write + fdatasync latency. One row per
-- probe (a campaign probes its target when it starts or resumes). NULL figures: not measured (memory,
-- or a filesystem that refuses O_DIRECT); the report JSON says why.
CREATE TABLE storage_probes (
    id              INTEGER PRIMARY KEY,
    campaign_id     INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    probed          TEXT NOT NULL,          -- ISO 8601, UTC
    hostname        TEXT,
    storage_class   TEXT NOT NULL,          -- memory | loop-image | block-device | file | disk-model:NAME
    span_bytes      INTEGER,
    random_read_ms_p50  REAL,
    random_read_ms_mean REAL,
    seq_read_mb_s   REAL,
    seq_write_mb_s  REAL,
    flush_ms_p50    REAL,
    cpu_mhz         REAL,                   -- this machine's CPU clock when probed (for CPU-bound claims)
    cpus_online     INTEGER,
    report          TEXT NOT NULL           -- the whole probe, JSON
);
CREATE INDEX storage_probes_campaign ON storage_probes (campaign_id);
