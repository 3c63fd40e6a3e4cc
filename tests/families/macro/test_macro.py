"""The macro family (cp / tar / rm): the tree generator's determinism and shape, the source cache's
checksums, bad inputs as one line, a failing tool as a failed trial, and a run on a loop ext4."""

import json
import os
import subprocess
import sys
import tarfile
import textwrap

import pytest
from fsmeter.macro import cache
from fsmeter.macro.tree_gen import TreeShape, shape_stats, write_archives
from repo_paths import ROOT

SMALL = TreeShape(files=300, dirs=30, seed=7)


def fsmeter(*args, env=None, timeout=300):
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "fsmeter", *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
    )


# -- the generator ------------------------------------------------------------------------------
def test_same_seed_same_archives_other_seed_other_archives(tmp_path):
    a = write_archives(SMALL, tmp_path / "a")
    b = write_archives(SMALL, tmp_path / "b")
    c = write_archives(TreeShape(files=300, dirs=30, seed=8), tmp_path / "c")
    assert a["archives"] == b["archives"]
    for ext in ("tar", "tar.gz", "tar.bz2"):
        assert a["archives"][ext]["sha256"] == cache.sha256_file(tmp_path / "a" / f"tree.{ext}")
        assert a["archives"][ext]["sha256"] != c["archives"][ext]["sha256"]


def test_archives_hold_the_tree_the_statistics_describe(tmp_path):
    out = write_archives(SMALL, tmp_path)
    st = out["stats"]
    assert st == shape_stats(SMALL)  # structure and content streams are separate: no content needed
    for ext in ("tar", "tar.gz", "tar.bz2"):
        with tarfile.open(tmp_path / f"tree.{ext}") as tf:
            members = tf.getmembers()
        files = [m for m in members if m.isfile()]
        dirs = [m for m in members if m.isdir()]
        assert len(files) == st["files"] == 300 and len(dirs) == st["dirs"] == 30
        assert sum(m.size for m in files) == st["bytes"]
        assert {m.name.split("/")[0] for m in members} == {"srctree"}
    # Text-like content compresses as source code does (bzip2 better than gzip, both several-fold).
    a = out["archives"]
    assert a["tar"]["bytes"] / a["tar.gz"]["bytes"] > 2.5
    assert a["tar.gz"]["bytes"] > a["tar.bz2"]["bytes"]


def test_default_shape_is_kernel_like():
    st = shape_stats(TreeShape())
    assert st["files"] == 30786 and st["dirs"] == 1657  # the Lourdas tree's counts
    assert 3 * 1024 <= st["size_median"] <= 6 * 1024  # small-file heavy...
    assert st["size_mean"] > 2 * st["size_median"]  # ...with a long tail
    assert st["size_p99"] > 20 * st["size_median"] and st["size_max"] <= 4 << 20
    assert 300e6 < st["bytes"] < 450e6  # linux-2.6.32 is about 380 MB
    assert 4 <= st["dir_depth_max"] <= 8 and 3 <= st["file_depth_mean"] <= 6
    assert 7 <= st["file_name_len_mean"] <= 14 and st["path_len_max"] < 200
    assert st["files_per_dir_max"] >= 100 and st["files_per_dir_median"] <= 20
    assert max(st["extensions"], key=st["extensions"].get) == ".c"


def test_the_generator_streams():
    # The walk yields one entry at a time: a tree of a million files starts without building it.
    from fsmeter.macro.tree_gen import walk

    it = walk(TreeShape(files=1_000_000, dirs=20_000))
    first = [next(it) for _ in range(5)]
    assert first[0] == ("dir", "srctree", 0)


# -- the cache ----------------------------------------------------------------------------------
def test_cache_reuses_a_verified_entry_and_remakes_a_corrupt_one(tmp_path):
    notes = []
    e1 = cache.ensure_tree(SMALL, tmp_path, notes.append)
    assert len(notes) == 1 and "generating" in notes[0]
    e2 = cache.ensure_tree(SMALL, tmp_path, notes.append)
    assert e2 == e1 and len(notes) == 1  # reused, not regenerated
    bz = os.path.join(e1["dir"], "tree.tar.bz2")
    with open(bz, "r+b") as f:  # flip one byte: same size, wrong checksum
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))
    cache._verified.clear()
    e3 = cache.ensure_tree(SMALL, tmp_path, notes.append)
    assert any("does not match its checksum" in n for n in notes)
    assert cache.sha256_file(bz) == e1["archives"]["tar.bz2"]["sha256"] == e3["archives"]["tar.bz2"]["sha256"]


