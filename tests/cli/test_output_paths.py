"""Output paths (`--json`, `--report`, `-o`, `--to`, a new store) are checked before any work, under the
rules of `--dir`: a kernel interface, a directory, a missing folder or an impossible name is one line and
nothing is measured or written; `-` is standard output where a user expects it."""

from __future__ import annotations

import json
import os

import pytest
from fsmeter.errors import UserError
from fsmeter.userpaths import check_dir, check_output_path, own_dir, write_output
from fsmeter_cli import fsm
from store_sample import fill

QUICK = ["--set", "duration_s=0.2", "--set", "warmup_s=0", "--set", "file_size=1M", "--min-phase-s", "0", "-q"]


def one_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


@pytest.mark.parametrize(
    "path, words",
    [
        ("/proc/fsmeter-out.json", "kernel interface (proc)"),
        ("/sys/kernel/fsmeter-out.json", "kernel interface (sysfs)"),
        ("/dev/fsmeter-out.json", "kernel interface"),
        ("/no/such/folder/out.json", "does not exist"),
        ("x" * 300 + ".json", "more than a filesystem's 255"),
        ("a/" * 2100 + "b", "longer than 4095 bytes"),
    ],
)
def test_output_path_rules(tmp_path, path, words):
    with pytest.raises(UserError) as e:
        check_output_path(path if path.startswith("/") else tmp_path / path, "--json")
    assert words in e.value.message and "\n" not in e.value.message


def test_output_path_refuses_a_directory_a_nul_and_a_link_to_proc(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        check_output_path(tmp_path, "--json")
    with pytest.raises(UserError, match="NUL byte"):
        check_output_path(f"{tmp_path}/a\0b", "--json")
    (tmp_path / "link.json").symlink_to("/proc/sys/vm/drop_caches")
    with pytest.raises(UserError, match="kernel interface"):
        check_output_path(tmp_path / "link.json", "--json")
    with pytest.raises(UserError, match="standard output"):
        check_output_path("-", "--report")  # not an output that may go to standard output
    assert str(check_output_path("-", "--json", stdout=True)) == "-"
    assert check_output_path(tmp_path / "new.json", "--json") == tmp_path / "new.json"


def test_dir_rules_are_the_same(tmp_path):
    assert check_dir(tmp_path) == tmp_path
    for bad, words in (("/proc", "kernel interface"), ("/dev/shm", "kernel interface"), (tmp_path / "no", "not an")):
        with pytest.raises(UserError, match=words):
            check_dir(bad)
    with pytest.raises(UserError, match="NUL byte"):
        check_dir(f"{tmp_path}/\0")


def test_write_output_failure_is_one_line(tmp_path, capsys):
    assert write_output("-", "to stdout\n", "--json") is False
    assert capsys.readouterr().out == "to stdout\n"
    if os.path.exists("/dev/full"):
        with pytest.raises(UserError, match="could not be written"):
            write_output("/dev/full", "x" * 100000, "--json")


def test_run_json_dash_is_standard_output(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    r = fsm("run", "seq-read", "--dir", d, "--json", "-", "--no-wait", *QUICK, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # nothing else on standard output: the tables went to standard error
    assert doc["workload"] == "seq-read" and "run" in r.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("target", ["/proc/fsmeter-x.json", "/sys/fsmeter-x.json", "/dev/shm/fsmeter-x.json"])
def test_run_refuses_a_kernel_interface_before_it_measures(tmp_path, target):
    d = tmp_path / "d"
    d.mkdir()
    r = fsm("run", "seq-read", "--dir", d, "--json", target, "--no-wait", *QUICK)
    assert r.returncode == 2 and "kernel interface" in one_line(r)
    assert list(d.iterdir()) == [] and not os.path.exists(target)


def test_each_command_checks_its_output_first(tmp_path):
    db = tmp_path / "s.sqlite"
    fill(db)
    before = db.read_bytes()
    cases = [
        (["export", "--db", db, "-o", "/proc/x.csv"], "-o /proc/x.csv"),
        (["export", "--db", db, "--format", "fio-json", "--split", "/sys/x"], "--split /sys/x"),
        (["report", "--db", db, "-o", "/proc/x.html"], "--output /proc/x.html"),
        (["merge", db, "-o", "/proc/m.sqlite"], "-o /proc/m.sqlite"),
        (["store", "recover", db, "--to", "/sys/r.sqlite"], "--to /sys/r.sqlite"),
        (["compare", "--dir", tmp_path, "--report", "/proc/r.html", "--no-wait"], "--report /proc/r.html"),
        (["io500", "--dir", tmp_path, "--json", "/proc/io.json", "--no-wait"], "--json /proc/io.json"),
        (["study", "check", "wettstein2002", "--json", "/proc/v.json"], "--json /proc/v.json"),
        (["study", "report", "wettstein2002", "--db", db, "-o", "/proc/s.html"], "--out /proc/s.html"),
    ]
    for args, words in cases:
        r = fsm(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert words in one_line(r), args
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]  # no store, report or lock made


def test_export_and_report_to_standard_output(tmp_path):
    db = tmp_path / "s.sqlite"
    fill(db)
    r = fsm("export", "--db", db, "--format", "json", "-o", "-")
    assert r.returncode == 0 and json.loads(r.stdout)["format"] == "fsmeter-campaign"
    r = fsm("report", "--db", db, "-o", "-")
    assert (
        r.returncode == 0 and r.stdout.lstrip().startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    )
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["store", "recover", "{db}", "--to", "{long}"],
        ["export", "1", "--db", "{db}", "-f", "fio-json", "--split", "{long}"],
        ["merge", "{db}", "-o", "{long}"],
        ["merge", "{long}", "-o", "{tmp}/m.sqlite"],
        ["store", "check", "{long}"],
        ["compare-runs", "{long}.json", "1", "--db", "{db}"],
        ["report", "--db", "{long}"],
        ["run", "{long}", "--dir", "{tmp}"],
        ["run", "seq-read", "--dir", "{long}"],
        ["io500", "--dir", "{tmp}", "--db", "{long}", "--no-wait"],
        ["study", "report", "wettstein2002", "--db", "{long}"],
    ],
    ids=lambda a: " ".join(x for x in a if not x.startswith("{"))[:40],
)
def test_a_name_too_long_to_look_up_is_one_line(tmp_path, args):
    """A part over 255 bytes makes the kernel refuse even to look the path up (ENAMETOOLONG), which
    pathlib's exists() and is_file() raise instead of answering."""
    db = tmp_path / "s.sqlite"
    fill(db)
    long = str(tmp_path / ("x" * 300))
    r = fsm(*[a.format(db=db, long=long, tmp=tmp_path) for a in args], cwd=tmp_path)
    assert r.returncode in (1, 2)
    one_line(r)


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/loop-control"), reason="crash run checks root and loop devices first"
)
@pytest.mark.parametrize("out, words", [("/proc/fsmeter-crash", "kernel interface"), ("no/such/x", "does not exist")])
def test_crash_run_checks_its_results_folder_first(tmp_path, out, words):
    r = fsm("crash", "run", "crash-quick", "--out", out, "--no-wait", cwd=tmp_path)
    assert r.returncode == 2 and words in one_line(r) and "--out" in one_line(r)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("db", ["/dev/shm/fsmeter-test-store.sqlite", "/proc/fsmeter-test-store.sqlite"])
