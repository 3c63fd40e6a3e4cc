-- Version 2: the process running a campaign. owner is a JSON object (pid, its start time in clock
-- ticks after boot, the boot id, host name, command line, since) set while an fsmeter process runs
-- the campaign and cleared when it stops, so that `campaign resume` can tell a campaign that is
-- still being run (its owner alive) from one whose run died (SIGKILL, power loss: owner gone).
ALTER TABLE campaigns ADD COLUMN owner TEXT;
