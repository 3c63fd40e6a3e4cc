"""Do two back-to-back `fsmeter compare` runs agree? (root: loop images)

Runs the default comparison twice into one store, then compares run 2 against run 1 the way
`fsmeter compare-runs 1 2` does (Welch's t-test at alpha 0.05, Holm-corrected over all metrics, and the
10% practical threshold), on
each workload's headline metric per filesystem, and also counts the changes over every stored
metric (latency percentiles and CPU share included), as the command line reports them. The peer
of this case is fsmeter's own first run. Rows: wall time of each run, cells the matrix could
resolve (CI within +-25%), and significant changes between the runs (goal: none).

The same by hand, as the README shows:
    sudo fsmeter compare --db ab.sqlite && sudo fsmeter compare --db ab.sqlite
    fsmeter compare-runs 1 2 --db ab.sqlite
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def run(ctx) -> list:
    if os.geteuid() != 0:
        return [ctx.row("compare twice", "skipped", None, None, "-", notes="needs root (loop images)")]
    from fsmeter.report.compare_runs import compare_runs, load_side
    from fsmeter.report.data import build_view
    from fsmeter.report.matrix import build_matrix

    rows = []
    with tempfile.TemporaryDirectory(prefix="fsmeter-bench-compare-", dir="/var/tmp") as d:
        db = Path(d) / "ab.sqlite"
        args = [ctx.python, "-m", "fsmeter", "compare", "-q", "--db", db]
        if ctx.quick:
            args += ["--filesystems", "ext4,xfs", "--workloads", "seq-read,postmark-quick"]
        walls, resolved = [], []
        for i in (1, 2):
            res = ctx.cmd(args, timeout=3600)
            walls.append(res.wall_s)
            mx = build_matrix(build_view(db, str(i)))
            cells = [c for r in mx.rows for c in r.cells.values()]
            resolved.append((sum(c.mark != "unresolved" for c in cells), len(cells)))
            rows.append(
                ctx.row(
                    "compare twice",
                    f"run {i} wall time (s)",
                    res.wall_s,
                    None,
                    "-",
                    higher_is_better=False,
                    notes="goal: about 300 s on a 2-core machine",
                )
            )
            rows.append(
                ctx.row(
                    "compare twice",
                    f"run {i} cells resolved (CI within ±25%)",
                    resolved[-1][0],
                    None,
                    "-",
                    notes=f"of {resolved[-1][1]}; outlier trials: {len(mx.outliers)}",
                )
            )
        res = compare_runs(load_side("1", db), load_side("2", db), 10.0, 0.05)
        raw = compare_runs(load_side("1", db), load_side("2", db), 10.0, 0.05, correction="none")
        raw_changed = [r for r in raw.rows if r.verdict in ("regression", "improvement")]
        view = build_view(db, "2")
        heads = {(w.workload, w.headline.key) for w in view.workloads}
        tested = [r for r in res.rows if r.verdict != "not tested"]
        head_rows = [r for r in tested if (r.workload, r.key) in heads]
        changed = [r for r in head_rows if r.verdict in ("regression", "improvement")]
        all_changed = [r for r in tested if r.verdict in ("regression", "improvement")]
        rows.append(
            ctx.row(
                "compare twice",
                "headline metrics changed (run 2 vs 1)",
                len(changed),
                None,
                "run 1",
                higher_is_better=False,
                notes=f"of {len(head_rows)} tested (goal 0): "
                + "; ".join(f"{r.workload}/{r.config} {r.change_pct:+.0f}%" for r in changed[:6]),
            )
        )
        rows.append(
            ctx.row(
                "compare twice",
                "all metrics changed (compare-runs)",
                len(all_changed),
                None,
                "run 1",
                higher_is_better=False,
                notes=f"of {len(tested)} tested, Holm-corrected (goal 0); per-metric tests without "
                f"correction would flag {len(raw_changed)}",
            )
        )
    return rows
