"""How a campaign runs one trial under MPI: `mpirun -n RANKS fsmeter run WORKLOAD --dir TRIAL ...`
(the [mpi] section says how to call mpirun), then the merged result is read back from --json.

The campaign process keeps its host's run lock (the ranks on that host are told so through the
environment and take no lock of their own; those on other hosts take their host's), provisions the filesystem and records the trial;
the ranks only measure. On a cluster the trial directory must be on the shared filesystem, at
the same path on every host.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from fsmeter.errors import UserError
from fsmeter.mpi.comm import INSTALL_HINT
from fsmeter.mpi.run import LOCK_HELD_ENV

#: Ranks launched on this machine at most (without a hostfile, or on namespace hosts, which share its CPUs):
#: this many per CPU it may use (more measure the scheduler, not the storage), and never more than
#: MAX_LOCAL_RANKS (each rank is a Python process of its own).
RANKS_PER_CPU = 8
MAX_LOCAL_RANKS = 1024


def local_ranks_limit() -> int:
    return min(MAX_LOCAL_RANKS, RANKS_PER_CPU * len(os.sched_getaffinity(0)))


def local_ranks_problem(ranks: int) -> str | None:
    """Why ``ranks`` ranks cannot be launched on this machine, or None (1000000 oversubscribed ranks spun
    for ever instead of measuring anything)."""
    most = local_ranks_limit()
    if ranks > most:
        cpus = len(os.sched_getaffinity(0))
        return (
            f"{ranks} ranks on this machine: at most {most} ({RANKS_PER_CPU} per CPU it may use, {cpus} here, "
            f"and at most {MAX_LOCAL_RANKS}): give fewer, or run them on several hosts (an mpirun hostfile)"
        )
    return None


def _set_value(v) -> str:
    """An override as `fsmeter run --set` reads it back (spec.parse_set)."""
    if v is None:
        return "none"
    if isinstance(v, str):
        return v
    return json.dumps(v)


def mpirun_command(
    mpi, ranks: int, workload: str, trial_dir: Path, overrides: dict, json_out: Path, cache: str, min_phase_s: float
) -> list:
    """The full mpirun command line of one trial."""
    launcher = shutil.which(mpi.mpirun)
    if launcher is None:
        raise UserError(f"mpi.mpirun: {mpi.mpirun!r} not found: {INSTALL_HINT}", exit_code=1)
    cmd = [launcher, "-n", str(ranks)]
    oversubscribe = mpi.oversubscribe if mpi.oversubscribe is not None else mpi.hostfile is None
    if oversubscribe:
        cmd.append("--oversubscribe")
    if mpi.hostfile:
        cmd += ["--hostfile", mpi.hostfile]
    cmd += list(mpi.extra_args)
    cmd += [
        sys.executable,
        "-m",
        "fsmeter",
        "run",
        workload,
        "--dir",
        str(trial_dir),
        "--json",
        str(json_out),
        "--quiet",
        "--cache",
        cache,
        "--min-phase-s",
        repr(float(min_phase_s)),
        "--mpi-timeout-s",
        repr(float(mpi.timeout_s)),
    ]
    if mpi.stonewall:
        cmd += ["--stonewall", str(mpi.stonewall)]
    if mpi.stonewall_wearout:
        cmd.append("--stonewall-wearout")
    if mpi.shared_file:
        cmd.append("--shared-file")
    if mpi.reorder_shift is not None:
        cmd += ["--reorder-shift", str(mpi.reorder_shift)]
    for k, v in overrides.items():
        cmd += ["--set", f"{k}={_set_value(v)}"]
    return cmd


def run_mpi_trial(cell, job, trial_dir: Path, mpi, min_phase_s: float, launch=None) -> dict:
    """One trial as mpirun; returns {status, cause, doc, command}. Never raises for a failed run."""
    if mpi.hostfile and not Path(mpi.hostfile).is_file():
        raise UserError(f"mpi.hostfile: {mpi.hostfile} does not exist: name the hostfile mpirun should read")
    src = cell.definition.source
    workload = str(src) if src is not None else cell.definition.name
    cache = "drop" if os.geteuid() == 0 else "fadvise"
    with tempfile.TemporaryDirectory(prefix="fsmeter-mpi-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = mpirun_command(mpi, cell.ranks, workload, trial_dir, cell.overrides, out, cache, min_phase_s)
        if launch is not None:  # a target whose hosts mpirun must run on (glusterfs on namespace hosts)
            cmd = launch(cmd)
        env = dict(os.environ)
        env[LOCK_HELD_ENV] = socket.gethostname()  # the ranks of this host share the campaign's lock
        if os.geteuid() == 0:  # Open MPI refuses root unless told twice
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        doc = json.loads(out.read_text()) if out.is_file() else None
    if proc.returncode != 0 or doc is None:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("fsmeter: error:")]
        tail = lines[0] if lines else " | ".join(proc.stderr.strip().splitlines()[-3:])
        cause = f"mpirun -n {cell.ranks} exited with {proc.returncode}: {tail.removeprefix('fsmeter: error: ')}"
        return {
            "status": "interrupted" if proc.returncode in (130, 143, 129, -2, -15, -1) else "failed",
            "cause": cause,
            "doc": doc,
            "command": cmd,
        }
    return {"status": "ok", "cause": None, "doc": doc, "command": cmd}


def environment(doc: dict | None, cmd: list, ranks: int) -> dict:
    """What the environment row's extra JSON records about the MPI launch: hosts and rank layout."""
    m = (doc or {}).get("mpi") or {}
    return {
        "ranks": ranks,
        "hosts": m.get("hosts"),
        "layout": m.get("layout"),
        "command": cmd,
        "stonewall": m.get("stonewall"),
        "timeout_s": m.get("timeout_s"),
        "seeds": m.get("seeds"),
        "files": m.get("files"),
        "mounts": m.get("mounts"),
        "mounts_note": m.get("mounts_note"),
    }


def trial_phases(cell, job, trial_dir: Path, campaign, launch=None) -> tuple:
    """The runner's view of one MPI trial: (status, cause, phases, cache methods, environment extra)."""
    from fsmeter.campaign import MpiModel
    from fsmeter.stats.phase import report_quality

    mpi = campaign.mpi or MpiModel()
    res = run_mpi_trial(cell, job, trial_dir, mpi, campaign.min_phase_s, launch=launch)
    doc = res["doc"] or {}
    phases, methods = [], []
    for ph in job.phases():
        report = (doc.get("phases") or {}).get(ph.key)
        if report is None:
            continue
        method = report.get("cache_reset") if ph.cold_cache else None
        if method:
            methods.append(method)
        if ph.measured and not ph.discard and not report.get("interrupted"):
            report["quality"] = report_quality(
                report,
                level=campaign.repetitions.level,
                min_phase_s=campaign.min_phase_s,
                interval_s=job.settings.interval_s,
            ).to_dict()
        phases.append(
            {
                "key": ph.key,
                "engine_phase": ph.name,
                "measured": ph.measured,
                "discarded": ph.discard,
                "cache_method": method,
                "report": report,
            }
        )
    status, cause = res["status"], res["cause"]
    if status == "ok" and doc.get("interrupted"):
        status, cause = "interrupted", "interrupted (a rank was stopped)"
    return status, cause, phases, methods, environment(res["doc"], res["command"], cell.ranks)


__all__ = ["environment", "mpirun_command", "run_mpi_trial", "trial_phases"]
