-- fsmeter results store, schema version 1 (see HISTORY.md; later versions are migrate_N.sql).
-- One SQLite file. Every finished trial is one transaction: its trial row, phases,
-- metrics, interval samples, histograms and environment are committed together.

CREATE TABLE campaigns (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    source          TEXT NOT NULL,          -- the campaign file's text, verbatim
    source_path     TEXT,                   -- where it was read from (informative)
    created         TEXT NOT NULL,          -- ISO 8601, UTC
    finished        TEXT,
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
    fsmeter_version TEXT NOT NULL
);

-- One point of the factor matrix: a workload x one level of every factor.
CREATE TABLE cells (
    id          INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,           -- 0-based position in the matrix (run order)
    workload    TEXT NOT NULL,
    factors     TEXT NOT NULL,              -- JSON object: factor name -> level
    status      TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted')),
    cause       TEXT,                       -- why it failed / was interrupted
    stop_reason TEXT,                       -- target-met | trial-cap | time-cap | fixed-n
    UNIQUE (campaign_id, idx)
);

-- The factor levels again, one row each, for SQL filtering. value is JSON (3, "ext4", true).
CREATE TABLE cell_factors (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (cell_id, name)
);

CREATE TABLE trials (
    id          INTEGER PRIMARY KEY,
    cell_id     INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,           -- 1-based within the cell
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'interrupted')),
    cause       TEXT,
    started     TEXT NOT NULL,
    ended       TEXT NOT NULL,
    discarded   INTEGER NOT NULL DEFAULT 0, -- 1: excluded from statistics (warm-up trial)
    stop_reason TEXT,                       -- set on the trial after which the cell stopped
    half_width_pct REAL,                    -- CI half-width (% of mean) of the headline after this trial
    UNIQUE (cell_id, number)
);

CREATE TABLE phases (
    id           INTEGER PRIMARY KEY,
    trial_id     INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,          -- run order within the trial
    key          TEXT NOT NULL,             -- result name (Phase.key)
    engine_phase TEXT NOT NULL,
    measured     INTEGER NOT NULL,
    discarded    INTEGER NOT NULL DEFAULT 0,
    elapsed_s    REAL,
    warmup_s     REAL,
    interrupted  INTEGER NOT NULL DEFAULT 0,
    cache_method TEXT,                      -- remount | drop_caches | fadvise | none | NULL (not reset)
    report       TEXT NOT NULL              -- the engine's phase report, JSON
);

CREATE TABLE metrics (
    trial_id         INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    phase_key        TEXT NOT NULL,
    name             TEXT NOT NULL,
    unit             TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL,
    headline         INTEGER NOT NULL DEFAULT 0,  -- 1: the family's first metric
    value            REAL,
    PRIMARY KEY (trial_id, phase_key, name)
);

CREATE TABLE intervals (
    phase_id INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
    t_s      REAL NOT NULL,                 -- end of the interval, seconds since phase start
    dur_s    REAL NOT NULL,
    ops      INTEGER NOT NULL,
    bytes    INTEGER NOT NULL
);

CREATE TABLE histograms (
    phase_id INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
    op       TEXT NOT NULL,
    count    INTEGER, min_ns INTEGER, mean_ns REAL, stdev_ns REAL,
    p50_ns   INTEGER, p90_ns INTEGER, p99_ns INTEGER, p999_ns INTEGER, p9999_ns INTEGER, max_ns INTEGER,
    buckets  TEXT NOT NULL,                 -- JSON [[upper_ns, count], ...]
    PRIMARY KEY (phase_id, op)
);

CREATE TABLE environment (
    trial_id          INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
    hostname          TEXT,
    kernel            TEXT,
    cpu_model         TEXT,
    mem_bytes         INTEGER,
    cpus_online       INTEGER,
    cpus_used         INTEGER,
    target_kind       TEXT,
    device            TEXT,
    fs                TEXT,
    mkfs_command      TEXT,
    mkfs_options      TEXT,                 -- JSON list
    mkfs_tool         TEXT,
    mkfs_tool_version TEXT,
    mount_options     TEXT,                 -- in effect (4th field of the /proc/mounts line)
    proc_mounts_line  TEXT,
    scheduler         TEXT,
    readahead_kb      INTEGER,
    cache_method      TEXT,
    seed              INTEGER,
    fsmeter_version   TEXT,
    extra             TEXT                  -- JSON: everything else known (host factors, job, ...)
);

CREATE INDEX cells_campaign ON cells (campaign_id);
CREATE INDEX trials_cell ON trials (cell_id);
CREATE INDEX phases_trial ON phases (trial_id);
CREATE INDEX intervals_phase ON intervals (phase_id);
