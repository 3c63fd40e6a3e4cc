-- Version 7: the write-back share of a phase (fsmeter.regime.cache_write_share): of the bytes the
-- phase wrote, the share that had not reached the target's block device when it ended. NULL when
-- the phase wrote under 1 MiB or the target has no block device of its own. Older phases get it from
-- their report's regime, which recorded both byte counts since version 5.
ALTER TABLE phases ADD COLUMN cache_write_share REAL;
UPDATE phases SET cache_write_share = round(
        min(1.0, max(0.0, 1.0 - CAST(json_extract(report, '$.regime.device_write_bytes') AS REAL)
                               / json_extract(report, '$.regime.write_bytes'))), 4)
    WHERE json_valid(report)
      AND json_type(report, '$.regime.device_write_bytes') IN ('integer', 'real')
      AND json_type(report, '$.regime.write_bytes') IN ('integer', 'real')
      AND json_extract(report, '$.regime.write_bytes') >= 1048576;
