"""How far one measured phase can be trusted: too short to make claims?, a
batch-means CI from its interval samples (for a cell with a single trial), and
whether its throughput reached a steady state (does the warm-up suffice?).

Used by `fsmeter run` (printed under each phase table and written to the JSON),
the campaign runner (stored with the phase report) and the reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

from fsmeter.stats.batch import (
    DEFAULT_MIN_PHASE_S,
    MIN_BATCHES,
    BatchMeansResult,
    SteadyState,
    batch_means_ci,
    is_too_short,
    steady_state,
)

#: Steady state on interval throughput, after fio's ss=iops:20% and ss=iops_slope:5%: in every later
#: window (a fifth of the run, >= 3 samples) each sample is within 20% of the window mean and the
#: least-squares slope is under 5% of the mean per sample. Looser than fio's usual 0.1-1% slope because
#: phases here are often short and sampled once a second; it judges the warm-up, it changes no figure.
STEADY_DEVIATION_PCT = 20.0
STEADY_SLOPE_PCT = 5.0
#: Fewer samples than this and steady-state detection is not attempted.
MIN_STEADY_SAMPLES = 6


@dataclass(frozen=True)
class PhaseQuality:
    elapsed_s: float
    min_phase_s: float
    too_short: bool
    #: Interval throughput samples used (full intervals only: the last, partial one is left out).
    samples: int
    interval_s: float
    batch: BatchMeansResult | None
    steady: SteadyState | None
    #: Seconds from the start of the phase (warm-up included) after which the throughput was steady.
    steady_from_s: float | None
    notes: tuple

    def to_dict(self) -> dict:
        b = self.batch
        return {
            "elapsed_s": self.elapsed_s,
            "min_phase_s": self.min_phase_s,
            "too_short": self.too_short,
            "samples": self.samples,
            "interval_s": self.interval_s,
            "batch_ci": None
            if b is None
            else {
                "level": b.ci.level,
                "mean_ops_per_s": b.ci.mean,
                "half_width": b.ci.half_width,
                "half_width_pct": b.ci.half_width_pct,
                "n_batches": b.n_batches,
                "batch_size": b.batch_size,
                "r1": b.r1,
                "autocorrelated": b.autocorrelated,
            },
            "steady": None if self.steady is None else self.steady.steady,
            "steady_from_s": self.steady_from_s,
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line for a terminal."""
        return summarize_quality(self.to_dict())


def summarize_quality(q: dict) -> str:
    """One terminal line from a quality dict (PhaseQuality.to_dict, as stored with a phase report)."""
    parts = []
    b = q.get("batch_ci")
    if b is not None:
        parts.append(
            f"throughput {b['level']:.0%} CI ±{b['half_width_pct']:.1f}% (batch means, "
            f"{b['n_batches']} batches of {b['batch_size']} intervals"
            f"{', correlated: too narrow' if b['autocorrelated'] else ''})"
        )
    if q.get("steady") is not None:
        if q["steady"]:
            parts.append(f"steady from {q['steady_from_s']:.1f} s")
        else:
            parts.append("not steady: lengthen the warm-up or the phase")
    if q.get("too_short"):
        parts.append(f"too short to trust (< {q['min_phase_s']:g} s)")
    parts += [n for n in q.get("notes", []) if n not in parts]
    return "; ".join(parts)


def phase_quality(
    intervals: Sequence[dict],
    elapsed_s: float,
    warmup_s: float = 0.0,
    level: float = 0.95,
    min_phase_s: float = DEFAULT_MIN_PHASE_S,
    interval_s: float | None = None,
    count: Callable[[dict], float | None] = lambda i: i["ops"],
) -> PhaseQuality:
    """Judge one phase from its interval samples (dicts with `dur_s` and `ops`, warm-up excluded).

    ``interval_s`` is the job's sampling interval: samples shorter than it (the last, partial one)
    are left out. Without it (older records) the median sample length stands in, so that one
    interval that ran long cannot make every other one look partial. ``count`` gives the counted
    quantity of one sample (default: operations); the rates are count / dur_s.
    """
    iv = [i for i in intervals if i.get("dur_s", 0) > 0]
    nominal = float(interval_s) if interval_s else (float(median([i["dur_s"] for i in iv])) if iv else 0.0)
    # Every interval but the last lasts the sampling interval; keep only those.
    full = [i for i in iv if i["dur_s"] >= 0.99 * nominal]
    counts = [count(i) for i in full]
    rates = [c / i["dur_s"] for c, i in zip(counts, full) if c is not None]
    if len(rates) < len(full):
        rates = []  # the quantity is missing from some samples: no series rather than a gappy one
    notes = []
    batch = None
    if len(rates) >= MIN_BATCHES:
        batch = batch_means_ci(rates, level=level, interval_s=nominal, min_duration_s=min_phase_s)
    else:
        notes.append(f"{len(rates)} interval samples: a batch-means CI needs >= {MIN_BATCHES}")
    steady, steady_from = None, None
    if len(rates) >= MIN_STEADY_SAMPLES:
        steady = steady_state(
            rates, window=max(3, len(rates) // 5), slope_pct=STEADY_SLOPE_PCT, deviation_pct=STEADY_DEVIATION_PCT
        )
        if steady.steady and steady.warmup is not None:
            steady_from = warmup_s + steady.warmup * nominal
            if steady.warmup > 0:
                notes.append(
                    f"the first {steady.warmup * nominal:.1f} s after the warm-up were not yet steady: "
                    f"a warm-up of >= {steady_from:.1f} s is suggested"
                )
    return PhaseQuality(
        elapsed_s,
        min_phase_s,
        is_too_short(elapsed_s, min_phase_s),
        len(rates),
        nominal,
        batch,
        steady,
        steady_from,
        tuple(notes),
    )


def report_quality(
    report: dict, level: float = 0.95, min_phase_s: float = DEFAULT_MIN_PHASE_S, interval_s: float | None = None
) -> PhaseQuality:
    """`phase_quality` of an engine phase report; ``interval_s``: the job's sampling interval."""
    return phase_quality(
        report.get("intervals") or [],
        float(report.get("elapsed_s") or 0.0),
        float(report.get("warmup_s") or 0.0),
        level,
        min_phase_s,
        interval_s,
    )
