"""Run a job's phases: the one loop behind `fsmeter run`, fio job files, campaign trials and MPI ranks.

    run = PhaseRun(EngineSession(job.engine_json()))
    run_phases(run, job.phases(), progress=bar_progress(bar), reset_cache=lambda ph: reset_cache("auto", job.dir),
               device=own_device(job.dir), quality=judge(interval_s=job.settings.interval_s))
    for out in run.phases:    # PhaseOutcome(phase, report, cache_method), in run order
        ...
    run.interrupted           # a phase came back interrupted, or a stop signal arrived

Each phase of the plan, in order:

1. before a cold-cache phase, ``reset_cache(phase)`` empties the page cache and returns how (recorded);
2. ``steps.before(run, phase)`` (an MPI rank meets the others at a barrier there);
3. the engine runs the phase (``steps.run``, by default ``run.session.run_phase``) under a progress
   bar (``progress(phase)``) and between two snapshots of the machine's regime (fsmeter.regime:
   others' CPU share, page-cache share of the reads), recorded as ``report["regime"]``;
4. ``steps.after(run, phase, report)`` returns the report to keep (an MPI rank: the ranks' merged
   report on rank 0, None on the others);
5. with ``annotate``, the report records ``cache_reset`` and ``measured``; a measured phase's
   report gets its ``quality`` (``quality(report)``, see `judge`);
6. the loop stops after a phase that came back interrupted (``steps.go_on``).

Then the engine's ``cleanup`` phase removes the workload's files, as ``cleanup`` says: "always"
(also when an error or a stop signal ends the loop), "unless-raised" (when the loop ends without
an exception, interrupted or not), "if-complete" (only when every phase ran to its end) or
"never" (--keep-files). Errors and stop signals (KeyboardInterrupt, fsmeter.interrupt) propagate
to the caller after that; what was measured before stays in ``run.phases``, and a stop signal
sets ``run.interrupted``.

Differences between callers are parameters (progress, cache reset, device, quality, cleanup) or
the few methods of `PhaseSteps`; a new way of running a phase (several job specs at once, another
launcher) overrides `PhaseSteps.run` rather than copying this loop.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import fsmeter
from fsmeter.engine import EngineSession
from fsmeter.hostinfo import host_info
from fsmeter.progress import PhaseProgress, progress_bar
from fsmeter.regime import PhaseWatch, own_device

#: Phases shorter than this are flagged too short to trust (fsmeter.stats.batch.DEFAULT_MIN_PHASE_S;
#: not imported from there so that starting `fsmeter run` does not load numpy, scipy and pandas).
DEFAULT_MIN_PHASE_S = 60.0

#: Version of the JSON written by `fsmeter run --json` (docs: the result JSON).
RUN_JSON_VERSION = 1

CACHE_CHOICES = ("auto", "drop", "fadvise", "keep")
CLEANUP_CHOICES = ("always", "unless-raised", "if-complete", "never")


def reset_cache(method: str, directory: Path) -> str:
    """Empty the page cache before a cold-cache phase on a directory fsmeter does not own.

    auto: drop_caches as root, else fadvise; drop: /proc/sys/vm/drop_caches (root);
    fadvise: posix_fadvise(DONTNEED) on every file under the directory; keep: nothing.
    Returns the method used, recorded with the phase.
    """
    from fsmeter.provision.host.caches import drop_caches, fadvise_dontneed

    if method == "keep":
        return "none"
    if method == "auto":
        method = "drop" if os.geteuid() == 0 else "fadvise"
    if method == "drop":
        drop_caches()
        return "drop_caches"
    fadvise_dontneed([str(directory)])
    return "fadvise"


def judge(
    level: float = 0.95,
    min_phase_s: float = DEFAULT_MIN_PHASE_S,
    interval_s: float | None = None,
    interrupted: bool = False,
) -> Callable[[dict], dict | None]:
    """The quality judgement of a measured phase's report (fsmeter.stats.phase.report_quality: too
    short, batch-means CI, steady state), as a dict; ``interrupted``: judge an interrupted phase's
    report too (a campaign stores it with the trial), else it gets none."""

    def quality(report: dict) -> dict | None:
        if report.get("interrupted") and not interrupted:
            return None
        from fsmeter.stats.phase import report_quality  # lazily: numpy only for phases that need it

        return report_quality(report, level=level, min_phase_s=min_phase_s, interval_s=interval_s).to_dict()

    return quality


@contextmanager
def _bar_phase(bar, label: str, remove: bool) -> Iterator[PhaseProgress]:
    prog = PhaseProgress(bar, label)
    if remove:
        try:
            yield prog
        finally:
            bar.remove_task(prog._task)
    else:
        yield prog
        prog.done()


def bar_progress(
    bar, label: Callable = lambda ph: ph.key, remove: bool = False
) -> Callable[[object], AbstractContextManager[PhaseProgress]]:
    """Progress of each phase as a task of ``bar`` (a rich Progress), named ``label(phase)``: marked
    done when the phase returns, or (``remove``) taken off the bar however the phase ends."""
    return lambda ph: _bar_phase(bar, label(ph), remove)


class PlannedPhase(Protocol):
    """A plan's entry as the loop reads it: fsmeter.families.Phase, a level above this module."""

    @property
    def name(self) -> str: ...
    @property
    def measured(self) -> bool: ...
    @property
    def cold_cache(self) -> bool: ...
    @property
    def discard(self) -> bool: ...
    @property
    def key(self) -> str: ...


