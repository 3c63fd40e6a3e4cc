"""The study file: a published filesystem study's design, printed numbers and claims.

One TOML file per study in ``python/fsmeter/studies/`` (the format is described in the
README, "Studies"). A study names configurations, workloads and factors as the authors did;
:mod:`fsmeter.study.plan` turns them into a campaign for this machine, and
:mod:`fsmeter.study.claims` tests the claims against the results.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fsmeter.errors import UserError

import tomllib

STUDY_DIR = Path(__file__).resolve().parent.parent / "studies"
Level = Union[int, float, str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyInfo(_Strict):
    slug: str
    title: str
    citation: str
    summary: str = Field(description="one line for `fsmeter study list`")
    about: str = ""
    families: List[str]
    needs_root: bool = True
    needs_device: bool = False
    published_hardware: str = ""
    mkfs: Literal["per-cell", "per-trial"] = "per-cell"


class Scale(_Strict):
    target_size: str
    repetitions: Dict[str, Any]
    note: str = ""


class StudyWorkload(_Strict):
    id: str = Field(description="the study's name for the workload (the campaign label)")
    base: str = Field(description="the fsmeter named workload it starts from")
    params: Dict[str, Any] = Field(default_factory=dict, description="the study's own parameters (paper scale)")
    quick: Dict[str, Any] = Field(default_factory=dict, description="overrides at the quick scale")
    scale_counts: List[str] = Field(default_factory=list, description="counts a numeric scale multiplies")
    scale_sizes: List[str] = Field(default_factory=list, description="sizes a numeric scale multiplies")
    scale_durations: List[str] = Field(default_factory=list, description="durations a numeric scale multiplies")
    ram_relative: Dict[str, float] = Field(default_factory=dict,
                                           description="param -> multiple of the memory that can cache it")
    est_trial_s: Dict[str, float] = Field(default_factory=dict, description="one trial's time here, per scale")
    levels: Dict[str, Level] = Field(default_factory=dict,
                                     description="study factor -> the one level this workload runs at "
                                                 "(the other levels are excluded for it)")


class StudyFactor(_Strict):
    name: str = Field(description="the study's name for the factor")
    campaign: Optional[str] = Field(None, description="the fsmeter factor it becomes (None: cannot be varied)")
    levels: List[Level]
    map: Dict[str, Level] = Field(default_factory=dict, description="study level -> fsmeter level")
    gaps: Dict[str, str] = Field(default_factory=dict, description="study level -> why it is replaced/skipped")
    quick: Dict[str, Level] = Field(default_factory=dict, description="study level -> fsmeter level at the quick scale")
    requires: Optional[str] = Field(None, description="a host capability the factor needs, e.g. cpufreq")
    note: str = ""

    def fsmeter_level(self, level: Level, scale: str = "paper") -> Optional[Level]:
        """The campaign level for a study level, or None when it is skipped."""
        if scale == "quick" and str(level) in self.quick:
            return self.quick[str(level)]
        if str(level) in self.map:
            return self.map[str(level)]
        return None if str(level) in self.gaps else level


class StudyConfig(_Strict):
    id: str
    filesystem: str
    mkfs_options: Union[str, List[str]] = Field(default_factory=list)
    mount_options: str = ""
    external_journal: bool = False
    gap: str = Field("", description="why this kernel cannot run it (skipped unless `substitute` is given)")
    substitute: Optional[Dict[str, Any]] = Field(None, description="the configuration run instead")
    note: str = ""


class Claim(_Strict):
    id: str
    says: str
    kind: Literal["ranking", "equivalence", "trend", "ratio", "variation", "untestable"]
    why: str = Field("", description="untestable: the reason")
    reading: str = Field("", description="how an imprecise claim was made testable")
    workloads: List[str] = Field(default_factory=list)
    metrics: List[str] = Field(default_factory=list)
    metric: Optional[str] = None
    compare: str = Field("filesystem", description="ranking/equivalence: whose levels the tiers hold")
    tiers: List[List[Level]] = Field(default_factory=list)
    configurations: List[str] = Field(default_factory=list, description="restrict to these configurations")
    where: Dict[str, Union[Level, List[Level]]] = Field(default_factory=dict)
    except_: List[Dict[str, Level]] = Field(default_factory=list, alias="except")
    factor: Optional[str] = Field(None, description="trend: the factor that changes")
    pairs: List[List[Level]] = Field(default_factory=list, description="trend: [from, to] levels")
    direction: Optional[Literal["up", "down", "not_up", "not_down"]] = None
    numerator: Dict[str, Any] = Field(default_factory=dict)
    denominator: Dict[str, Any] = Field(default_factory=dict)
    ratio_range: List[float] = Field(default_factory=list)
    design: List[str] = Field(default_factory=list, description="variation: the ANOVA factors; 'access_mode' "
                                                                "is the metric itself as a factor")
    larger: List[str] = Field(default_factory=list, description="variation: [a, b]: a explains more than b")
    below: Dict[str, float] = Field(default_factory=dict, description="variation: term -> share (%) it stays under")
    share_range: Dict[str, List[float]] = Field(default_factory=dict,
                                                description="variation: term (or 'explained') -> [low, high] %")
    significant: List[str] = Field(default_factory=list, description="variation: terms significant by the F-test")
    level: float = Field(0.90, description="variation: confidence level of the F-tests")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _check(self) -> "Claim":
        if self.kind in ("ranking", "equivalence") and not self.tiers:
            raise ValueError(f"claim {self.id}: tiers: a {self.kind} claim lists tiers of levels")
        if self.kind == "ranking" and len(self.tiers) < 2:
            raise ValueError(f"claim {self.id}: tiers: a ranking needs at least two tiers")
        if self.kind == "trend" and (not self.factor or not self.pairs or not self.direction):
            raise ValueError(f"claim {self.id}: a trend claim needs factor, pairs and direction")
        if self.kind == "ratio" and (not self.metric or len(self.ratio_range) != 2):
            raise ValueError(f"claim {self.id}: a ratio claim needs metric and ratio_range = [low, high]")
        if self.kind == "variation" and (len(self.design) < 2 or len(self.all_metrics) < 1):
            raise ValueError(f"claim {self.id}: a variation claim needs design (two factors) and metrics")
        if self.kind == "untestable" and not self.why:
            raise ValueError(f"claim {self.id}: why: say why the claim cannot be tested")
        return self

    @property
    def all_metrics(self) -> List[str]:
        return self.metrics or ([self.metric] if self.metric else [])


class Published(_Strict):
    hardware_note: str = ""
    rows: List[Dict[str, Any]] = Field(default_factory=list)


class Study(_Strict):
    study: StudyInfo
    scales: Dict[str, Scale]
    workloads: List[StudyWorkload]
    factors: List[StudyFactor] = Field(default_factory=list)
    configurations: List[StudyConfig]
    claims: List[Claim] = Field(default_factory=list)
    published: Published = Field(default_factory=Published)

    @model_validator(mode="after")
    def _check(self) -> "Study":
        for key in ("paper", "quick"):
            if key not in self.scales:
                raise ValueError(f"scales.{key}: every study defines the paper and quick scales")
        wl = {w.id for w in self.workloads}
        cfg = {c.id for c in self.configurations}
        for c in self.claims:
            for w in c.workloads:
                if w not in wl:
                    raise ValueError(f"claim {c.id}: workloads: {w!r} is not a workload of this study")
            for k in c.configurations:
                if k not in cfg:
                    raise ValueError(f"claim {c.id}: configurations: {k!r} is not a configuration of this study")
        return self

    @property
    def slug(self) -> str:
        return self.study.slug

    def factor(self, name: str) -> Optional[StudyFactor]:
        return next((f for f in self.factors if f.name == name), None)

    def config(self, cid: str) -> StudyConfig:
        return next(c for c in self.configurations if c.id == cid)


def study_paths() -> Dict[str, Path]:
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
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: TOML syntax error: {exc}") from None
    try:
        return Study.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"{path}: {where}: {err['msg']}") from None
