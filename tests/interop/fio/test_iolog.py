"""fio's write_iolog: every request a job issues, in fio's I/O log version 3, as fio 3.33 writes it for the same job
(its lines recorded below): a header, each file added and opened, one line per request (time in microseconds,
file, action, offset, length), each file closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter_cli import job_of, run_jobfile_in

# fio's t/jobs t0007 at 4 MiB (fio 3.33 wrote these three lines for it: reads at 0, 1.5 and 3 MiB).
T0007 = "[rs]\nfilename=seq\nsize=4m\nrw=read:512k\nbs=1m\nnorandommap\nwrite_iolog=rs.log\n"
FIO_T0007 = [("seq", "read", 0, 1048576), ("seq", "read", 1572864, 1048576), ("seq", "read", 3145728, 1048576)]
# A verifying random mix: fio 3.33 logged 64 reads (its mix's and every write read back) and 36 writes.
MIX = "[mix]\nfilename=mix\nsize=256k\nbs=4k\nrw=randrw\nfsync=4\nwrite_iolog=mix.log\nverify=crc32c\n"


_run = run_jobfile_in


def _log(path: Path) -> tuple[list, list]:
    lines = path.read_text().splitlines()
    assert lines[0] == "fio version 3 iolog"
    files, ios = [], []
    for line in lines[1:]:
        parts = line.split()
        int(parts[0])  # the time, in microseconds
        if len(parts) == 3:
            files.append((parts[1], parts[2]))
        else:
            assert len(parts) == 5, line
            ios.append((parts[1], parts[2], int(parts[3]), int(parts[4])))
    return files, ios


def test_write_iolog_is_mapped_to_the_engines_log():
    m = job_of(T0007)
    log = m.params["iolog_out"]
    assert Path(log["path"]).is_absolute() and log["path"].endswith("rs.log") and log["names"] == ["seq"]
    AccessParams(**m.params)
    assert any(n.startswith("write_iolog=rs.log: every request the job issues") for n in m.notes)


@pytest.mark.parametrize(
    "text, message",
    [
        ("write_iolog=\n", r"write_iolog=: give a file name"),
        ("write_iolog=../up.log\n", r"leaves the current directory"),
        ("ioengine=filecreate\nwrite_iolog=x.log\n", r"with ioengine=filecreate is not supported"),
    ],
)
def test_what_cannot_be_logged_is_refused_in_one_line(text, message):
    with pytest.raises(UserError, match=message) as exc:
        job_of("[a]\nsize=1m\nrw=write\n" + text)
    assert "\n" not in exc.value.message


def test_t0007s_log_is_fios(tmp_path):
    doc = _run(tmp_path, T0007)
    files, ios = _log(tmp_path / "rs.log")
    assert files == [("seq", "add"), ("seq", "open"), ("seq", "close")]
    assert ios == FIO_T0007
    assert doc["phases"]["rs:run"]["counters"]["iolog_lines"] == 3


def test_a_verifying_mix_logs_every_request_it_issues(tmp_path):
    doc = _run(tmp_path, MIX)
    run = doc["phases"]["mix:run"]
    _, ios = _log(tmp_path / "mix.log")
    by = {a: [i for i in ios if i[1] == a] for a in ("read", "write", "sync")}
    # As fio's log: a line per read (the mix's and every read-back: 64 here, as in fio) and per write.
    assert len(by["read"]) == run["ops"]["read"]["count"] == 64
    assert len(by["write"]) == run["ops"]["write"]["count"]
    assert len(by["sync"]) == run["ops"]["fsync"]["count"] > 0
    assert all(f == "mix" and o % 4096 == 0 and o < 256 << 10 and n == 4096 for f, _, o, n in by["read"] + by["write"])
    assert {o for _, _, o, _ in by["write"]} <= {o for _, _, o, _ in by["read"]}, "every write is read back"
