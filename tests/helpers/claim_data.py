"""Small studies and claim frames with a known answer, for the tests of the decision rules and gates.

s = study([{"id": "C", "kind": "ordering", "tiers": [["xfs"], ["ext3"]]}], rules={"min_difference_pct": 10})
f = summary_frame({("xfs", "a"): (110, 1, 10), ("ext3", "a"): (100, 1, 10)})
ClaimChecker(s, f, paper=True).check_all()
"""

from __future__ import annotations

import pandas as pd
from fsmeter.study.model import Study

#: A re-run's regime that passes every data gate (long phases, a quiet machine, reads from the device).
QUIET = {"phase_s": 30.0, "other_cpu_share": 0.01, "cache_read_share": 0.0, "cpus_online": 2, "cpu_mhz": 2400.0}


def study(claims: list[dict], rules: dict | None = None, hardware: list | None = None, **info) -> Study:
    """A study with one workload "w", the configurations the tiers name, and these claims (each gets
    says, metrics and an id unless given)."""
    configs = sorted(
        {
            str(x)
            for c in claims
            for t in c.get("tiers", [])
            for x in t
            if c.get("compare", "filesystem") == "filesystem"
        }
        | {"ext3", "xfs"}
    )
    full = []
    for i, c in enumerate(claims):
        full.append({"id": f"C{i}", "says": "a claim", "metrics": ["run.x"], **c})
    doc = {
        "study": {
            "slug": "test",
            "title": "test",
            "citation": "test",
            "summary": "test",
            "families": ["access"],
            **info,
        },
        "rules": rules or {},
        "hardware": hardware or [],
        "scales": {
            "paper": {"target_size": "1G", "repetitions": {"policy": "fixed", "n": 3}},
            "quick": {"target_size": "1G", "repetitions": {"policy": "fixed", "n": 3}},
        },
        "workloads": [{"id": "w", "base": "seq-read", "regime": "disk"}],
        "configurations": [
            {"id": c, "filesystem": c if c in ("ext2", "ext3", "ext4", "xfs", "btrfs") else "ext4"} for c in configs
        ],
        "claims": full,
    }
    return Study.model_validate(doc)


def summary_frame(cells: dict, **extra) -> pd.DataFrame:
    """cells: {(filesystem, case): (mean, sd, n)}: published summaries (one row each), factor `case`."""
    return pd.DataFrame(
        [
            dict(
                workload="w",
                metric_key="run.x",
                higher_is_better=True,
                filesystem=fs,
                case=c,
                value=m,
                sd=sd,
                n=n,
                **extra,
            )
            for (fs, c), (m, sd, n) in cells.items()
        ]
    )


def runs_frame(cells: dict, regime: dict | None = None, **extra) -> pd.DataFrame:
    """cells: {(filesystem, case): [trial values]}: a re-run's kept trials, with ``regime`` (default QUIET)
    on every row; a regime key set to None leaves its column out (not measured)."""
    reg = dict(QUIET if regime is None else regime)
    reg = {k: v for k, v in reg.items() if v is not None}
    rows = []
    for (fs, c), values in cells.items():
        for i, v in enumerate(values):
            rows.append(
                dict(
                    workload="w",
                    metric_key="run.x",
                    higher_is_better=True,
                    filesystem=fs,
                    case=c,
                    trial=i + 1,
                    value=v,
                    **reg,
                    **extra,
                )
            )
    return pd.DataFrame(rows)
