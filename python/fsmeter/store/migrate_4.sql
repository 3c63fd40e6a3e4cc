-- fsmeter: foreign_keys off
-- Version 4: a trial may be 'corrupt' (data verification found a bad block). SQLite cannot
-- change a CHECK constraint in place: the table is rebuilt (sqlite.org/lang_altertable.html,
-- "making other kinds of table schema changes"), with foreign keys off so the rows of
-- phases, metrics and environment that point at trials are kept.
CREATE TABLE trials_v4 (
    id          INTEGER PRIMARY KEY,
    cell_id     INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,           -- 1-based within the cell
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'interrupted', 'corrupt')),
    cause       TEXT,
    started     TEXT NOT NULL,
    ended       TEXT NOT NULL,
    discarded   INTEGER NOT NULL DEFAULT 0, -- 1: excluded from statistics (warm-up trial)
    stop_reason TEXT,                       -- set on the trial after which the cell stopped
    half_width_pct REAL,                    -- CI half-width (% of mean) of the headline after this trial
    UNIQUE (cell_id, number)
);
INSERT INTO trials_v4 (id, cell_id, number, status, cause, started, ended, discarded, stop_reason, half_width_pct)
    SELECT id, cell_id, number, status, cause, started, ended, discarded, stop_reason, half_width_pct FROM trials;
DROP TABLE trials;
ALTER TABLE trials_v4 RENAME TO trials;
CREATE INDEX trials_cell ON trials (cell_id);