@dataclass
class PhaseOutcome:
    #: The plan's entry (fsmeter.families.Phase): key, engine phase name, measured, discard, cold_cache.
    phase: PlannedPhase
    #: The phase report kept (None on an MPI rank other than 0).
    report: dict | None
    #: How the cache was reset before the phase; None when it is not a cold-cache phase.
    cache_method: str | None = None


@dataclass
class PhaseRun:
    """One job's engine session and what its phases gave so far (kept when an error ends the run)."""

    session: EngineSession
    phases: list[PhaseOutcome] = field(default_factory=list)
    #: A phase came back interrupted, or a stop signal ended the loop.
    interrupted: bool = False
    #: The engine's cleanup phase ran.
    cleaned: bool = False
    #: What the cleanup phase said (its counters and warnings: a kept ledger's place), once it ran.
    cleanup_report: dict | None = None
    #: How the cache was reset, each time, in order (also before a phase that then failed).
    resets: list[str] = field(default_factory=list)

    def reports(self) -> dict:
        """Phase key -> report, for the phases whose report was kept."""
        return {o.phase.key: o.report for o in self.phases if o.report is not None}


class PhaseSteps:
    """What a caller may change around each phase; the defaults are a single process's run."""

    def before(self, run: PhaseRun, phase) -> None:
        """Right before the phase (after its cache reset)."""

    def run(self, run: PhaseRun, phase, on_progress: Callable[[dict], None]) -> dict:
        """The engine's run of the phase; returns its report."""
        return run.session.run_phase(phase.name, on_progress=on_progress)

    def after(self, run: PhaseRun, phase, report: dict) -> dict | None:
        """The report to keep for the phase (its regime recorded); None keeps none."""
        return report

    def go_on(self, run: PhaseRun, phase, report: dict | None) -> bool:
        """Whether the next phase runs."""
        return not (report or {}).get("interrupted")

    def cleanup(self, run: PhaseRun) -> dict | None:
        """The engine's cleanup phase: the workload's files are removed; returns its report."""
        return run.session.run_phase("cleanup")


def run_phases(
    run: PhaseRun,
    plan: Sequence,
    progress: Callable[[object], AbstractContextManager[Callable]],
    *,
    reset_cache: Callable[[object], str] | None = None,
    device: str | None = None,
    own_pids: Sequence[int] | None = None,
    disk=None,
    quality: Callable[[dict], dict | None] | None = None,
    annotate: bool = False,
    cleanup: str = "always",
    steps: PhaseSteps | None = None,
) -> PhaseRun:
    """Run every phase of ``plan`` (the job's fsmeter.families.Phase list) in ``run.session``, as
    the module's docstring says; returns ``run``, its ``phases`` filled in.

    ``progress(phase)``: a context manager giving the engine's progress callback (`bar_progress`).
    ``reset_cache(phase)``: before a cold-cache phase; returns the method used (None: no reset, "none").
    ``device``: the block device whose read counters stand for the job's reads (fsmeter.regime);
    ``own_pids``: processes whose CPU counts as the run's own besides this one's tree (an MPI
    rank's siblings on its host). ``disk``: a disk-model target's watch (its lateness and service
    times per phase, fsmeter.regime). ``quality(report)``: the quality dict of a measured phase (`judge`).
    ``annotate``: record ``cache_reset`` and ``measured`` in each report (the `fsmeter run` JSON).
    ``cleanup``: one of CLEANUP_CHOICES. ``steps``: a `PhaseSteps` (MPI ranks, ...).
    """
    if cleanup not in CLEANUP_CHOICES:
        raise ValueError(f"cleanup {cleanup!r}: use one of {', '.join(CLEANUP_CHOICES)}")
    steps = steps or PhaseSteps()
    plan = list(plan)
    raised = True
    try:
        for ph in plan:
            method = None
            if ph.cold_cache and reset_cache is not None:
                method = reset_cache(ph)
                run.resets.append(method)
            steps.before(run, ph)
            with progress(ph) as prog:
                watch = PhaseWatch(device, own_pids, disk)
                watch.start()
                report = steps.run(run, ph, prog)
                report["regime"] = watch.stop(report)  # others' CPU and page-cache reads (fsmeter.regime)
            kept = steps.after(run, ph, report)
            if kept is not None:
                if annotate:
                    kept["cache_reset"] = method or "none"
                    kept["measured"] = ph.measured and not ph.discard
                if ph.measured and not ph.discard and quality is not None:
                    q = quality(kept)
                    if q is not None:
                        kept["quality"] = q
                if kept.get("interrupted"):
                    run.interrupted = True
            run.phases.append(PhaseOutcome(ph, kept, method))
            if not steps.go_on(run, ph, kept):
                break
        raised = False
    except KeyboardInterrupt:  # a stop signal (fsmeter.interrupt): the caller decides what it means
        run.interrupted = True
        raise
    finally:
        wanted = {
            "always": True,
            "unless-raised": not raised,
            "if-complete": not raised and not run.interrupted,
            "never": False,
        }[cleanup]
        if wanted and "cleanup" in run.session.phases() and "cleanup" not in [p.name for p in plan]:
            run.cleanup_report = steps.cleanup(run)
            run.cleaned = True
    return run


