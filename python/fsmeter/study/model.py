"""The study file: a published filesystem study's design, printed numbers and claims.

One TOML file per study in ``python/fsmeter/data/studies/`` (the format is described in
docs/studies.md). A study names configurations, workloads and factors as the authors did;
:mod:`fsmeter.study.plan` turns them into a campaign for this machine,
:mod:`fsmeter.study.claims` tests the claims against the results, and
:mod:`fsmeter.study.paper` tests them against the study's own published numbers.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fsmeter.errors import UserError

STUDY_DIR = Path(__file__).resolve().parent.parent / "data" / "studies"
Level = int | float | str
#: Gates of a study's re-run verdicts (a study file may set its own in [study]).
DEFAULT_MIN_PHASE_S = 5.0
DEFAULT_MAX_OTHER_CPU_SHARE = 0.10
DEFAULT_MAX_CACHE_READ_SHARE = 0.5
#: The scales a study file may define: the paper's design, the paper-disk scale (on a model of the
#: paper's disk, with its memory), and the small and quick scales that fit this machine's time.
SCALE_NAMES = ("paper", "paper-disk", "small", "quick")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyInfo(_Strict):
    slug: str
    title: str
    citation: str
    summary: str = Field(description="one line for `fsmeter study list`")
    about: str = ""
    families: list[str]
    needs_root: bool = True
    needs_device: bool = False
    published_hardware: str = ""
    mkfs: Literal["per-cell", "per-trial"] = "per-cell"
    reference: str | None = Field(
        None,
        description="the configuration the report's side-by-side table "
        "divides by (default: the first configuration both the paper and the run have)",
    )
    min_phase_s: float = Field(
        DEFAULT_MIN_PHASE_S,
        gt=0,
        description="gate: a re-run verdict needs every measured phase it rests on to last at least this long",
    )
    max_other_cpu_share: float = Field(
        DEFAULT_MAX_OTHER_CPU_SHARE,
        gt=0,
        le=1,
        description="gate: other "
        "processes' CPU during a phase, as a share of the machine's CPUs (the "
        "store's phases.other_cpu_share), above which the machine counts as busy",
    )
    max_cache_read_share: float = Field(
        DEFAULT_MAX_CACHE_READ_SHARE,
        ge=0,
        le=1,
        description="a claim sensitive "
        "to cache_residency is not comparable when a phase it rests on read more "
        "than this share from the page cache (phases.cache_read_share)",
    )


class LeaveOut(_Strict):
    """Cells a scale leaves out to fit its time: every cell of these workloads on these configurations at
    these factor levels (an empty list: all of them). ``why`` names the claims that lose them, or says
    that none does."""

    workloads: list[str] = Field(default_factory=list, description="study workload ids (empty: every workload)")
    configurations: list[str] = Field(default_factory=list, description="configuration ids (empty: every one)")
    where: dict[str, list[Level]] = Field(default_factory=dict, description="study factor -> its study levels")
    why: str = Field(min_length=1, description="which claims lose these cells, or why none does")


class Scale(_Strict):
    target_size: str
    repetitions: dict[str, Any]
    note: str = ""
    page_cache_limit: str | None = Field(
        None,
        description="a page-cache limit (memory cgroup) for every cell, "
        "so that disk-bound workloads stay disk-bound (data >= 2x the limit); "
        "a study that varies page_cache_limit itself maps its levels instead",
    )
    leave_out: list[LeaveOut] = Field(
        default_factory=list,
        description="cells this scale does not run, to fit its time, each with the claims it costs",
    )
    disk_model: str | None = Field(
        None,
        description="the disk-model profile (fsmeter disk-model list) this scale's filesystems go on: "
        "the paper-disk scale's model of the paper's disk",
    )
    between_run_pct: float | None = Field(
        None,
        ge=0,
        description="the between-run wobble of this scale's runs, where it differs from the [rules]' (another "
        "regime: a disk model's runs are not a host-cached disk's), as `fsmeter study calibrate` measured "
        "it on two runs at this scale",
    )
    between_run_source: str = Field("", description="where this scale's between_run_pct comes from")

    @model_validator(mode="after")
    def _sourced(self) -> Scale:
        if self.between_run_pct is not None and not self.between_run_source.strip():
            raise ValueError("between_run_source: say which two runs between_run_pct was calibrated on, and when")
        return self


class StudyWorkload(_Strict):
    id: str = Field(description="the study's name for the workload (the campaign label)")
    base: str = Field(description="the fsmeter named workload it starts from")
    params: dict[str, Any] = Field(default_factory=dict, description="the study's own parameters (paper scale)")
    quick: dict[str, Any] = Field(default_factory=dict, description="overrides at the quick scale")
    small: dict[str, Any] = Field(default_factory=dict, description="overrides at the small scale")
    paper_disk: dict[str, Any] = Field(
        default_factory=dict, alias="paper-disk", description="overrides at the paper-disk scale"
    )
    regime: Literal["disk", "cache"] = Field(
        "cache",
        description="what bound the study's runs: the disk (data "
        "at least twice the memory that could cache it) or the page cache",
    )
    footprint: str | None = Field(
        None,
        description="the parameter holding the workload's data size, so the "
        "plan can check it against the page-cache limit",
    )
    scale_counts: list[str] = Field(default_factory=list, description="counts a numeric scale multiplies")
    scale_sizes: list[str] = Field(default_factory=list, description="sizes a numeric scale multiplies")
    scale_durations: list[str] = Field(default_factory=list, description="durations a numeric scale multiplies")
    ram_relative: dict[str, float] = Field(
        default_factory=dict, description="param -> multiple of the memory that can cache it"
    )
    est_trial_s: dict[str, float] = Field(default_factory=dict, description="one trial's time here, per scale")
    levels: dict[str, Level] = Field(
        default_factory=dict,
        description="study factor -> the one level this workload runs at (the other levels are excluded for it)",
    )


class StudyFactor(_Strict):
    name: str = Field(description="the study's name for the factor")
    campaign: str | None = Field(None, description="the fsmeter factor it becomes (None: cannot be varied)")
    levels: list[Level]
    map: dict[str, Level] = Field(default_factory=dict, description="study level -> fsmeter level")
    gaps: dict[str, str] = Field(default_factory=dict, description="study level -> why it is replaced/skipped")
    quick: dict[str, Level] = Field(default_factory=dict, description="study level -> fsmeter level at the quick scale")
    small: dict[str, Level] = Field(default_factory=dict, description="study level -> fsmeter level at the small scale")
    paper_disk: dict[str, Level] = Field(
        default_factory=dict, alias="paper-disk", description="study level -> fsmeter level at the paper-disk scale"
    )
    requires: str | None = Field(None, description="a host capability the factor needs, e.g. cpufreq")
    note: str = ""

    def fsmeter_level(self, level: Level, scale: str = "paper") -> Level | None:
        """The campaign level for a study level, or None when it is skipped."""
        if scale == "quick" and str(level) in self.quick:
            return self.quick[str(level)]
        if scale == "small" and str(level) in self.small:
            return self.small[str(level)]
        if scale == "paper-disk" and str(level) in self.paper_disk:
            return self.paper_disk[str(level)]
        if str(level) in self.map:
            return self.map[str(level)]
        return None if str(level) in self.gaps else level


class StudyConfig(_Strict):
    id: str
    filesystem: str
    mkfs_options: str | list[str] = Field(default_factory=list)
    mount_options: str = ""
    external_journal: bool = False
    gap: str = Field("", description="why this kernel cannot run it (skipped unless `substitute` is given)")
    substitute: dict[str, Any] | None = Field(None, description="the configuration run instead")
    note: str = ""


class Rules(_Strict):
    """A study's own decision rules (its ``[rules]`` block): every verdict on its claims honours them,
    on the paper's numbers and on a re-run, and the report shows them."""

    level: float = Field(
        0.95,
        gt=0.5,
        lt=1,
        description="the study's confidence level: each claim's one-sided tests run at alpha = 1 - level "
        "(Holm inside the claim), and an interval rule uses intervals at this level",
    )
    min_difference_pct: float = Field(
        0.0,
        ge=0,
        description="the smallest difference (% of the mean of the member claimed worse) the study counts as "
        "a difference: the claimed size of an ordering that states none, and the least a reversal must reach",
    )
    intervals: Literal["none", "no_overlap"] = Field(
        "none",
        description="no_overlap: two means differ only when their confidence intervals (at level) do not "
        "overlap, on top of the test (Bryant's rule)",
    )
    run_s: float | None = Field(None, gt=0, description="the length of the study's measured runs (s), as published")
    warmup_s: float | None = Field(None, ge=0, description="the study's warm-up before each measured run (s)")
    settle_s: float | None = Field(
        None,
        gt=0,
        description="the time the study found its throughput needs to settle (s): a re-run phase shorter "
        "than this is gated (the claim then rests on an unsettled figure)",
    )
    source: str = Field("", description="where the paper states these rules")
    between_run_pct: float | None = Field(
        None,
        ge=0,
        description="the between-run wobble of an effect (percentage points): how far two back-to-back runs "
        "of the study on one machine move a case's effect beyond what their standard errors explain, as "
        "`fsmeter study calibrate` measures it; the edge rule's between-run part (unset: fsmeter's default)",
    )
    between_run_source: str = Field("", description="where between_run_pct comes from: the two runs, their date")

    @property
    def alpha(self) -> float:
        return round(1.0 - self.level, 10)


