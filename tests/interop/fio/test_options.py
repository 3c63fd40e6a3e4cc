"""fio job files as users keep them: absolute directories (and --dir over them), sizes taken from existing
files, fio's built-in variables, number_ios, filename_format, rw=...:N, the options accepted with a note,
fio's bandwidth and IOPS logs, and errors that name the job file's line and option as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from fsmeter.errors import UserError
from fsmeter.interop.fio.job import map_job
from fsmeter.interop.fio.load import map_jobfile
from fsmeter.interop.fio.mapped import job_error
from fsmeter.interop.fio_jobfile import eval_int_arith, parse_jobfile
from fsmeter_cli import fsm

KEYWORDS = {"$pagesize": "4096", "$mb_memory": "2048", "$ncpus": "3"}


def jobs_of(text: str, target=None, dir_given=True):
    jf = parse_jobfile(text, "t.fio", {}, KEYWORDS)
    return [map_job("t.fio", j, i, target, dir_given) for i, j in enumerate(jf.jobs)]


def refused(text: str, pattern: str, **kw) -> str:
    with pytest.raises(UserError, match=pattern) as exc:
        jobs_of(text, **kw)
    assert "\n" not in exc.value.message
    return exc.value.message


# -- fio's built-in variables ----------------------------------------------------------------------------------
def test_builtin_variables_and_their_arithmetic():
    (m,) = jobs_of("[a]\nrw=read\nbs=$pagesize\nsize=5*1024*1024*$mb_memory/8 # 5/8 of the memory\nnumjobs=$ncpus\n")
    assert m.params["entries"][0]["size"] == 4096
    assert m.params["file_size"] == 5 * 1024 * 1024 * 2048 // 8  # bc: whole numbers
    assert m.settings["threads"] == 3


def test_bc_arithmetic_is_whole_numbers_with_precedence():
    assert eval_int_arith("7*1024*1024*3/8") == 7 * 1024 * 1024 * 3 // 8
    assert eval_int_arith("(1+2)*3") == 9 and eval_int_arith("7/2") == 3 and eval_int_arith("-7/2") == -3
    for bad in ("1+", "(1+2", "2**3x", "1/0"):
        with pytest.raises(ValueError):
            eval_int_arith(bad)


def test_a_bad_variable_expression_names_the_line_as_written():
    with pytest.raises(UserError, match=r"^t.fio line 3: size=\$pagesize\+\+: .*write the value as a number"):
        parse_jobfile("[a]\nrw=read\nsize=$pagesize++\n", "t.fio", {}, KEYWORDS)


def test_the_variables_are_this_machines():
    jf = parse_jobfile("[a]\nbs=$pagesize\nnumjobs=$ncpus\n", "t.fio", {})
    assert int(jf.jobs[0].get("bs").value) == os.sysconf("SC_PAGESIZE")
    assert int(jf.jobs[0].get("numjobs").value) == os.sysconf("SC_NPROCESSORS_CONF")


# -- directories ---------------------------------------------------------------------------------------------
def test_an_absolute_directory_is_the_jobs_target_without_dir(tmp_path):
    (m,) = jobs_of(f"[global]\ndirectory={tmp_path}\n[w]\nrw=write\nsize=1m\n", dir_given=False)
    assert m.dir == tmp_path and m.params["file_names"] == ["w.0.0"]
    assert not any("--dir" in n for n in m.notes)


def test_dir_replaces_the_absolute_directory_with_a_note(tmp_path):
    (m,) = jobs_of(f"[global]\ndirectory={tmp_path}/data\n[w]\nrw=write\nsize=1m\n")
    assert m.dir is None and m.params["file_names"] == ["w.0.0"]
    assert any(f"--dir replaces the job file's directory={tmp_path}/data (line 2)" in n for n in m.notes)


def test_absolute_filenames_keep_their_layout_under_one_directory(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (m,) = jobs_of(f"[r]\nrw=write\nsize=1m\nfilename={tmp_path}/a/f1:{tmp_path}/b/f2\n", dir_given=False)
    assert m.dir == tmp_path and m.params["file_names"] == ["a/f1", "b/f2"]


def test_an_escaped_colon_stays_in_an_absolute_name_and_dir_takes_the_names_over(tmp_path):
    (m,) = jobs_of(f"[r]\nrw=write\nsize=1m\nfilename={tmp_path}/disk\\:0\n", dir_given=False)
    assert m.dir == tmp_path and m.params["file_names"] == ["disk:0"]
    (m,) = jobs_of(f"[r]\nrw=write\nsize=1m\nfilename={tmp_path}/disk\\:0\n")
    assert m.dir is None and m.params["file_names"] == ["disk:0"]
    assert any(n.startswith(f"--dir replaces the job file's filename={tmp_path}/disk\\:0 (line 4)") for n in m.notes)


@pytest.mark.parametrize(
    "text,pattern",
    [
        (
            "[a]\nrw=read\nsize=1m\ndirectory=/proc/fsmeter\n",
            r"^t.fio line 4: directory=/proc/fsmeter: /proc/fsmeter "
            r"is a kernel interface \(proc\), not a filesystem to measure",
        ),
        (
            "[a]\nrw=read\nsize=1m\nfilename=/dev/null\n",
            r"^t.fio line 4: filename=/dev/null: /dev/null is a device: "
            r"fsmeter measures filesystems",
        ),
        (
            "[a]\nrw=read\nsize=1m\ndirectory=/nonexistent-fsmeter-dir\n",
            r"^t.fio line 4: "
            r"directory=/nonexistent-fsmeter-dir: /nonexistent-fsmeter-dir is not an existing directory: create it",
        ),
        ("[a]\nrw=read\nsize=1m\n", r"^t.fio line 1: job a: its files are relative .* give --dir D"),
    ],
)
def test_a_target_fsmeter_would_refuse_for_dir_is_refused_by_line(text, pattern):
    refused(text, pattern, dir_given=False)


def test_cli_runs_in_the_job_files_directory_and_dir_overrides_it(tmp_path):
    target, other = tmp_path / "target", tmp_path / "other"
    target.mkdir()
    other.mkdir()
    job = tmp_path / "w.fio"
    job.write_text(f"[global]\ndirectory={target}\n[w]\nrw=write\nbs=64k\nsize=1m\n")
    r = fsm("run", job, "-q", "--json", tmp_path / "a.json", "--cache", "keep", "--keep-files")
    assert r.returncode == 0, r.stderr
    assert (target / "w.0.0").stat().st_size == 1 << 20
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["phases"]["w:run"]["ops"]["write"]["bytes"] == 1 << 20
    r = fsm("run", job, "--dir", other, "-q", "--cache", "keep", "--keep-files")
    assert r.returncode == 0, r.stderr
    assert (other / "w.0.0").exists() and "--dir replaces the job file's directory=" in r.stdout


def test_cli_refuses_a_pseudo_filesystem_directory_in_one_line(tmp_path):
    job = tmp_path / "p.fio"
    job.write_text("[a]\nrw=read\nsize=1m\ndirectory=/sys/kernel\n")
    r = fsm("run", job, "-q")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "line 4: directory=/sys/kernel: /sys/kernel is a kernel interface" in r.stderr


# -- sizes from the files ----------------------------------------------------------------------------------------
def test_size_comes_from_the_existing_file(tmp_path):
    (tmp_path / "dev0").write_bytes(b"\0" * (3 << 20))
    (m,) = jobs_of(f"[a]\nrw=randread\nbs=4k\nfilename={tmp_path}/dev0\n", dir_given=False)
    assert m.params["file_size"] == 3 << 20 and m.params["total_bytes"] == 3 << 20 and m.keep_files
    (m,) = jobs_of(f"[a]\nrw=read\nbs=4k\nfilename={tmp_path}/dev0\nsize=50%\n", dir_given=False)
    # The file keeps its length (fio does not truncate it): the region's bytes are the limit.
    assert m.params["file_size"] == 3 << 20 and m.params["total_bytes"] == 3 << 19
    (m,) = jobs_of(f"[a]\nrw=read\nbs=4k\nfilename={tmp_path}/dev0\noffset=1m\n", dir_given=False)
    assert m.params["file_size"] == 2 << 20 and m.params["offset"] == 1 << 20 and m.params["total_bytes"] == 2 << 20


def test_size_under_dir_comes_from_the_file_there(tmp_path):
    (tmp_path / "data").write_bytes(b"\0" * (1 << 20))
    (m,) = jobs_of("[a]\nrw=read\nfilename=data\n", target=tmp_path)
    assert m.params["total_bytes"] == 1 << 20


def test_no_size_and_no_file_or_a_percentage_of_nothing_is_refused(tmp_path):
    refused(
        "[a]\nrw=read\nfilename=nothing-here\n", r"line 1: job a: give size= .*files do not exist yet", target=tmp_path
    )
    refused(
        "[a]\nrw=read\nfilename=nothing-here\nsize=30%\n",
        r"line 4: size=30%: a percentage of the files' size "
        r"needs files that exist",
        target=tmp_path,
    )


def test_cli_leaves_a_file_that_was_there_in_place(tmp_path):
    data = tmp_path / "disk.img"
    data.write_bytes(os.urandom(1 << 20))
    job = tmp_path / "d.fio"
    job.write_text(f"[r]\nrw=read\nbs=4k\nfilename={data}\n")
    r = fsm("run", job, "-q", "--json", tmp_path / "d.json", "--cache", "keep")
    assert r.returncode == 0, r.stderr
    assert data.stat().st_size == 1 << 20
    ops = json.loads((tmp_path / "d.json").read_text())["phases"]["r:run"]["ops"]["read"]
    assert (ops["bytes"], ops["count"]) == (1 << 20, 256)


# -- options -------------------------------------------------------------------------------------------------------
def test_number_ios_stops_each_clone_after_that_many_requests():
    (m,) = jobs_of("[a]\nrw=randread\nbs=4k\nsize=1m\nnumber_ios=10\nnumjobs=2\n")
    assert m.params["total_bytes"] == 2 * 10 * 4096
    (m,) = jobs_of("[a]\nrw=read\nbs=4k\nsize=16k\nnumber_ios=10\n")  # the region ends first
    assert m.params["total_bytes"] == 16384
    (m,) = jobs_of("[a]\nrw=randread\nbssplit=4k/50:8k/50\nsize=1m\nnumber_ios=10\n")
    assert m.params["max_ios"] == 10  # drawn sizes: each thread counts its requests


def test_filename_format_names_the_files_as_fio_does():
    (m,) = jobs_of("[j]\nrw=write\nsize=1m\nnumjobs=2\nnrfiles=2\nfilename_format=d/$jobname-$jobnum.$filenum\n")
    assert m.params["file_names"] == ["d/j-0.0", "d/j-0.1", "d/j-1.0", "d/j-1.1"] and m.params["thread_files"]
    (m,) = jobs_of("[j]\nrw=read\nsize=1m\nnumjobs=2\nnrfiles=2\nfilename_format=shared.$filenum\n")
    assert m.params["file_names"] == ["shared.0", "shared.1"] and not m.params["thread_files"]
    refused(
        "[j]\nrw=read\nsize=1m\nfilename_format=f.$clientuid\n",
        r"line 4: filename_format=f.\$clientuid: "
        r"\$clientuid names fio's client/server mode",
    )


def test_an_offset_modifier_maps_or_is_refused_naming_it():
    (m,) = jobs_of("[a]\nrw=read:0\nsize=1m\n")
    assert m.fio_rw == "read" and "seq_add" not in m.params
    (m,) = jobs_of("[a]\nrw=randread:1\nsize=1m\n")
    assert m.params["entries"][0]["random_pct"] == 100
    (m,) = jobs_of("[a]\nsize=1m\nrw=read:-8k\n")
    assert m.params["seq_add"] == -8192
    (m,) = jobs_of("[a]\nsize=1m\nrw=write:112k\nbs=16k\n")
    assert m.params["seq_add"] == 112 << 10
    msg = refused(
        "[a]\nsize=1m\nrw=randread:8\n",
        r"^t.fio line 3: rw=randread:8: the modifier ':8' \(a new random "
        r"offset every N I/Os",
    )
    assert "write rw=randread" in msg
    refused("[a]\nsize=1m\nrw=rw:4k\n", r"line 3: rw=rw:4k: the offset modifier ':4k' on a mix of directions")


def test_loops_timeout_and_a_bsrange_of_one_size():
    (m,) = jobs_of("[a]\nrw=randrw\nbs=4k\nsize=256k\nnorandommap\nloops=3\n")
    assert m.params["total_bytes"] == 3 * (256 << 10)  # fio runs the whole job again, loops times
    (m,) = jobs_of("[a]\nrw=write\nsize=1m\nbsrange=8k-8k\ntimeout=60\ntime_based\n")
    assert m.params["entries"][0]["size"] == 8192 and m.params["duration_s"] == 60
    (m,) = jobs_of("[a]\nrw=write\nsize=1m\nbsrange=4k-16k\n")
    assert [(e["size"], e["weight"]) for e in m.params["entries"]] == [(s << 10, 25.0) for s in (4, 8, 12, 16)]


@pytest.mark.parametrize(
    "option,said",
    [
        ("thread", "always runs a job's clones as threads"),
        ("threads=1", "always runs a job's clones as threads"),
        ("create_on_open=1", "lays its files out in the prepare phase"),
        ("io_submit_mode=offload", "inline"),
        ("disable_slat=1", "from issue to completion"),
        ("new_group", "reports every job on its own"),
        ("clat_percentiles=1", "its own latency percentiles"),
        ("percentile_list=50:99", "its own latency percentiles"),
        ("invalidate=0", "as --cache says"),
    ],
)
def test_options_that_change_nothing_measured_are_accepted_with_a_note(option, said):
    (m,) = jobs_of(f"[a]\nrw=read\nsize=1m\n{option}\n")
    assert any(n.startswith(f"{option}: ") and said in n for n in m.notes), m.notes


def test_gtod_reduce_leaves_requests_untimed_unless_the_job_reads_their_latency():
    (m,) = jobs_of("[a]\nrw=read\nsize=1m\ngtod_reduce=1\n")
    assert m.params["latency"] is False and not m.notes
    for extra, what in (
        ("write_lat_log=a\n", "write_lat_log"),
        ("ioengine=io_uring\niodepth=8\nlatency_target=10ms\nlatency_window=1s\n", "latency_target"),
        ("runtime=10\ntime_based\nss=lat:1%\nss_dur=4\n", "steadystate"),
    ):
        (m,) = jobs_of(f"[a]\nrw=randread\nsize=1m\ngtod_reduce=1\n{extra}")
        assert "latency" not in m.params, extra
        assert any(n.startswith("gtod_reduce=1: ") and what in n for n in m.notes), m.notes
    refused("[a]\nrw=read\nsize=1m\ngtod_reduce=maybe\n", r"line 4: gtod_reduce=maybe: ")


def test_their_defaults_say_nothing_and_bad_values_are_refused():
    (m,) = jobs_of("[a]\nrw=read\nsize=1m\nio_submit_mode=inline\ngtod_reduce=0\n")
    assert not m.notes
    refused(
        "[a]\nrw=read\nsize=1m\nio_submit_mode=sideways\n",
        r"line 4: io_submit_mode=sideways: use one of "
        "inline, offload",
    )


def test_a_latency_histogram_log_is_refused_with_the_reason():
    refused(
        "[a]\nrw=read\nsize=1m\nwrite_hist_log=lat\n",
        r"line 4: option write_hist_log is not supported by "
        r"fsmeter yet \(planned\) \(the engine keeps no latency histogram per sample interval",
    )


def test_logs_are_named_as_fio_names_them(tmp_path):
    f = tmp_path / "l.fio"
    f.write_text(
        "[global]\nsize=1m\nwrite_bw_log=x\n[a]\nrw=read\nnumjobs=2\n[b]\nstonewall\nrw=write\n"
        "write_iops_log\nper_job_logs=0\n"
    )
    a, b = map_jobfile(f)
    assert a.logs == [("bw", "x_bw.1.log")]
    assert b.logs == [("bw", "x_bw.log"), ("iops", "b_iops.log")]


def test_bw_and_iops_logs_in_fios_format(tmp_path):
    job = tmp_path / "logs.fio"
    job.write_text(
        "[w]\nrw=write\nbs=4k\nsize=4m\ntime_based\nruntime=1\nwrite_bw_log=run\nwrite_iops_log=run\nlog_avg_msec=200\n"
    )
    r = fsm("run", job, "--dir", tmp_path, "-q", "--json", tmp_path / "l.json", "--cache", "keep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "l.json").read_text())["phases"]["w:run"]
    rows = {
        k: [ln.split(", ") for ln in (tmp_path / f"run_{k}.1.log").read_text().splitlines()] for k in ("bw", "iops")
    }
    # One line per 200 ms sample that did I/O (a busy machine may end the phase with a sliver that did none).
    busy = [iv for iv in rep["intervals"] if iv["ops"]]
    assert len(rows["iops"]) == len(busy) >= 3
    for k in rows:
        times = [int(x[0]) for x in rows[k]]
        assert times == sorted(times) and all(len(x) == 5 and x[2:] == ["1", "0", "0"] for x in rows[k])
    # IOPS x interval adds up to the phase's writes (each line rounded to a whole I/O per second).
    done = sum(int(x[1]) * iv["dur_s"] for x, iv in zip(rows["iops"], busy))
    assert done == pytest.approx(rep["ops"]["write"]["count"], abs=len(rows["iops"]))
    # KiB/s = IOPS x 4 KiB requests (each rounded on its own).
    assert all(abs(int(b[1]) - int(i[1]) * 4) <= 4 for b, i in zip(rows["bw"], rows["iops"]))
    # fio writes the same job's logs in the same shape: 5 columns, the same direction, block size and last column,
    # one line per 200 ms window ending near each multiple of 200 ms (how many windows of the last part of a
    # second each writes depends on when the job ends: not compared).
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (Debian package fio)")
    fio_dir = tmp_path / "fio"
    fio_dir.mkdir()
    r = subprocess.run(["fio", str(job)], cwd=fio_dir, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for k in rows:
        theirs = [ln.split(", ") for ln in (fio_dir / f"run_{k}.1.log").read_text().splitlines()]
        assert {len(x) for x in theirs} == {5} and {tuple(x[2:]) for x in theirs} == {tuple(x[2:]) for x in rows[k]}
        assert len(theirs) >= 3 and all(abs(int(a[0]) - int(b[0])) < 100 for a, b in zip(theirs, rows[k]))


# -- errors in the job file's words ----------------------------------------------------------------------------------
def test_a_parameter_error_names_the_jobs_option_and_advice_a_job_file_can_follow():
    (m,) = jobs_of("[iometer]\nbssplit=512/10:4k/90\nrw=randrw\ndirect=1\nsize=4m\n")
    msg = job_error(
        "t.fio",
        m,
        "parameter entries[0].size: 512 bytes: O_DIRECT on this filesystem is direct only "
        "for request sizes in multiples of 4096 bytes (statx); smaller or unaligned requests may be "
        "served through the page cache: use multiples of 4096 (the *-4k workloads), direct=false, or "
        "allow_unaligned_direct=true to measure them anyway",
    )
    assert msg.startswith("t.fio line 2: bssplit=512/10:4k/90: 512 bytes: O_DIRECT")
    assert "entries" not in msg and "allow_unaligned_direct" not in msg and "*-4k" not in msg
    assert msg.endswith("make the sizes multiples of 4096 bytes, or set direct=0")


def test_a_planning_error_names_the_line(tmp_path):
    from fsmeter.interop.fio_run import plan_jobfile

    f = tmp_path / "o.fio"
    f.write_text("[a]\nrw=read\nsize=1m\nbs=1000\ndirect=1\n")
    with pytest.raises(UserError) as exc:
        plan_jobfile(str(f), tmp_path, {})
    assert re.match(rf"{re.escape(str(f))} line 4: bs=1000: ", exc.value.message), exc.value.message
    assert "entries" not in exc.value.message and "direct=0" in exc.value.message


def test_an_unset_variable_is_named_after_the_engine_and_unknown_options():
    refused("[a]\nsize=1m\nrw=${NOPE}\n", r"^t.fio line 3: \$\{NOPE\} is not set in the environment: export it")
    refused(
        "[a]\nhttp_s3_key=${S3_KEY}\nioengine=http\n",
        r"^t.fio line 3: ioengine=http: ioengine http is not "
        r"supported: a network, object-store",
    )


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("[a]\nsize=1m\nioengine=rdma\n", r"line 3: ioengine=rdma: ioengine rdma is not supported: a network"),
        ("[a]\nport=8765\nioengine=net\n", r"line 3: ioengine=net: ioengine net is not supported: a network"),
        (
            "[a]\nsize=1m\nioengine=libhdfs\n",
            r"line 3: ioengine=libhdfs: ioengine libhdfs is not supported: a "
            "network",
        ),
        ("[a]\ncmd_type=nvme\nioengine=io_uring_cmd\n", r"line 3: ioengine=io_uring_cmd: .*NVMe or SCSI pass-through"),
        ("[a]\nsize=1m\nioengine=libcufile\n", r"line 3: ioengine=libcufile: .*GPU I/O"),
        ("[a]\nsize=1m\nioengine=page_fault\n", r"line 3: ioengine=page_fault: ioengine page_fault is not supported"),
        (
            "[a]\nsize=1m\nzonemode=zbd\n",
            r"line 3: zonemode=zbd: zoned block devices are not supported .*not zoned "
            "devices",
        ),
        ("[a]\nsize=1m\nmem=cudamalloc\n", r"line 3: mem=cudamalloc: GPU memory"),
    ],
)
def test_what_is_not_a_local_filesystems_work_stays_refused_by_name(text, pattern):
    refused(text, pattern)
