"""fsmeter.diskmodel.stats: the difference of two daemon snapshots, its percentiles and the disturbed rule,
checked by hand."""

from __future__ import annotations

from fsmeter.diskmodel.stats import DISTURBED_SHARE, disturbed, histogram_since, merge, percentile, since


def _snap(reads: int, service_ns: int, lateness: list, writes: int = 0) -> dict:
    return {
        "format": "fsmeter-diskmodel-stats",
        "kinds": {
            "read": {"count": reads, "bytes": 4096 * reads, "hits": 0, "service_ns": service_ns, "seek_ns": 0},
            "write": {"count": writes, "bytes": 0, "hits": 0, "service_ns": 0, "seek_ns": 0},
        },
        "lateness_ns": lateness,
        "service_ns": [],
        "early_replies": 0,
    }


def test_histogram_since_subtracts_bucket_by_bucket():
    before = _snap(2, 0, [[1000, 2]])
    after = _snap(7, 0, [[1000, 3], [5000, 4]])
    assert histogram_since(before, after, "lateness_ns") == [(1000, 1), (5000, 4)]


def test_percentile_is_the_nearest_rank_of_the_buckets():
    # 10 values: 1 x 1, 8 x 2, 1 x 9 -> p50 = 2 (5th value), p90 = 2 (9th), p99 = 9 (ceil(9.9) = 10th)
    hist = [(1, 1), (2, 8), (9, 1)]
    assert percentile(hist, 0.5) == 2
    assert percentile(hist, 0.9) == 2
    assert percentile(hist, 0.99) == 9
    assert percentile([], 0.5) is None


def test_since_gives_the_window_mean_service_and_lateness():
    before = _snap(10, 50_000_000, [[1_000, 10]])
    # 100 more reads, 800 ms of modelled service (8 ms each); lateness: 98 at 10 us, 2 at 2 ms
    after = _snap(110, 850_000_000, [[1_000, 10], [10_000, 98], [2_000_000, 2]])
    s = since(before, after)
    assert s["requests"] == 100
    assert abs(s["mean_service_ms"] - 8.0) < 1e-12
    assert s["lateness_p50_ms"] == 0.01
    assert s["lateness_p99_ms"] == 2.0  # the 99th of 100 values is one of the two at 2 ms
    # 2 ms is 25% of 8 ms: over the 5% threshold
    assert s["disturbed"] is True


def test_the_disturbed_threshold_is_five_percent_of_the_mean_service_time():
    assert DISTURBED_SHARE == 0.05
    assert disturbed(0.39, 8.0) is False
    assert disturbed(0.41, 8.0) is True
    assert disturbed(None, 8.0) is None
    assert disturbed(0.1, None) is None
    # a stall: p99 well within 5%, but the replies' lateness added up is over 5% of their service
    assert disturbed(0.04, 2.0, 0.049) is False
    assert disturbed(0.04, 2.0, 0.051) is True


def test_a_stall_that_the_p99_misses_is_disturbed_by_the_lateness_added_up():
    """As the gus3 trial whose daemon stopped for 16.5 minutes: 6,800 replies, 6,780 of them 10 us
    late and 20 of them 991,600 ms late. The p99 (10 us) is far under 5% of a 2 ms service; the
    lateness added up (19,832 s) is 146 times the service added up (13.6 s)."""
    before = _snap(0, 0, [])
    after = _snap(6_800, 6_800 * 2_000_000, [[10_000, 6_780], [991_600_000_000, 20]])
    s = since(before, after)
    assert s["lateness_p99_ms"] == 0.01 and s["lateness_max_ms"] == 991_600.0
    assert abs(s["lateness_share"] - (6_780 * 10_000 + 20 * 991_600_000_000) / (6_800 * 2_000_000)) < 1e-9
    assert s["disturbed"] is True
    # without the stall the same phase is not disturbed
    calm = since(before, _snap(6_800, 6_800 * 2_000_000, [[10_000, 6_800]]))
    assert calm["disturbed"] is False and calm["lateness_share"] < 0.01


def test_two_drives_merge_into_one_snapshot_whose_window_is_both_drives():
    """A data drive and a journal drive: counts and sums add per kind, histograms add bucket by bucket,
    and a window over merged snapshots is the window over both drives' requests."""
    data0, journal0 = _snap(10, 80_000_000, [[1_000, 10]]), _snap(0, 0, [], writes=0)
    data1 = _snap(20, 160_000_000, [[1_000, 20]])
    journal1 = _snap(0, 0, [[1_000, 5], [3_000_000, 5]], writes=10)
    journal1["kinds"]["write"]["service_ns"] = 40_000_000
    m = merge([data1, journal1])
    assert m["kinds"]["read"]["count"] == 20 and m["kinds"]["write"]["count"] == 10
    assert m["lateness_ns"] == [[1_000, 25], [3_000_000, 5]]
    s = since(merge([data0, journal0]), m)
    assert s["requests"] == 20  # 10 reads on the data drive, 10 writes on the journal's
    assert abs(s["mean_service_ms"] - 6.0) < 1e-12  # (80 + 40) ms over 20 requests
    assert s["lateness_p99_ms"] == 3.0  # the journal drive's late replies count
    assert merge([data1]) is data1


def test_the_lateness_parts_and_the_pollers_cpu_come_out_of_the_window():
    """The drive's wake-up and its wait for the image's I/O, as p99 over the window; the idle pollers'
    CPU seconds as the difference of their clocks (a merged snapshot sums both drives')."""
    before = _snap(0, 0, [])
    before.update(wake_ns=[[500, 10]], image_wait_ns=[[100, 10]], state={"idle_poll_cpu_ns": 2_000_000_000})
    after = _snap(100, 800_000_000, [[1_000, 100]])
    after.update(
        wake_ns=[[500, 10], [800, 99], [90_000, 1]],
        image_wait_ns=[[100, 10], [200, 100]],
        state={"idle_poll_cpu_ns": 5_500_000_000},
    )
    s = since(before, after)
    assert s["wake_p99_ms"] == 0.0008  # the 99th of 100: one late wake-up is the 1% beyond
    assert s["image_wait_p99_ms"] == 0.0002
    assert s["idle_poll_cpu_s"] == 3.5
    journal = _snap(0, 0, [])
    journal["state"] = {"idle_poll_cpu_ns": 0}
    assert merge([after, journal])["idle_poll_cpu_ns"] == 5_500_000_000
    # A daemon without pollers (or from before them): no poll time, and no parts it does not report.
    old = since(_snap(0, 0, []), _snap(10, 80_000_000, [[1_000, 10]]))
    assert old["idle_poll_cpu_s"] == 0 and "wake_p99_ms" not in old