class Figure(_Strict):
    """One number of the paper's hardware, with where it comes from (datasheet, the paper, a bound)."""

    value: float = Field(gt=0)
    source: str = Field(min_length=1, description="where the number comes from")
    bound: Literal["exact", "lower", "upper"] = Field(
        "exact",
        description="exact: the figure itself; lower / upper: a bound on it (the paper did not give the model)",
    )


class PaperDisk(_Strict):
    model: str = Field(description="the disk as the paper names it")
    source: str = Field(min_length=1, description="where the paper names it")
    rpm: Figure | None = None
    avg_seek_ms: Figure | None = Field(None, description="average seek (read), ms")
    track_seek_ms: Figure | None = Field(None, description="track-to-track seek (read), ms")
    media_mb_s: Figure | None = Field(None, description="sustained media transfer rate, MB/s (10^6 bytes)")
    measured_mb_s: Figure | None = Field(
        None, description="a sequential rate the paper itself measured on it (hdparm, Bonnie), MB/s, as context"
    )


class PaperCpu(_Strict):
    model: str
    source: str = Field(min_length=1)
    clock_mhz: Figure | None = None
    count: int | None = Field(None, ge=1, description="CPUs (cores) the paper's runs had online")


class Machine(_Strict):
    """The machine a study measured on, as its paper gives it: every number with its source."""

    id: str = Field(min_length=1, description="the machine's name in the study (claims name it with `machine`)")
    description: str = ""
    disk: PaperDisk | None = None
    cpu: PaperCpu | None = None
    ram_mb: Figure | None = None
    kernel: str = ""
    kernel_source: str = ""

    def random_read_ms(self) -> PaperFigure | None:
        """The expected time of one random 4 KiB read: average seek + half a revolution + the transfer
        (at the media rate, else at the rate the paper measured). Exact when the rpm and the average seek
        are; a lower bound when the rpm is an upper bound or the seek is unknown (taken as the
        track-to-track seek, else 0). None without an rpm."""
        d = self.disk
        if d is None or d.rpm is None or d.rpm.bound == "lower":
            return None
        half_rev = 30000.0 / d.rpm.value
        seek = d.avg_seek_ms or d.track_seek_ms
        exact_media = d.media_mb_s is not None and d.media_mb_s.bound == "exact"
        rate = d.media_mb_s if exact_media else (d.measured_mb_s or d.media_mb_s)
        xfer = 4096 / (rate.value * 1e6) * 1000.0 if rate is not None and rate.bound != "upper" else 0.0
        exact = d.rpm.bound == "exact" and d.avg_seek_ms is not None and d.avg_seek_ms.bound == "exact"
        ms = (seek.value if seek is not None and seek.bound != "upper" else 0.0) + half_rev + xfer
        how = (
            f"{'average seek' if d.avg_seek_ms is not None else 'track-to-track seek' if seek else 'seek unknown (0)'}"
            f" {seek.value if seek is not None else 0:g} ms + half a revolution at "
            f"{'at most ' if d.rpm.bound == 'upper' else ''}{d.rpm.value:g} rpm {half_rev:.2f} ms + 4 KiB {xfer:.2f} ms"
        )
        return PaperFigure(ms, how if exact else f"at least: {how}", exact)

    def flush_ms(self) -> PaperFigure | None:
        """The expected time of a journal write reaching the platter without a write cache (track-to-track
        seek + half a revolution); a lower bound without the seek or with an upper-bound rpm."""
        d = self.disk
        if d is None or d.rpm is None or d.rpm.bound == "lower":
            return None
        half_rev = 30000.0 / d.rpm.value
        track = d.track_seek_ms.value if d.track_seek_ms is not None and d.track_seek_ms.bound != "upper" else 0.0
        exact = d.rpm.bound == "exact" and d.track_seek_ms is not None and d.track_seek_ms.bound == "exact"
        how = f"track-to-track seek {track:g} ms + half a revolution {half_rev:.2f} ms"
        return PaperFigure(track + half_rev, how if exact else f"at least: {how}", exact)

    def seq_mb_s(self) -> PaperFigure | None:
        """The sequential rate of the paper's disk: its media rate (exact, or an upper bound), else the rate
        the paper measured on it."""
        d = self.disk
        if d is None:
            return None
        if d.media_mb_s is not None and d.media_mb_s.bound != "lower":
            f = d.media_mb_s
            return PaperFigure(f.value, f.source, f.bound == "exact")
        if d.measured_mb_s is not None:
            return PaperFigure(d.measured_mb_s.value, f"measured by the paper: {d.measured_mb_s.source}", True)
        return None


