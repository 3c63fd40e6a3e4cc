"""bench/fio_examples.py on jobs that fio's random map ends where its draws say (per-direction block sizes):
compared over seeds by their means, on canned rows; the seed put into a job file."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_module import load_bench

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20


@pytest.fixture(scope="module")
def fe():
    return load_bench("fio_examples.py", "fio_examples_bench_stop")


def rows(totals_mib: list, reads: list, writes: list) -> list:
    """(read bytes, read I/Os, write bytes, write I/Os) per seed: whole 1 MiB writes, reads the rest."""
    return [((t - w) * MiB, r, w * MiB, w) for t, r, w in zip(totals_mib, reads, writes)]


def test_means_within_three_standard_errors_are_the_same_distribution(fe):
    # Totals 4, 6 MiB (mean 5, sd sqrt(2)) against 5, 7 (mean 6, sd sqrt(2)): the standard error of the
    # difference is sqrt(2/2 + 2/2) = 1.414 MiB, three of them 4.24 MiB > 1 MiB apart.
    ok, lines = fe.stop_compare({"j": rows([4, 6], [2, 3], [2, 3])}, {"j": rows([5, 7], [3, 3], [2, 4])})
    assert ok
    assert lines[0].startswith(
        "j: random-map stop over 2/2 seeds: same distribution: bytes fsmeter mean 5.00 MiB "
        "(1.41), fio mean 6.00 MiB (1.41)"
    )


def test_a_side_that_always_moves_the_whole_file_is_a_different_distribution(fe):
    # fsmeter 8 MiB every time (sd 0) against fio 4, 6, 4, 6 (mean 5, sd 1.155): three standard errors are
    # 3 * 1.155 / 2 = 1.73 MiB, and the means are 3 MiB apart.
    ok, lines = fe.stop_compare(
        {"j": rows([8] * 4, [4] * 4, [4] * 4)}, {"j": rows([4, 6, 4, 6], [2, 3, 2, 3], [2, 3, 2, 3])}
    )
    assert not ok
    assert (
        "DIFFERENT distribution" in lines[0]
        and "bytes fsmeter mean 8.00 MiB (0.00), fio mean 5.00 MiB (1.15) DIFFERENT" in lines[0]
    )


def test_a_job_without_runs_on_one_side_is_not_alike(fe):
    ok, lines = fe.stop_compare({"j": rows([4], [2], [2])}, {})
    assert not ok and "no runs to compare" in lines[0]


def test_the_seed_goes_into_the_global_section(fe):
    text = "; comment\n[global]\nrw=randrw\n[a]\nsize=1m\n"
    assert fe.with_seed(text, 7, False) == "; comment\n[global]\nrandseed=7\nrw=randrw\n[a]\nsize=1m\n"
    # fio's copy: randrepeat=0 too, else fio up to 3.34 seeds its offsets by the job's number alone.
    assert fe.with_seed(text, 7, True) == "; comment\n[global]\nrandseed=7\nrandrepeat=0\nrw=randrw\n[a]\nsize=1m\n"
    assert fe.with_seed("[a]\nsize=1m\n", 3, False) == "[global]\nrandseed=3\n[a]\nsize=1m\n"


def test_only_jobs_with_the_per_direction_map_are_run_over_seeds(fe):
    doc = {
        "jobs": {
            "a": {"job": {"workload": {"random_map_block": 65536}}},
            "b": {"job": {"workload": {"random_map": True}}},
        }
    }
    assert fe.dir_map_jobs(doc) == ["a"]