def run_doc(job, **extra) -> dict:
    """The head of a run's result document (the `fsmeter run` JSON), its phases and metrics empty."""
    doc = {
        "format": "fsmeter-run",
        "version": RUN_JSON_VERSION,
        "fsmeter_version": fsmeter.__version__,
        "workload": job.workload.name,
        "family": job.workload.family.name,
        "job": job.engine_dict(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": host_info(),
        "phases": {},
        "metrics": {},
        "interrupted": False,
    }
    doc.update(extra)
    return doc


def run_job(
    job,
    console,
    show_progress: bool = True,
    keep_files: bool = False,
    cache: str = "auto",
    min_phase_s: float = DEFAULT_MIN_PHASE_S,
    steps: PhaseSteps | None = None,
    device: str | None = None,
    disk=None,
) -> dict:
    """Run every phase of ``job`` once on its directory (`fsmeter run`); returns the result document.
    A stop signal ends the run with what was measured, marked interrupted. ``steps``: as for run_phases;
    ``device`` and ``disk``: the target's own block device and disk-model watch when the run made its
    target (`fsmeter run --disk-model`), else the directory's device is found."""
    doc = run_doc(job)
    run = PhaseRun(EngineSession(job.engine_json()))
    try:
        with progress_bar(console, enabled=show_progress) as bar:
            run_phases(
                run,
                job.phases(),
                bar_progress(bar),
                reset_cache=lambda ph: reset_cache(cache, job.dir),
                device=device or own_device(job.dir, job.engine_dict().get("backend")),
                disk=disk,
                quality=judge(min_phase_s=min_phase_s, interval_s=job.settings.interval_s),
                annotate=True,
                cleanup="never" if keep_files else "always",
                steps=steps,
            )
    except KeyboardInterrupt:  # a stop between the engine's phases (a cache reset...): the same outcome
        pass
    doc["phases"] = run.reports()
    if run.cleanup_report is not None:
        doc["cleanup"] = {k: run.cleanup_report.get(k) for k in ("counters", "warnings")}
    doc["interrupted"] = run.interrupted
    return add_results(doc, job)


def add_results(doc: dict, job) -> dict:
    """The run's corruption summary and the family's metrics from its phase reports, into `doc`
    (a single run's, or the ranks' merged one under MPI)."""
    from fsmeter.verify import corruption

    doc["corrupt"] = corruption(doc["phases"].items())
    for m in job.metrics():
        rep = doc["phases"].get(m.phase)
        if rep is not None:
            v = m.get(rep)
            if v is not None:
                doc["metrics"][f"{m.phase}.{m.name}"] = {
                    "value": v,
                    "unit": m.unit,
                    "higher_is_better": m.higher_is_better,
                }
    return doc


__all__ = [
    "CACHE_CHOICES",
    "CLEANUP_CHOICES",
    "DEFAULT_MIN_PHASE_S",
    "RUN_JSON_VERSION",
    "PhaseOutcome",
    "PhaseRun",
    "PhaseSteps",
    "add_results",
    "bar_progress",
    "judge",
    "reset_cache",
    "run_doc",
    "run_job",
    "run_phases",
]
