"""order = "interleaved": the cells of a workload take turns trial by trial, in alternating order (null backend)."""

from __future__ import annotations

from campaigns import FAST, dir_campaign, fsm
from fsmeter.store import open_store


def _run(tmp_path, order_line: str, n: int = 3):
    work = tmp_path / "work"
    work.mkdir()
    f = tmp_path / "c.toml"
    f.write_text(
        dir_campaign(
            work,
            f"""\
        {order_line}
        [factors]
        threads = [1, 2, 3]
        [[workloads]]
        name = "seq-read"
        params = {{ {FAST} }}
        [[workloads]]
        name = "seq-write"
        params = {{ {FAST} }}
        [repetitions]
        policy = "fixed"
        n = {n}
        """,
        )
    )
    db = tmp_path / "r.sqlite"
    r = fsm("campaign", "run", f, "--db", db, "-q")
    assert r.returncode == 0, r.stderr
    store = open_store(db)
    rows = store.conn.execute(
        "SELECT c.workload, c.factors, t.number, c.status FROM trials t JOIN cells c ON c.id = t.cell_id ORDER BY t.id"
    ).fetchall()
    return [(r[0], int(r[1].split(":")[-1].strip(" }")), r[2]) for r in rows], {r[3] for r in rows}


def test_interleaved_cells_take_turns_in_alternating_order(tmp_path, scratch):
    order, statuses = _run(tmp_path, 'order = "interleaved"')
    assert statuses == {"done"}
    rounds = [(1, 2, 3), (3, 2, 1), (1, 2, 3)]  # threads level of the cell running each trial, round by round
    expected = [(wl, t, i + 1) for wl in ("seq-read", "seq-write") for i, rnd in enumerate(rounds) for t in rnd]
    assert order == expected


def test_default_order_runs_cell_after_cell(tmp_path, scratch):
    order, _ = _run(tmp_path, "", n=2)
    assert order[:4] == [("seq-read", 1, 1), ("seq-read", 1, 2), ("seq-read", 2, 1), ("seq-read", 2, 2)]
