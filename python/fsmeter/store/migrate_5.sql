-- Version 5: the regime each phase ran in (fsmeter.regime): the share of the machine's CPUs that
-- other processes used during the phase, and the share of the phase's reads served by the page
-- cache instead of the device. NULL for phases stored before, or when it could not be measured.
ALTER TABLE phases ADD COLUMN other_cpu_share REAL;
ALTER TABLE phases ADD COLUMN cache_read_share REAL;
