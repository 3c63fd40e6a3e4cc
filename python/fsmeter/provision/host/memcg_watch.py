"""The page-cache limit's watcher: a small process outside the cell's memory cgroup that keeps the
cgroup's limit at ``page cache limit + other memory in use + slack``.

Run by path (``python memcg_watch.py CGROUP VERSION LIMIT SLACK INTERVAL PEAK_FILE``), standard library only,
started before fsmeter moves itself into the cgroup, so it is never charged there and never stalls
with the run. It keeps the largest "other" use it has seen in PEAK_FILE, and stops when its stdin reaches end of file:
when fsmeter reverts the limit, or when fsmeter dies. It removes PEAK_FILE when it stops, so that a
fsmeter killed with SIGKILL (no revert runs) leaves no file behind in the temporary directory.

Other memory is the cgroup's usage minus its page cache (cgroup v1: memory.usage_in_bytes and the
``cache`` field of memory.stat; v2: memory.current and ``file``): anonymous memory and kernel
memory such as the inodes and dentries of the files the run makes.
"""

import os
import select
import sys


def read_other(child: str, version: int) -> int:
    usage_name = "memory.usage_in_bytes" if version == 1 else "memory.current"
    with open(os.path.join(child, usage_name)) as f:
        usage = int(f.read())
    with open(os.path.join(child, "memory.stat")) as f:
        fields = dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
    return max(0, usage - int(fields.get("cache" if version == 1 else "file", "0")))


def main(argv: list) -> int:
    child, version, limit, slack, interval = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), float(argv[4])
    peak_file = argv[5]
    # v1: the hard limit (the cgroup's OOM killer is disabled, so a task over it waits for the next
    # raise instead of being killed); v2: memory.high, which throttles instead of killing.
    limit_file = os.path.join(child, "memory.limit_in_bytes" if version == 1 else "memory.high")
    current, peak = -1, 0
    while True:
        try:
            other = read_other(child, version)
            if other > peak:
                peak = other
                with open(peak_file, "w") as f:
                    f.write(str(peak))
            want = limit + other + slack
            # Raise at once; lower only past a whole slack, so the limit does not flap.
            if want > current or want < current - slack:
                with open(limit_file, "w") as f:
                    f.write(str(want))
                current = want
        except (OSError, ValueError):
            pass  # EBUSY on lowering (cache not yet reclaimed), or the cgroup going away
        ready, _, _ = select.select([sys.stdin], [], [], interval)
        if ready and not sys.stdin.buffer.read1(1):  # end of file: stop
            return 0


def run(argv: list) -> int:
    try:
        return main(argv)
    finally:
        try:
            os.unlink(argv[5])
        except OSError:
            pass
        if int(argv[1]) == 1:  # never leave a cgroup whose tasks would wait for a raise that cannot come
            try:
                with open(os.path.join(argv[0], "memory.oom_control"), "w") as f:
                    f.write("0")
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
