-- Version 3: metrics.keys, the JSON object a grid value is keyed by (iozone: test, file_size,
-- record_size); NULL for an ordinary metric.
ALTER TABLE metrics ADD COLUMN keys TEXT;