def test_a_new_store_is_an_output_under_the_same_rules(tmp_path, db):
    c = tmp_path / "c.toml"
    c.write_text(f'name = "x"\n[[workloads]]\nname = "seq-read"\n[target]\nkind = "dir"\npath = "{tmp_path}"\n')
    r = fsm("campaign", "run", c, "--db", db, "--no-wait", "-q", cwd=tmp_path)
    assert r.returncode == 2 and f"--db {db} is in a kernel interface" in one_line(r)
    assert not os.path.exists(db)


def test_own_dir_refuses_a_link_a_file_and_a_shared_private_folder(tmp_path):
    """The folders fsmeter writes its own files into (a crash cell's output, its images): made when missing,
    a link or a file in their place refused in one line, a private one closed to other users."""
    made = own_dir(tmp_path / "a" / "b", "crash output folder")
    assert made.is_dir() and own_dir(made, "crash output folder") == made
    away = tmp_path / "away"
    away.mkdir()
    (tmp_path / "link").symlink_to(away)
    with pytest.raises(UserError, match="crash output folder .*link is a symbolic link fsmeter did not make"):
        own_dir(tmp_path / "link", "crash output folder")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is not a folder"):
        own_dir(tmp_path / "file", "crash output folder")
    private = own_dir(tmp_path / "images", "crash image folder", private=True)
    assert private.stat().st_mode & 0o777 == 0o700
    os.chmod(private, 0o777)
    with pytest.raises(UserError, match="open to other users"):
        own_dir(private, "crash image folder", private=True)
    assert list(away.iterdir()) == []