@dataclass(frozen=True)
class PaperFigure:
    """A figure derived from the paper's machine: its value, how it was made, and whether it is exact or
    only a bound (a lower bound of a time, an upper bound of a rate)."""

    value: float
    how: str
    exact: bool


#: What a claim's result was bound by in the paper (``bound_by``): the resource whose speed decided it.
BOUNDS = ("disk_seeks", "disk_bandwidth", "journal_flushes", "page_cache", "cpu")


# The run changes a claim can be sensitive to. The plan records each change it makes with the
# same names (``Change.affects``); a claim whose ``sensitive_to`` meets them is "not comparable here".
SENSITIVITIES = (
    "file_size",
    "cache_residency",
    "storage_kind",
    "cpu_count",
    "cpu_speed",
    "kernel",
    "filesystem_version",
    "memory",
    "duration",
    "thread_count",
    "elevator",
    "hardware",
)

# What ``fsmeter study check`` may say of a claim on its own paper's data (``expect_paper``).
PAPER_VERDICTS = ("supported", "contradicted", "inconclusive", "no data", "not testable")

# Old kind names, still accepted: ranking -> ordering, ratio -> magnitude, trend -> ordering
# along a factor (not_up / not_down: non-superiority / non-inferiority with ``margin_pct``).
KIND_ALIASES = {"ranking": "ordering", "ratio": "magnitude", "trend": "ordering"}


