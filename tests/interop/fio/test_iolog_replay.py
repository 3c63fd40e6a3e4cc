"""fio's read_iolog: a job's requests replayed from fio's I/O log (versions 2 and 3) with fio's replay options, held
to what fio 3.33 does with the same logs (tests/data/fio/iolog/README.md), and every bad line of a log refused in one
line that names it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsmeter.errors import UserError
from fsmeter.families.access import AccessParams
from fsmeter.interop.fio.replay import parse_log
from fsmeter.interop.fio.values import Ctx
from fsmeter.interop.fio_jobfile import parse_jobfile
from fsmeter_cli import fsm, job_of, run_jobfile_in

DATA = Path(__file__).resolve().parents[2] / "data" / "fio" / "iolog"
V3, V2 = DATA / "randrw_v3.log", DATA / "wait_v2.log"


_run = run_jobfile_in


def _counts(doc: dict, job: str = "replay") -> tuple:
    ops = doc["phases"][f"{job}:run"]["ops"]
    get = lambda k, f: (ops.get(k) or {}).get(f, 0)  # noqa: E731
    return (
        get("read", "bytes"),
        get("read", "count"),
        get("write", "bytes"),
        get("write", "count"),
        get("fsync", "count"),
    )


@pytest.mark.parametrize(
    "extra", ["", "replay_no_stall=1\n", "replay_time_scale=50\n", "replay_scale=2\nreplay_align=4096\n"]
)
def test_a_version_3_log_replays_as_fio_replays_it(tmp_path, extra):
    doc = _run(tmp_path, f"[replay]\nread_iolog={V3}\nrw=read\n{extra}")
    assert _counts(doc) == (40960, 10, 24576, 6, 2)  # fio 3.33, each of these options


def test_a_version_2_log_waits_and_syncs_as_fio(tmp_path):
    doc = _run(tmp_path, f"[replay]\nread_iolog={V2}\n")
    assert _counts(doc) == (12288, 2, 8192, 2, 1)  # fio 3.33
    assert doc["phases"]["replay:run"]["elapsed_s"] >= 0.02, "the reads wait for the log's 20 ms"


def test_replay_skip_leaves_out_the_writes(tmp_path):
    # fio 3.34 and later (fio 3.33 skips only in blktrace traces).
    doc = _run(tmp_path, f"[replay]\nread_iolog={V3}\nreplay_skip=write\n")
    assert _counts(doc) == (40960, 10, 0, 0, 2)


def test_a_replay_can_be_logged_again_and_the_offsets_follow_replay_scale(tmp_path):
    _run(tmp_path, f"[replay]\nread_iolog={V3}\nreplay_scale=2\nreplay_align=4096\nwrite_iolog=again.log\n")
    theirs = [line.split() for line in V3.read_text().splitlines()[1:] if len(line.split()) == 5]
    ours = [line.split() for line in (tmp_path / "again.log").read_text().splitlines()[1:] if len(line.split()) == 5]
    assert [(a[2], a[4]) for a in ours] == [(a[2], a[4]) for a in theirs]
    for a, b in zip(ours, theirs):
        if a[2] in ("read", "write"):
            assert int(a[3]) == int(b[3]) // 2 // 4096 * 4096


def _parse(tmp_path: Path, log: str, extra: str = ""):
    (tmp_path / "x.log").write_text(log)
    job = parse_jobfile(f"[r]\nread_iolog={tmp_path / 'x.log'}\n{extra}", "t.fio").jobs[0]
    ctx = Ctx("t.fio", job)
    return parse_log(ctx, job.get("read_iolog"), str(tmp_path / "x.log"))


def test_the_log_is_parsed_as_fio_reads_it(tmp_path):
    log = "fio version 3 iolog\n10 a add\n20 a open\n1000 a write 0 4096\n3000 a read 512 100\n4000 a sync 0 0\n9000 a close\n"
    got = _parse(tmp_path, log)
    assert got["names"] == ["a"] and got["timed"]
    assert got["ops"] == [[0, 0, 1, 0, 4096], [2_000_000, 0, 0, 512, 100], [3_000_000, 0, 3, 0, 0]]
    assert _parse(tmp_path, log, "replay_time_scale=200\n")["ops"][1][0] == 1_000_000
    assert [o[0] for o in _parse(tmp_path, log, "replay_no_stall=1\n")["ops"]] == [0, 0, 0]
    assert _parse(tmp_path, log, "replay_redirect=b\n")["names"] == ["b"]


@pytest.mark.parametrize(
    "log, message",
    [
        ("fio version 1 iolog\n", r"line 1: not fio's I/O log"),
        ("fio version 3 iolog\n1 a add\nx a read 0 4096\n", r"x.log line 3: .*a version 3 line is TIME FILE ACTION"),
        ("fio version 3 iolog\n1 a add\n2 a fly 0 4096\n", r"x.log line 3: 'fly': an action is read, write"),
        ("fio version 3 iolog\n1 a add\n2 a read -1 4096\n", r"x.log line 3: the offset and length are whole"),
        ("fio version 3 iolog\n1 a read 0 4096\n", r"x.log line 2: the file 'a' is used before its 'add' line"),
        ("fio version 3 iolog\n1 ../a add\n", r"x.log line 2: the file '../a' is not inside the job's directory"),
        ("fio version 3 iolog\n1 /etc/passwd add\n", r"not inside the job's directory"),
        ("fio version 3 iolog\n1 a add\n2 a read 0 0\n", r"x.log line 3: a request of 0 bytes"),
        ("fio version 3 iolog\n1 a add\n", r"the log holds no request to replay"),
        ("\x00\x74\x61\x65" + "x" * 60, r"is a blktrace trace"),
    ],
)
def test_a_bad_log_is_refused_in_one_line_naming_its_line(tmp_path, log, message):
    with pytest.raises(UserError, match=message) as exc:
        _parse(tmp_path, log)
    assert "\n" not in exc.value.message and exc.value.message.startswith("t.fio line 2: read_iolog=")


def test_a_replayed_job_maps_onto_the_access_workload_and_refuses_what_it_would_drop():
    m = job_of(f"[replay]\nread_iolog={V3}\nrw=read\niodepth=4\nioengine=libaio\n")
    p = m.params
    assert p["file_names"] == ["data"] and p["file_size"] == 65536 and p["queue_depth"] == 4
    assert len(p["replay"]["ops"]) == 18 and p["replay"]["timed"] is True
    AccessParams(**p)
    assert any(
        n.startswith("read_iolog=") and "18 requests (10 reads, 6 writes, 0 trims, 2 syncs)" in n for n in m.notes
    )
    assert any(n.startswith("rw=read: the log gives the requests") for n in m.notes)
    with pytest.raises(UserError, match=r"^t.fio line 3: option rate with read_iolog is not supported"):
        job_of(f"[replay]\nread_iolog={V3}\nrate=1m\n")
    with pytest.raises(UserError, match=r"^t.fio line 2: read_iolog=a:b: one log per clone"):
        job_of("[replay]\nread_iolog=a:b\n")
    alone = job_of("[a]\nsize=1m\nreplay_no_stall=1\n")
    assert any(n.startswith("replay_no_stall=1 without read_iolog") for n in alone.notes)


def test_a_long_log_is_taken_and_a_far_offset_does_not_fill_the_disk(tmp_path):
    # Times past 2^32 ns (4.3 s) and offsets past 4 GiB are a log's own numbers, not counts to cap.
    (tmp_path / "long.log").write_text(
        "fio version 3 iolog\n0 data add\n1 data write 0 4096\n10000001 data read 0 4096\n"
    )
    doc = _run(tmp_path, f"[replay]\nread_iolog={tmp_path / 'long.log'}\nreplay_no_stall=1\n")
    assert _counts(doc) == (4096, 1, 4096, 1, 0)
    # A log reaching a petabyte's last bytes: refused before anything is laid out, naming the room it lacks.
    (tmp_path / "far.log").write_text("fio version 3 iolog\n0 data add\n1 data read 1125899906838528 4096\n")
    (tmp_path / "d").mkdir(exist_ok=True)
    (tmp_path / "far.fio").write_text(f"[replay]\nread_iolog={tmp_path / 'far.log'}\n")
    r = fsm("run", "far.fio", "--dir", "d", "-q", cwd=tmp_path)
    assert r.returncode != 0 and "laying its 1 file(s) out needs" in r.stderr and "Traceback" not in r.stderr
    assert list((tmp_path / "d").iterdir()) == []


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe\x00garbage",
        b"fio version 3 iolog\n" + b"x" * 100_000 + b"\n",
        b"fio version 3 iolog\n1 a add\n2 a read 0 4096 extra words\n",
        b"fio version 2 iolog\na add\na wait 99999999999999999999 0\na read 0 4096\n",
        b"fio version 3 iolog\n1 a\xc3\xa9 add\n2 a\xc3\xa9 read 0 4096\n3 .. add\n",
    ],
)
def test_a_hostile_log_gets_one_line_never_a_traceback(tmp_path, data):
    (tmp_path / "h.log").write_bytes(data)
    (tmp_path / "d").mkdir()
    (tmp_path / "h.fio").write_text(f"[replay]\nread_iolog={tmp_path / 'h.log'}\n")
    r = fsm("run", "h.fio", "--dir", "d", "-q", cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
