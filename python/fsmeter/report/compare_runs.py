"""Did B get slower than A? Per metric change between two campaigns, with Welch significance, for CI gates.

Metrics are matched by workload, phase, metric name and the levels of every factor. A change is a
regression only when it is significant (Welch's t-test, stats.ranking) AND worse than A by at least the
practical threshold, in the metric's own direction (higher_is_better). Runs whose workload parameters
differ are listed as mismatches and never compared (pyperf refuses to merge runs with different metadata).

Many metrics are tested at once (a quick comparison has about 200), so at alpha 0.05 about one in twenty
unchanged metrics would be flagged by chance alone. The p-values are therefore adjusted for the whole
family of tests with Holm's step-down method (Holm 1979, "A simple sequentially rejective multiple test
procedure"; statsmodels.stats.multitest.multipletests, method "holm"), which holds the probability of
any false flag at or below alpha whatever the dependence between metrics. `correction="none"` keeps the
per-metric p-values.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsmeter.errors import UserError
from fsmeter.report.data import level_str
from fsmeter.stats.kept import is_kept
from fsmeter.stats.ranking import compare

#: Exit code of `fsmeter compare-runs` when B has a significant regression beyond the threshold.
EXIT_REGRESSION = 3
#: Job fields that legitimately differ between runs of the same configuration.
IGNORED_JOB_FIELDS = {"dir"}


@dataclass
class Side:
    """One side of the comparison: its tidy frame and, per configuration, the job it ran."""

    label: str
    tidy: Any  # pandas DataFrame (store.tidy shape)
    jobs: dict  # (workload, config key) -> job dict
    #: (workload, config key) -> the guest it ran in (fsmeter.guest), for configurations run in a guest.
    guests: dict = field(default_factory=dict)


@dataclass
class Row:
    workload: str
    config: str
    phase: str
    metric: str
    unit: str
    higher_is_better: bool
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    hw_a: float
    hw_b: float
    change_pct: float
    p: float
    verdict: str  # regression | improvement | no significant change | not tested | not tested (emulated)
    p_adj: float = math.nan  # p after the family-wise correction (equal to p without one)

    @property
    def key(self) -> str:
        return f"{self.phase}.{self.metric}"


@dataclass
class Result:
    a: str
    b: str
    threshold_pct: float
    alpha: float
    correction: str = "holm"
    rows: list = field(default_factory=list)
    only_a: list = field(default_factory=list)  # "workload / config / metric" present in A only
    only_b: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)  # (workload, config, "param: a -> b; ...")

    @property
    def regressions(self) -> list:
        return [r for r in self.rows if r.verdict == "regression"]


def _config_key(row: dict, factors: list) -> tuple:
    return tuple(
        (f, level_str(row[f]))
        for f in factors
        if f in row and row[f] is not None and not (isinstance(row[f], float) and math.isnan(row[f]))
    )


def _config_label(key: tuple) -> str:
    return ", ".join(v if f == "filesystem" else f"{f}={v}" for f, v in key) or "-"


def _jobs_from(rows: list) -> dict:
    """rows: (workload, factors dict, extra JSON/dict) per trial -> first job per (workload, config key)."""
    out: dict = {}
    for workload, factors, extra in rows:
        key = (workload, _config_key(factors, list(factors)))
        if key in out:
            continue
        ex = json.loads(extra) if isinstance(extra, str) else (extra or {})
        job = ex.get("job") if isinstance(ex, dict) else None
        if job:
            out[key] = _relative_to_dir({k: v for k, v in job.items() if k not in IGNORED_JOB_FIELDS}, job.get("dir"))
    return out


def _guests_from(rows: list) -> dict:
    """rows as for _jobs_from -> the guest record (kernel, accelerator, emulated) per configuration run in one."""
    out: dict = {}
    for workload, factors, extra in rows:
        try:
            ex = json.loads(extra) if isinstance(extra, str) else (extra or {})
        except ValueError:
            continue
        g = ex.get("guest") if isinstance(ex, dict) else None
        if isinstance(g, dict):
            out.setdefault((workload, _config_key(factors, list(factors))), g)
    return out


def _relative_to_dir(value: Any, d: str | None) -> Any:
    """The job with its own directory written as "{dir}" (paths under the mount differ from run to run)."""
    if not d:
        return value
    if isinstance(value, str):
        return value.replace(d, "{dir}")
    if isinstance(value, list):
        return [_relative_to_dir(v, d) for v in value]
    if isinstance(value, dict):
        return {k: _relative_to_dir(v, d) for k, v in value.items()}
    return value


def load_side(ref: str, db: Any) -> Side:
    """A campaign (id or name) in the store at ``db``, or an exported campaign JSON file."""
    from fsmeter.store import default_db_path, open_store, tidy

    p = Path(ref)
    if ref.endswith(".json") and os.path.isfile(p):  # os.path: a name too long is no file
        from fsmeter.report.export import read_campaign_document, tidy_from_document

        doc = read_campaign_document(p)
        cells = {c["id"]: c for c in doc["cells"]}
        trials = {t["id"]: t for t in doc["trials"]}
        rows = [
            (
                cells[trials[e["trial_id"]]["cell_id"]]["workload"],
                cells[trials[e["trial_id"]]["cell_id"]]["factors"],
                e.get("extra"),
            )
            for e in doc.get("environment", [])
        ]
        return Side(
            f"{p.name} ({doc['campaign']['name']})", tidy_from_document(doc), _jobs_from(rows), _guests_from(rows)
        )
    path = default_db_path(db)
    with open_store(path, create=False) as store:
        camp = store.campaign(ref)
        rows = [
            (r["workload"], json.loads(r["factors"]), r["extra"])
            for r in store.conn.execute(
                "SELECT c.workload, c.factors, e.extra FROM environment e JOIN trials t ON t.id = e.trial_id "
                "JOIN cells c ON c.id = t.cell_id WHERE c.campaign_id = ? ORDER BY c.idx, t.number",
                (camp["id"],),
            )
        ]
    return Side(f"campaign {camp['id']} ({camp['name']})", tidy(path, camp["id"]), _jobs_from(rows), _guests_from(rows))


def _samples(side: Side) -> dict:
    """(workload, config key, phase, metric) -> (kept values, unit, higher_is_better)."""
    from fsmeter.store import TIDY_COLUMNS

    df = side.tidy
    factors = [c for c in df.columns if c not in TIDY_COLUMNS]
    out: dict = {}
    for r in df.to_dict("records"):
        key = (r["workload"], _config_key(r, factors), r["phase"], r["metric"])
        vals, _, _ = out.setdefault(key, ([], r["unit"], bool(r["higher_is_better"])))
        v = r["value"]
        if is_kept(r["status"], r["discarded"], v):
            vals.append(float(v))
    return out


def _diff(a: dict, b: dict, prefix: str = "") -> list:
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _diff(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}: {json.dumps(va)} -> {json.dumps(vb)}")
    return out


CORRECTIONS = ("holm", "none")


def _correct(rows: list, alpha: float, method: str) -> None:
    """Adjust the p-values of the tested rows for the family of tests; demote verdicts that no longer hold."""
    tested = [r for r in rows if not r.verdict.startswith("not tested") and not math.isnan(r.p)]
    if method == "none" or not tested:
        for r in tested:
            r.p_adj = r.p
        return
    from statsmodels.stats.multitest import multipletests

    reject, p_adj, _, _ = multipletests([r.p for r in tested], alpha=alpha, method=method)
    for r, rej, pa in zip(tested, reject, p_adj):
        r.p_adj = float(pa)
        if not rej and r.verdict in ("regression", "improvement"):
            r.verdict = "no significant change"


def check_options(threshold_pct: float, alpha: float, correction: str) -> None:
    """The decision rule's options, checked before anything is read: a threshold that is not a finite
    number >= 0 (nan compared false with every change, so nothing was ever a regression), an alpha outside
    (0, 1), an unknown correction."""
    if correction not in CORRECTIONS:
        raise UserError(f"--correction {correction}: must be one of {', '.join(CORRECTIONS)}")
    if not (math.isfinite(threshold_pct) and threshold_pct >= 0):
        raise UserError(f"--threshold {threshold_pct}: give a finite number >= 0 (percent of A's mean)")
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha}: must be between 0 and 1 (e.g. 0.05)")


def compare_runs(
    a: Side, b: Side, threshold_pct: float = 10.0, alpha: float = 0.05, correction: str = "holm"
) -> Result:
    check_options(threshold_pct, alpha, correction)
    sa, sb = _samples(a), _samples(b)
    res = Result(a.label, b.label, threshold_pct, alpha, correction)
    bad_configs = set()
    for key in sorted(set(a.jobs) & set(b.jobs)):
        d = _diff(a.jobs[key], b.jobs[key])
        if d:
            bad_configs.add(key)
            res.mismatches.append((key[0], _config_label(key[1]), "; ".join(d)))
    # A configuration run in a guest is never compared with one run on the host (another I/O path), and
    # figures from an emulated guest (TCG) measure the emulator: listed, not tested.
    for key in sorted(set(a.jobs) | set(b.jobs)):
        ga, gb = a.guests.get(key), b.guests.get(key)
        if key in a.jobs and key in b.jobs and (ga is None) != (gb is None):
            bad_configs.add(key)
            res.mismatches.append(
                (
                    key[0],
                    _config_label(key[1]),
                    "one side ran in a guest (virtual machine), the other on the host: not comparable",
                )
            )
    emulated = {k for side in (a, b) for k, g in side.guests.items() if g.get("emulated")}
    name = lambda k: f"{k[0]} / {_config_label(k[1])} / {k[2]}.{k[3]}"  # noqa: E731
    res.only_a = [name(k) for k in sa if k not in sb]
    res.only_b = [name(k) for k in sb if k not in sa]
    for key in [k for k in sa if k in sb]:
        if (key[0], key[1]) in bad_configs:
            continue
        (va, unit, hib), (vb, _, _) = sa[key], sb[key]
        nan = math.nan
        if len(va) < 2 or len(vb) < 2 or (key[0], key[1]) in emulated:
            ma = sum(va) / len(va) if va else nan
            mb = sum(vb) / len(vb) if vb else nan
            ch = 100.0 * (mb - ma) / abs(ma) if va and vb and ma else nan
            verdict = "not tested (emulated)" if (key[0], key[1]) in emulated else "not tested"
            res.rows.append(
                Row(
                    key[0],
                    _config_label(key[1]),
                    key[2],
                    key[3],
                    unit,
                    hib,
                    len(va),
                    len(vb),
                    ma,
                    mb,
                    nan,
                    nan,
                    ch,
                    nan,
                    verdict,
                )
            )
            continue
        c = compare(vb, va, hib, alpha, threshold_pct)  # B against the baseline A
        verdict = {"slower": "regression", "faster": "improvement"}.get(c.verdict, "no significant change")
        res.rows.append(
            Row(
                key[0],
                _config_label(key[1]),
                key[2],
                key[3],
                unit,
                hib,
                len(va),
                len(vb),
                c.mean_b,
                c.mean_a,
                c.ci_b.half_width,
                c.ci_a.half_width,
                c.rel_diff_pct,
                c.p_value,
                verdict,
            )
        )
    if not res.rows:
        why = "; ".join(f"{w} / {cfg}: {d}" for w, cfg, d in res.mismatches[:3])
        raise UserError(
            f"nothing to compare between {a.label} and {b.label}: no workload, phase, metric and factor "
            "levels in common"
            + (f" with the same parameters (differ: {why})" if why else "")
            + "; compare runs of the same campaign file"
        )
    _correct(res.rows, alpha, correction)
    return res


def result_table(res: Result):
    from rich.table import Table

    from fsmeter.report.data import fmt_num

    corr = (
        f"Holm-corrected over {sum(1 for r in res.rows if not math.isnan(r.p))} tests"
        if res.correction == "holm"
        else "no multiple-test correction"
    )
    t = Table(
        title=f"A = {res.a}  →  B = {res.b}   (Welch t-test, alpha {res.alpha:g}, {corr}, "
        f"threshold {res.threshold_pct:g}%)",
        title_justify="left",
    )
    padj = "p (Holm)" if res.correction == "holm" else "p"
    for col in ("workload", "configuration", "metric", "A mean ± CI", "B mean ± CI", "change", "p", padj, "verdict"):
        if col == "p" and res.correction != "holm":
            continue
        t.add_column(col, justify="right" if col in ("change", "p", padj) else "left", overflow="fold")
    style = {
        "regression": "bold red",
        "improvement": "green",
        "no significant change": "",
        "not tested": "yellow",
        "not tested (emulated)": "yellow",
    }
    for r in res.rows:
        arrow = "↑" if r.higher_is_better else "↓"
        ci = lambda m, h, n: f"{fmt_num(m)} ± {fmt_num(h)} (n={n})"  # noqa: E731
        v = f"[{style[r.verdict]}]{r.verdict}[/]" if style[r.verdict] else r.verdict
        t.add_row(
            r.workload,
            r.config,
            f"{r.key} ({r.unit}) {arrow}",
            ci(r.mean_a, r.hw_a, r.n_a),
            ci(r.mean_b, r.hw_b, r.n_b),
            "-" if math.isnan(r.change_pct) else f"{r.change_pct:+.1f}%",
            *(["-" if math.isnan(r.p) else f"{r.p:.3g}"] if res.correction == "holm" else []),
            "-" if math.isnan(r.p_adj) else f"{r.p_adj:.3g}",
            v,
        )
    return t
