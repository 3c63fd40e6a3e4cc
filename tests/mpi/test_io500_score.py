"""The IO500 score (fsmeter.mpi.io500.score), checked by hand, and find's expected match count by
construction; no MPI needed."""

from __future__ import annotations

import math

import pytest
from fsmeter.mpi.io500 import PHASES, expected_find, geometric_mean, hard_file_names, phase_score, score


def test_score_by_hand():
    # ior phases: 1, 4, 2, 8 GiB/s -> geometric mean (1*4*2*8)^(1/4) = 64^(1/4) = 2*sqrt(2) = 2.828427...
    # mdtest and find: eight phases, four of 10 kIOPS and four of 1000 -> (10^4 * 1000^4)^(1/8) = 10^2 = 100
    # total = sqrt(2.828427 * 100) = 16.817928...
    bw = {"ior-easy-write": 1.0, "ior-hard-write": 4.0, "ior-easy-read": 2.0, "ior-hard-read": 8.0}
    md_names = [n for n, g, _ in PHASES if g == "md"]
    assert len(md_names) == 8
    md = {n: (10.0 if i % 2 else 1000.0) for i, n in enumerate(md_names)}
    s = score({**bw, **md})
    assert s["bandwidth_GiB_per_s"] == pytest.approx(2.8284271247)
    assert s["metadata_kIOPS"] == pytest.approx(100.0)
    assert s["total"] == pytest.approx(16.8179283051)


def test_a_phase_scoring_zero_is_left_out_of_its_mean_as_io500_does():
    # IO500's calc_score skips a phase whose score is <= 0: (2 * 8)^(1/2) = 4, not 0.
    assert geometric_mean([2.0, 8.0, 0.0]) == pytest.approx(4.0)
    assert geometric_mean([0.0, -1.0]) == 0.0
    s = score({"ior-easy-write": 9.0, "find": 4.0})
    assert s == {
        "bandwidth_GiB_per_s": pytest.approx(9.0),
        "metadata_kIOPS": pytest.approx(4.0),
        "total": pytest.approx(6.0),
    }


def test_phase_order_is_io500s():
    assert [n for n, _, _ in PHASES] == [
        "ior-easy-write",
        "mdtest-easy-write",
        "ior-hard-write",
        "mdtest-hard-write",
        "find",
        "ior-easy-read",
        "mdtest-easy-stat",
        "ior-hard-read",
        "mdtest-hard-stat",
        "mdtest-easy-delete",
        "mdtest-hard-read",
        "mdtest-hard-delete",
    ]


def test_phase_score_units():
    rep = {"elapsed_s": 2.0, "total": {"bytes": 4 << 30, "ops": 3000}}
    assert phase_score("ior-hard-read", rep) == pytest.approx(2.0)  # 4 GiB in 2 s
    assert phase_score("mdtest-easy-stat", rep) == pytest.approx(1.5)  # 3000 ops in 2 s = 1.5 kIOPS
    assert phase_score("find", {"elapsed_s": 0.0, "total": {"bytes": 0, "ops": 5}}) == 0.0


def test_find_expectation_counts_names_holding_01():
    # rank 0 made files L0F120 down to L0F101 (20 of 120): "01" appears in L0F101 only.
    names = hard_file_names(0, 120, 20)
    assert names[0] == "file.mdtest.0.L0F120" and names[-1] == "file.mdtest.0.L0F101" and len(names) == 20
    assert expected_find(1, 120, 20) == 1
    # every file of 2 ranks x 110: L0F1..L0F110 holds 01 in L0F1? no; in 101 (1), 10 (no), 100 (no), 201.. none:
    # the numbers 1..110 whose decimal holds "01": 101 only, per rank.
    assert expected_find(2, 110, 110) == 2
    assert math.isclose(expected_find(3, 1010, 1010), 3 * sum("01" in str(n) for n in range(1, 1011)))
