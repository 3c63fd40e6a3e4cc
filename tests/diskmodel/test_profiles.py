"""Disk-model profiles: every shipped one loads, cites a known source for each number, and describes;
zones made from published rates are checked by hand; bad profiles give one line naming the field."""

from __future__ import annotations

import math

import pytest
from fsmeter.diskmodel.profiles import (
    describe,
    drive_spec,
    expected_figures,
    load_profile,
    make_zones,
    profile_names,
    switch_time_ms,
)
from fsmeter.errors import UserError

REQUIRED = {
    "seagate-st39102lw",  # Wettstein's disk
    "seagate-st3500641as",  # Layton's
    "hitachi-hds725050kla360",  # a 500 GB 7,200 rpm SATA drive for gus3
    "wdc-wd2500ks",  # Lourdas'
    "ata-80gb-2001",  # Bryant's small machine (stand-in)
    "ibm-dnes-309170w",  # Bryant's medium machine (stand-in)
}


def test_the_studies_disks_have_profiles():
    assert REQUIRED <= set(profile_names())


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_each_profile_describes_and_its_expectations_are_positive(name):
    p = load_profile(name)
    fig = describe(p)
    assert fig["capacity_sectors"] == p.geometry.capacity_sectors
    exp = expected_figures(p, fig)
    assert set(exp) == {
        "random_4k_read_iops",
        "seq_outer_read_mb_s",
        "seq_inner_read_mb_s",
        "track_to_track_seek_ms",
        "full_stroke_seek_ms",
    }
    assert all(v["expected"] > 0 for v in exp.values())
    assert fig["outer_sustained_mb_s"] > fig["inner_sustained_mb_s"]
    if p.stand_in_for:
        assert len(p.stand_in_for) > 40  # says what it stands in for, and why


def test_the_disksim_profiles_state_no_assumption_and_the_others_list_theirs():
    assert load_profile("seagate-st39102lw").assumptions() == []
    assert load_profile("ibm-dnes-309170w").assumptions() == []
    assumed = load_profile("seagate-st3500641as").assumptions()
    assert any(a.startswith("seek.track_to_track_ms") for a in assumed)
    assert not any(a.startswith("seek.average_ms") for a in assumed)  # the 11 ms average has a source


def test_the_cheetah_expectation_is_seek_plus_half_a_turn_plus_transfer():
    p = load_profile("seagate-st39102lw")
    fig = describe(p)
    exp = expected_figures(p, fig)["random_4k_read_iops"]["expected"]
    # DiskSim's curve averages 5.47 ms over cylinder pairs; 10,045 rpm is 5.973 ms a turn; the read
    # overhead is 0.284 ms; 4 KiB is about 0.22 ms of media: 1 / 8.96 ms = 111.6 IOPS
    assert abs(fig["seek"]["average_ms"] - 5.468) < 0.01
    assert abs(fig["revolution_ms"] - 60e3 / 10045) < 1e-9
    assert (
        abs(exp - 1000 / (0.28362 + fig["seek"]["average_ms"] + fig["revolution_ms"] / 2 + fig["transfer_4k_ms"]))
        < 1e-9
    )
    assert 110 < exp < 113


def test_zones_from_published_rates_by_hand():
    p = load_profile("hitachi-hds725050kla360")
    zones = make_zones(p)
    assert len(zones) == 30
    # 76.3 MB/s at 7,200 rpm: 76.3e6 x (60 / 7200) / 512 = 1241.9 sectors a track; 36.5 MB/s: 594.1
    assert zones[0]["sectors_per_track"] == 1242
    assert zones[-1]["sectors_per_track"] == 594
    # switch time from sustained 64.8 of 76.3 MB/s: 8.333 ms x (76.3 / 64.8 - 1) = 1.479 ms
    assert abs(switch_time_ms(p) - 8.3333333 * (76.3 / 64.8 - 1)) < 1e-6
    assert zones[0]["track_skew"] == math.ceil(1.4789 / 8.33333 * 1242)
    cyl = zones[0]["last_cylinder"] + 1
    assert cyl * 10 * sum(z["sectors_per_track"] for z in zones) >= 976773168
    # the model's outer sustained rate then matches Hitachi's 64.8 MB/s within the skew's rounding
    fig = describe(p)
    assert abs(fig["outer_sustained_mb_s"] - 64.8) / 64.8 < 0.02
    assert abs(fig["inner_sustained_mb_s"] - 31.0) / 31.0 < 0.02
    assert drive_spec(p)["zones"] == zones


def _profile(tmp_path, text):
    path = tmp_path / "x.toml"
    path.write_text(text)
    return str(path)


BASE = """
name = "x"
drive = "d"
year = 2000
interface = "i"
description = "d"
[sources]
s = "a source"
[geometry]
source = "s"
rpm = 7200
surfaces = 2
zones = [{ first_cylinder = 0, last_cylinder = 999, sectors_per_track = 300 }]
[seek]
source = "s"
track_to_track_ms = 1.0
average_ms = 8.0
full_stroke_ms = 15.0
[overhead]
source = "s"
[interface_rate]
source = "s"
bus_mb_s = 100
[cache]
source = "s"
segments = 2
segment_sectors = 256
read_ahead_sectors = 256
write_cache = false
write_cache_sectors = 0
[queue]
source = "s"
policy = "fifo"
depth = 1
"""


def test_a_valid_profile_file_loads_and_describes(tmp_path):
    p = load_profile(_profile(tmp_path, BASE))
    assert describe(p)["capacity_sectors"] == 1000 * 2 * 300


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('source = "s"\nrpm', 'source = "nope"\nrpm'), "geometry.source: source 'nope' is not in [sources]"),
        (("bus_mb_s = 100", "bus_mb_s = 100\nbaud = 3"), "interface_rate.baud: unknown field"),
        (("rpm = 7200", "rpm = -1"), "geometry.rpm"),
        (("average_ms = 8.0", "average_ms = 14.9"), "no increasing curve"),
        (("read_ahead_sectors = 256", "read_ahead_sectors = 999"), "cache.read_ahead_sectors"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_field(tmp_path, change, message):
    text = BASE.replace(*change)
    with pytest.raises(UserError) as exc:
        describe(load_profile(_profile(tmp_path, text)))
    assert message in exc.value.message
    assert "\n" not in exc.value.message


def test_an_unknown_model_names_the_known_ones():
    with pytest.raises(UserError) as exc:
        load_profile("cheetah-9000")
    assert "seagate-st39102lw" in exc.value.message