def test_cp_file_is_seeded_and_verified(tmp_path):
    notes = []
    p = cache.ensure_cp_file(3, 1 << 20, tmp_path / "a", notes.append)
    q = cache.ensure_cp_file(3, 1 << 20, tmp_path / "b", notes.append)
    assert p.stat().st_size == 1 << 20 and cache.sha256_file(p) == cache.sha256_file(q)
    assert cache.sha256_file(cache.ensure_cp_file(4, 1 << 20, tmp_path / "a", notes.append)) != cache.sha256_file(p)
    p.write_bytes(b"\0" * (1 << 20))
    cache._verified.clear()
    cache.ensure_cp_file(3, 1 << 20, tmp_path / "a", notes.append)
    assert cache.sha256_file(p) == cache.sha256_file(q)


# -- fsmeter run on a directory -----------------------------------------------------------------
TINY = ["--set", "tree_files=200", "--set", "tree_dirs=20", "--set", "cp_size=2M"]


def test_run_on_a_directory_reports_the_studys_metrics(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    r = fsmeter(
        "run", "macro-quick", "--dir", work, "-q", "--json", out, "--set", f"source_cache={tmp_path / 'c'}", *TINY
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert list(doc["phases"]) == ["cp", "untar", "rm"]
    m = doc["metrics"]
    assert next(iter(m)) == "rm.total_real_s"
    for ph in ("cp", "untar", "rm"):
        x = doc["phases"][ph]["extra"]
        assert m[f"{ph}.real_s"]["value"] == x["real_s"] > 0
        assert {f"{ph}.user_s", f"{ph}.sys_s"} <= set(m)
        assert x["tool"]["exit_code"] == 0 and x["sync"]["argv"] == ["sync", "-f", str(work.resolve())]
    assert doc["phases"]["cp"]["extra"]["bytes"] == 2 << 20
    assert m["cp.MB_per_s"]["value"] == pytest.approx((2 << 20) / 1e6 / m["cp.real_s"]["value"])
    assert m["rm.total_real_s"]["value"] == pytest.approx(sum(m[f"{p}.real_s"]["value"] for p in ("cp", "untar", "rm")))
    assert doc["phases"]["untar"]["counters"]["files"] == 200
    assert doc["phases"]["untar"]["extra"]["tool"]["argv"][:2] == ["tar", "xjf"]
    assert "real s" in r.stdout and "untar" in r.stdout  # the study's table
    assert list(work.iterdir()) == []  # the copy and the tree are gone


@pytest.mark.parametrize(
    "setting, pattern",
    [
        ("source=/no/such/tree.tar.bz2", r"parameter source: /no/such/tree.tar.bz2 does not exist"),
        ("cp_source=/no/such/file", r"parameter cp_source: /no/such/file is not an existing file"),
        ("cp_tool=cp {src} {dest}", r"cp_tool: unknown placeholder \{dest\}"),
        (
            "cp_tool=cp --no-such-option {src} {dst}",
            r"parameter cp_tool: `cp --no-such-option .*` failed on a tiny test "
            r"input .*unrecognized option",
        ),
        ("untar_tool=tar xzf {archive} -C {dest}", r"parameter untar_tool: `tar xzf .*` failed on a tiny test input"),
        ("rm_tool=no-such-rm {tree}", r"parameter rm_tool: `no-such-rm` is not found on PATH"),
        ('phases=["rm"]', r"phases: rm removes the tree untar extracted"),
        ("archive=tar.zip", r"archive: Input should be"),
    ],
)
def test_bad_input_is_one_line_naming_it(tmp_path, setting, pattern):
    import re

    r = fsmeter(
        "run", "macro-quick", "--dir", tmp_path, "-q", "--set", setting, "--set", f"source_cache={tmp_path / 'c'}"
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error: ") and re.search(pattern, lines[0]), lines


def test_user_tarball_and_directory_as_source(tmp_path):
    src = tmp_path / "proj"
    (src / "sub").mkdir(parents=True)
    (src / "a.c").write_text("int a;\n" * 100)
    (src / "sub" / "b.h").write_text("int b;\n")
    tgz = tmp_path / "proj.tgz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(src, arcname="proj")
    for source, flag in ((tgz, "xzf"), (src, "xjf")):
        work = tmp_path / f"w-{flag}"
        work.mkdir()
        out = tmp_path / f"{flag}.json"
        r = fsmeter(
            "run",
            "macro-quick",
            "--dir",
            work,
            "-q",
            "--json",
            out,
            "--set",
            f"source={source}",
            "--set",
            'phases=["untar","rm"]',
            "--set",
            f"source_cache={tmp_path / 'c'}",
        )
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        u = doc["phases"]["untar"]
        assert u["extra"]["tool"]["argv"][1] == flag
        assert u["counters"]["files"] == 2 and u["counters"]["bytes"] == 707


def test_a_failing_tool_fails_its_trial_and_the_campaign_goes_on(tmp_path, scratch):
    work = tmp_path / "work"
    work.mkdir()
    # Passes the probe (a 4 KiB copy), fails on the real file.
    bad = (
        'sh -c \'if [ $(stat -c %s "$0") -ge 100000 ]; then echo disk-on-fire >&2; exit 5; fi; '
        'cp "$0" "$1"\' {src} {dst}'
    )
    params = f'tree_files = 100, tree_dirs = 10, cp_size = "1M", source_cache = "{tmp_path / "c"}"'
    bad_toml = json.dumps(bad)  # a JSON string is a TOML basic string
    f = tmp_path / "c.toml"
    f.write_text(
        textwrap.dedent(f"""\
        name = "m"
        [[workloads]]
        name = "macro-quick"
        label = "broken-cp"
        params = {{ {params}, cp_tool = {bad_toml} }}
        [[workloads]]
        name = "macro-quick"
        label = "fine"
        params = {{ {params} }}
        [repetitions]
        policy = "fixed"
        n = 1
        [target]
        kind = "dir"
        path = "{work}"
        """)
    )
    db = tmp_path / "r.sqlite"
    r = fsmeter("campaign", "run", f, "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    from fsmeter.store import open_store

    store = open_store(db)
    rows = store.conn.execute("SELECT workload, status, cause FROM cells ORDER BY idx").fetchall()
    assert rows[0][1] == "failed" and "exit status 5" in rows[0][2] and "disk-on-fire" in rows[0][2]
    assert rows[1][1] == "done"
    t = store.conn.execute("SELECT status, cause FROM trials ORDER BY id").fetchall()
    assert t[0][0] == "failed" and "disk-on-fire" in t[0][1] and t[1][0] == "ok"
    # The report draws the study's charts for the workload that ran (and lists the failure).
    html = tmp_path / "r.html"
    r = fsmeter("report", "--db", db, "-o", html)
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    for chart in ("macro-real", "macro-cp", "macro-untar", "macro-rm", "macro-cpmb"):
        assert f'-{chart}"' in page, chart
    assert "disk-on-fire" in page


# -- root: tmpfs too small, loop ext4 ---------------------------------------------------------------
def _mount(args, where):
    subprocess.run(["mount", *args, str(where)], check=True, capture_output=True)


@pytest.mark.root
def test_a_tree_that_does_not_fit_is_one_line_or_shrinks(tmp_path, scratch):
    mnt = tmp_path / "small"
    mnt.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=24m", "tmpfs"], mnt)
    try:
        r = fsmeter(
            "run", "macro-quick", "--dir", mnt, "-q", "--set", "fit=fail", "--set", f"source_cache={tmp_path / 'c'}"
        )
        assert r.returncode == 2
        assert r.stderr.strip().splitlines() == [r.stderr.strip()]
        assert "parameter source: the tree needs about" in r.stderr and "MB free" in r.stderr
        out = tmp_path / "o.json"
        r = fsmeter("run", "macro-quick", "--dir", mnt, "-q", "--json", out, "--set", f"source_cache={tmp_path / 'c'}")
        assert r.returncode == 0, r.stderr
        assert "the tree shrinks from 2,000 files" in r.stderr
        doc = json.loads(out.read_text())
        assert doc["phases"]["untar"]["counters"]["files"] < 2000
        assert any("shrinks" in w for w in doc["phases"]["cp"]["warnings"])
        assert "dev_write_sectors" not in doc["phases"]["cp"]["counters"]  # tmpfs: no block device
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.root
def test_macro_quick_on_a_loop_ext4(tmp_path, loop_disk):
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_disk], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount([loop_disk], mnt)
    try:
        out = tmp_path / "o.json"
        r = fsmeter(
            "run",
            "macro-quick",
            "--dir",
            mnt,
            "-q",
            "--json",
            out,
            "--set",
            f"source_cache={tmp_path / 'c'}",
            "--set",
            "source_read=cold",
        )
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        cp = doc["phases"]["cp"]
        # 300 MiB target: the copy is at most a quarter of it, 64 MiB as asked.
        assert cp["extra"]["bytes"] == 64 << 20
        # Everything copied reached the device, inside the timed window (sync included).
        assert cp["counters"]["dev_write_sectors"] * 512 >= 64 << 20
        assert doc["phases"]["untar"]["counters"]["dev_write_sectors"] > 0
        assert doc["metrics"]["cp.dev_write_MB"]["value"] >= (64 << 20) / 1e6
        assert cp["extra"]["source_cache"] == "cold"
        assert sorted(os.listdir(mnt)) == ["lost+found"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# -- verification -------------------------------------------------------------------------------
def test_verify_checks_the_copy_and_the_tree_outside_the_timing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    r = fsmeter(
        "run",
        "macro-quick",
        "--dir",
        work,
        "-q",
        "--json",
        out,
        "--set",
        f"source_cache={tmp_path / 'c'}",
        "--set",
        "verify=sha256",
        *TINY,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["corrupt"] is None and "verified:" in r.stdout
    cp = doc["phases"]["cp"]
    v = cp["extra"]["verify"]
    assert cp["counters"]["verify_mismatches"] == 0 and cp["counters"]["verify_blocks_checked"] == (2 << 20) // 4096
    assert v["algo"] == "sha256" and v["notes"]["source_checksum"] == v["notes"]["copy_checksum"]
    assert len(v["notes"]["source_checksum"]) == 64
    un = doc["phases"]["untar"]
    assert un["counters"]["verify_mismatches"] == 0 and un["counters"]["verify_blocks_checked"] == 200
    assert un["extra"]["verify"]["notes"]["command"][:3] == ["tar", "--compare", "-j"]
    assert "verify" not in doc["phases"]["rm"]["extra"]


def test_verify_catches_a_tool_that_damages_what_it_writes(tmp_path):
    """A cp that flips a byte and a tar that loses a file, behind the engine's back: both are found,
    the copy's at its exact offset, and the run is corrupt (exit 1), never ok."""
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    bad_cp = "sh -c 'cp {src} {dst} && printf Q | dd of={dst} bs=1 seek=70000 conv=notrunc status=none'"
    bad_tar = "sh -c 'tar xjf {archive} -C {dest} && rm -f \"$(find {dest} -type f | sort | head -n 1)\"'"
    r = fsmeter(
        "run",
        "macro-quick",
        "--dir",
        work,
        "-q",
        "--json",
        out,
        "--set",
        f"source_cache={tmp_path / 'c'}",
        "--set",
        "verify=crc32c",
        "--set",
        f"cp_tool={bad_cp}",
        "--set",
        f"untar_tool={bad_tar}",
        *TINY,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert "corrupt" in doc["corrupt"]
    m = doc["phases"]["cp"]["extra"]["verify"]["mismatches"]
    assert doc["phases"]["cp"]["counters"]["verify_mismatches"] == 1
    assert m[0]["first_diff_offset"] == 70000 and m[0]["offset"] == 70000 // 4096 * 4096
    assert m[0]["found_bytes"][(70000 - 70000 // 4096 * 4096 - m[0]["window_start"]) * 2 :][:2] == "51"  # "Q"
    u = doc["phases"]["untar"]["extra"]["verify"]["mismatches"]
    assert doc["phases"]["untar"]["counters"]["verify_mismatches"] == 1 and u[0]["kind"] == "missing"
    assert "corrupt" in r.stdout