class PaperSays(_Strict):
    """The paper's own data contradict its words: what the data show instead, with the evidence."""

    evidence: str = Field(description="the published numbers and the arithmetic that contradict the words")
    corrected: str = Field("", description="what the data do support, in a sentence")


class Claim(_Strict):
    id: str
    says: str = Field(description="the claim in one plain sentence")
    quote: str = Field("", description="the paper's own words, verbatim")
    source: str = Field("", description="where the words stand in the paper: section, page, table")
    rests_on: list[str] = Field(
        default_factory=list, description="the published rows the claim rests on, e.g. 'Table 2: create.files_per_s'"
    )
    kind: Literal[
        "magnitude", "equivalence", "ordering", "threshold", "variation", "untestable", "ranking", "ratio", "trend"
    ]
    why: str = Field("", description="untestable: the reason")
    reading: str = Field("", description="how the words became this test (margin, range, cases)")
    # -- what is compared ---------------------------------------------------------------------
    workloads: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    metric: str | None = None
    compare: str = Field(
        "filesystem",
        description="whose levels the tiers hold: filesystem, workload, metric_key, kernel or a study factor",
    )
    tiers: list[list[Level]] = Field(default_factory=list)
    configurations: list[str] = Field(default_factory=list, description="restrict to these configurations")
    where: dict[str, Level | list[Level]] = Field(default_factory=dict)
    except_: list[dict[str, Level]] = Field(default_factory=list, alias="except")
    factor: str | None = Field(None, description="ordering along a factor: the factor that changes")
    pairs: list[list[Level]] = Field(default_factory=list, description="ordering along a factor: [from, to] levels")
    direction: Literal["up", "down", "not_up", "not_down"] | None = None
    numerator: dict[str, Any] = Field(default_factory=dict)
    denominator: dict[str, Any] = Field(default_factory=dict)
    # -- what is claimed ----------------------------------------------------------------------
    ratio_range: list[float] = Field(
        default_factory=list,
        description="magnitude: [low, high] of mean(upper tier or numerator) / "
        "mean(lower tier or denominator), in the metric's own units",
    )
    margin_pct: float | None = Field(
        None,
        gt=0,
        description="equivalence (and not_up/not_down): the "
        "difference, in % of the reference mean, the words still call 'the same'",
    )
    size_pct: float | None = Field(
        None,
        ge=0,
        description="ordering: the size the paper's words state, in % of the mean of the member claimed "
        "worse; a pair holds only when its estimate reaches it (absent: the study's min_difference_pct)",
    )
    effect_pct: float | None = Field(
        None,
        gt=0,
        description="ordering: the difference (% of the mean of the member claimed worse) at which the power "
        "and the trials needed are computed, to explain an inconclusive verdict (absent: 10%); it never "
        "changes the verdict",
    )
    at_least: float | None = Field(
        None, description="threshold: every case's mean is at least this (in the metric's own units)"
    )
    at_most: float | None = Field(None, description="threshold: every case's mean is at most this")
    basis: Literal["stated", "read_off"] = Field(
        "stated",
        description="stated: the paper's own words; read_off: a reading of its tables that the paper never "
        "states as a conclusion (the report says so beside the verdict)",
    )
    best_of: bool = Field(
        False,
        description="ordering: the upper tier at `where` against every cell of the lower tiers, over every "
        "level of the factors `where` names (the paper's 'best of all runs', 'topped the list')",
    )
    design: list[str] = Field(
        default_factory=list, description="variation: the ANOVA factors; 'access_mode' is the metric itself as a factor"
    )
    larger: list[str] = Field(default_factory=list, description="variation: [a, b]: a explains more than b")
    below: dict[str, float] = Field(default_factory=dict, description="variation: term -> share (%) it stays under")
    share_range: dict[str, list[float]] = Field(
        default_factory=dict, description="variation: term (or 'explained') -> [low, high] %"
    )
    significant: list[str] = Field(default_factory=list, description="variation: terms significant by the F-test")
    level: float = Field(0.90, description="variation: confidence level of the F-tests")
    # -- how it is decided --------------------------------------------------------------------
    decide: Literal["all", "any", "majority"] | int = Field(
        "all", description="how many of the claim's cases must hold: all, any, majority, or a number"
    )
    alpha: float | None = Field(
        None, gt=0, lt=1, description="family-wise error rate inside the claim (Holm); absent: 1 - the study's level"
    )
    power: float = Field(
        0.80, gt=0, lt=1, description="the power an inconclusive verdict reports the trials needed for"
    )
    sensitive_to: list[str] = Field(
        default_factory=list, description="run changes that void the claim (see SENSITIVITIES)"
    )
    bound_by: list[Literal["disk_seeks", "disk_bandwidth", "journal_flushes", "page_cache", "cpu"]] = Field(
        default_factory=list,
        description="what bound the paper's result: a re-run whose resource is more than 4x faster is not comparable",
    )
    machine: str | None = Field(None, description="the study machine the claim is about (default: its first)")
    # -- the paper's own data -----------------------------------------------------------------
    expect_paper: str | None = Field(
        None, description="the verdict `fsmeter study check` must give on the paper's own data (one of PAPER_VERDICTS)"
    )
    paper_says: PaperSays | None = Field(None, description="set when the paper's data contradict its words")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _check(self) -> Claim:
        k = self.test
        if (
            self.kind in ("ranking", "ordering", "equivalence", "magnitude")
            and not self.tiers
            and not (self.kind in ("ordering", "magnitude") and (self.factor or self.numerator))
        ):
            raise ValueError(f"claim {self.id}: tiers: a {self.kind} claim lists tiers of levels")
        if k == "ordering" and not self.factor and len(self.tiers) < 2:
            raise ValueError(f"claim {self.id}: tiers: an ordering needs at least two tiers")
        if self.factor and (not self.pairs or not self.direction):
            raise ValueError(f"claim {self.id}: an ordering along a factor needs factor, pairs and direction")
        if k == "magnitude" and len(self.ratio_range) != 2:
            raise ValueError(f"claim {self.id}: ratio_range: a magnitude claim needs [low, high]")
        if self.ratio_range and not (0 <= self.ratio_range[0] < self.ratio_range[1]):
            raise ValueError(f"claim {self.id}: ratio_range: write [low, high] with 0 <= low < high (inf for no bound)")
        if k == "magnitude" and self.numerator and not self.metric and not self.metrics:
            raise ValueError(f"claim {self.id}: metric: a magnitude claim names its metric")
        if k == "variation" and (len(self.design) < 2 or len(self.all_metrics) < 1):
            raise ValueError(f"claim {self.id}: a variation claim needs design (two factors) and metrics")
        if k == "untestable" and not self.why:
            raise ValueError(f"claim {self.id}: why: say why the claim cannot be tested")
        if k == "threshold" and ((self.at_least is None) == (self.at_most is None) or not self.all_metrics):
            raise ValueError(f"claim {self.id}: a threshold claim names its metrics and one of at_least, at_most")
        if self.best_of and (k != "ordering" or self.factor or len(self.tiers) < 2 or not self.where):
            raise ValueError(
                f"claim {self.id}: best_of: an ordering by tiers whose `where` names the upper tier's cell"
            )
        if isinstance(self.decide, int) and self.decide < 1:
            raise ValueError(f"claim {self.id}: decide: a number of cases is at least 1")
        bad = [s for s in self.sensitive_to if s not in SENSITIVITIES]
        if bad:
            raise ValueError(f"claim {self.id}: sensitive_to: {', '.join(bad)} unknown; use {', '.join(SENSITIVITIES)}")
        if self.expect_paper is not None and self.expect_paper not in PAPER_VERDICTS:
            raise ValueError(f"claim {self.id}: expect_paper: use one of {', '.join(PAPER_VERDICTS)}")
        return self

    @property
    def test(self) -> str:
        """The test kind, old names mapped to the new ones."""
        return KIND_ALIASES.get(self.kind, self.kind)

    @property
    def all_metrics(self) -> list[str]:
        return self.metrics or ([self.metric] if self.metric else [])


class PublishedConfig(_Strict):
    """A configuration label of the published rows, as the study's configuration and factor levels."""

    configuration: str
    levels: dict[str, Level] = Field(default_factory=dict, description="factor -> level, e.g. kernel = '2.4.17'")


class Published(_Strict):
    hardware_note: str = ""
    metrics: dict[str, str] = Field(
        default_factory=dict, description="published 'phase.metric' -> the run's metric key the claims name"
    )
    configurations: dict[str, PublishedConfig] = Field(
        default_factory=dict, description="published configuration label -> study configuration (+ levels)"
    )
    lower_is_better: list[str] = Field(
        default_factory=list, description="run metric keys where less is better (default: time units)"
    )
    stddev: Literal["sample", "population"] = Field(
        "sample",
        description="what the rows' stddev is: the sample standard deviation (divided by n - 1) or the "
        "population one (divided by n), which the check turns into the sample one",
    )
    rows: list[dict[str, Any]] = Field(default_factory=list)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_row(i: int, r: dict[str, Any]) -> None:
    """A published row's numbers are numbers: value, stddev >= 0, n >= 1 (the paper check reads them)."""
    for key in ("value", "value_min", "value_max", "stddev", "ci_low", "ci_high"):
        if key in r and not _number(r[key]):
            raise ValueError(
                f"published.rows[{i}].{key}: {r[key]!r} is not a number: write the number "
                "as printed, or leave the field out"
            )
    if _number(r.get("stddev")) and r["stddev"] < 0:
        raise ValueError(f"published.rows[{i}].stddev: {r['stddev']} is negative: a standard deviation is >= 0")
    if "n" in r and not (isinstance(r["n"], int) and not isinstance(r["n"], bool) and r["n"] >= 1):
        raise ValueError(f"published.rows[{i}].n: {r['n']!r}: the number of runs is a whole number >= 1")
    if "where" in r and not isinstance(r["where"], dict):
        raise ValueError(f"published.rows[{i}].where: a table of factor = level, e.g. {{ run = 3 }}")


class Study(_Strict):
    study: StudyInfo
    rules: Rules = Field(default_factory=lambda: Rules.model_validate({}))
    hardware: list[Machine] = Field(default_factory=list, description="the machines the paper measured on")
    scales: dict[str, Scale]
    workloads: list[StudyWorkload]
    factors: list[StudyFactor] = Field(default_factory=list)
    configurations: list[StudyConfig]
    claims: list[Claim] = Field(default_factory=list)
    published: Published = Field(default_factory=lambda: Published.model_validate({}))

    def at_scale(self, scale: str | None) -> Study:
        """The study as runs at ``scale`` are judged: its [rules], with the scale's own between-run wobble
        where the scale has one."""
        sc = self.scales.get(scale) if scale is not None else None
        if sc is None or sc.between_run_pct is None:
            return self
        rules = self.rules.model_copy(
            update={"between_run_pct": sc.between_run_pct, "between_run_source": sc.between_run_source}
        )
        return self.model_copy(update={"rules": rules})

    @model_validator(mode="after")
    def _check(self) -> Study:
        for key in ("paper", "quick"):
            if key not in self.scales:
                raise ValueError(f"scales.{key}: every study defines the paper and quick scales")
        for sname, sc in self.scales.items():
            if sname not in SCALE_NAMES:
                raise ValueError(f"scales.{sname}: not a scale fsmeter knows (use {', '.join(SCALE_NAMES)})")
            if (sname == "paper-disk") != (sc.disk_model is not None):
                raise ValueError(
                    "scales.paper-disk: disk_model names the paper's disk's profile (fsmeter disk-model list)"
                    if sname == "paper-disk"
                    else f"scales.{sname}.disk_model: only the paper-disk scale runs on a disk model"
                )
            if sc.disk_model is not None:
                from fsmeter.diskmodel.profiles import profile_names

                if sc.disk_model not in profile_names():
                    raise ValueError(
                        f"scales.paper-disk.disk_model: {sc.disk_model!r} is not a disk-model profile "
                        f"({', '.join(profile_names())})"
                    )
        wl = {w.id for w in self.workloads}
        cfg = {c.id for c in self.configurations}
        machines = [m.id for m in self.hardware]
        if len(set(machines)) != len(machines):
            raise ValueError("hardware: two machines share an id")
        for c in self.claims:
            if c.machine is not None and c.machine not in machines:
                raise ValueError(
                    f"claim {c.id}: machine: {c.machine!r} is not a machine of [[hardware]] "
                    f"({', '.join(machines) or 'none listed'})"
                )
            for w in c.workloads:
                if w not in wl:
                    raise ValueError(f"claim {c.id}: workloads: {w!r} is not a workload of this study")
            for k in c.configurations:
                if k not in cfg:
                    raise ValueError(f"claim {c.id}: configurations: {k!r} is not a configuration of this study")
        fac = {f.name: {str(lv) for lv in f.levels} for f in self.factors}
        for sname, sc in self.scales.items():
            for i, lo in enumerate(sc.leave_out):
                where = f"scales.{sname}.leave_out[{i}]"
                for w in lo.workloads:
                    if w not in wl:
                        raise ValueError(f"{where}.workloads: {w!r} is not a workload of this study")
                for k in lo.configurations:
                    if k not in cfg:
                        raise ValueError(f"{where}.configurations: {k!r} is not a configuration of this study")
                for name, levels in lo.where.items():
                    if name not in fac:
                        raise ValueError(f"{where}.where: {name!r} is not a factor of this study")
                    if not levels:
                        raise ValueError(f"{where}.where.{name}: an empty list: name the levels to leave out")
                    bad = [lv for lv in levels if str(lv) not in fac[name]]
                    if bad:
                        raise ValueError(
                            f"{where}.where.{name}: {bad[0]!r} is not a level of {name} "
                            f"(levels: {', '.join(sorted(fac[name]))})"
                        )
        if self.study.reference is not None and self.study.reference not in cfg:
            raise ValueError(f"study.reference: {self.study.reference!r} is not a configuration of this study")
        for label, pc in self.published.configurations.items():
            if pc.configuration not in cfg:
                raise ValueError(
                    f"published.configurations.{label}: {pc.configuration!r} is not a configuration of "
                    f"this study (one of {', '.join(sorted(cfg))})"
                )
        for i, r in enumerate(self.published.rows):
            _check_row(i, r)
        return self

    @property
    def slug(self) -> str:
        return self.study.slug

    def factor(self, name: str) -> StudyFactor | None:
        return next((f for f in self.factors if f.name == name), None)

    def config(self, cid: str) -> StudyConfig:
        return next(c for c in self.configurations if c.id == cid)

    def machine_of(self, claim: Claim) -> Machine | None:
        """The paper's machine a claim is about: its ``machine``, else the study's first."""
        if claim.machine is not None:
            return next(m for m in self.hardware if m.id == claim.machine)
        return self.hardware[0] if self.hardware else None

    def alpha_of(self, claim: Claim) -> float:
        """The claim's family-wise error rate: its own ``alpha``, else 1 - the study's level."""
        return claim.alpha if claim.alpha is not None else self.rules.alpha


def study_paths() -> dict[str, Path]:
    """Every study shipped with fsmeter: slug -> file (quick-compare is a campaign, not a study)."""
    out = {}
    for p in sorted(STUDY_DIR.glob("*.toml")):
        try:
            data = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError:
            continue
        if "study" in data and "scales" in data:
            out[data["study"]["slug"]] = p
    return out


def load_study(name: str) -> Study:
    """A shipped study by slug, or a study file by path; errors name the field."""
    paths = study_paths()
    path = paths.get(name) or (Path(name) if name.endswith(".toml") else None)
    if path is None or not path.is_file():
        raise UserError(f"unknown study {name!r}: use one of {', '.join(paths)} (fsmeter study list)")
    from fsmeter.textfile import loads_toml, read_text

    data = loads_toml(read_text(path, "study file"), str(path))  # a user's file: UTF-8, bounded, not too deep
    try:
        return Study.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise UserError(f"{path}: {where + ': ' if where else ''}{msg}") from None
