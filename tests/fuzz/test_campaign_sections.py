"""The campaign loader on the sections added since the first fuzz ([guest] and its factors, kernel levels,
[mpi] ranks, a glusterfs target's volume options): any value gives a planned campaign that the host's own
checks accept or refuse, or one `fsmeter: error:` line. What passes is what a run can use: a kernel level
names a kernel image, a guest's CPUs and memory are whole numbers and sizes within this host's, a volume
option is one line, and ranks that all run here are within its CPUs."""

from __future__ import annotations

import sys

from fsmeter.campaign import dump_toml, parse_campaign, plan
from fsmeter.guest import kernels
from fsmeter.hostinfo import cpus_online, mem_total_bytes
from fsmeter.mpi.launch import local_ranks_limit
from fsmeter.provision.gluster import volume_option_problem
from fsmeter.runner import check_guest_resources, check_local_ranks
from fsmeter.units import parse_size
from fuzz_common import SLOW, result_or_user_error
from hypothesis import given
from hypothesis import strategies as st

HOSTILE = st.one_of(
    st.booleans(),
    st.integers(-(1 << 70), 1 << 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "1G",
            "256M",
            "9999999999999999999999G",
            "１G",
            "1e3",
            "2",
            "0",
            "-1",
            "off\nx",
            "off",
            "a\tb",
            "",
            " ",
            "x" * 300,
        ]
    ),
    st.lists(st.integers(0, 4), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def host_checked(data: dict):
    """What `campaign run` does before it stores anything: parse, plan, and the host's own checks."""
    c = parse_campaign(dump_toml(data), "fuzz.toml")
    cells = plan(c)
    if c.guest is not None:
        check_guest_resources(c)
    check_local_ranks(c)
    return c, cells


def guest_campaign(kernel_level: str, guest: dict, factors: dict) -> dict:
    return {
        "name": "g",
        "target": {"kind": "loop", "size": "256M"},
        "filesystems": [{"name": "ext4"}],
        "factors": {"kernel": [kernel_level], **factors},
        "workloads": [{"name": "seq-write"}],
        "guest": guest,
    }


@SLOW
@given(
    st.sampled_from(["vcpus", "memory", "disk_size", "boot_timeout_s", "disk_cache", "accelerator"]),
    HOSTILE,
    st.sampled_from([{}, {"guest_vcpus": "V"}, {"guest_memory": "V"}]),
)
def test_guest_values(tmp_path_factory, key, value, factor):
    image = tmp_path_factory.mktemp("k") / "bzImage"
    image.write_bytes(bytes(kernels.BOOT_MAGIC_OFFSET) + kernels.BOOT_MAGIC + bytes(64))
    factors = {k: [1 if k == "guest_vcpus" else "1G", value] for k in factor}
    data = guest_campaign(str(image), {key: value}, factors)
    try:
        got, err = result_or_user_error(host_checked, data)
    except ValueError as exc:  # dump_toml cannot write it (NaN keys, ...): not a campaign anyone can write
        assert "TOML" in str(exc) or "key" in str(exc)
        return
    if got is None:
        return
    c, _ = got
    assert isinstance(c.guest.vcpus, int) and not isinstance(c.guest.vcpus, bool)
    assert 1 <= c.guest.vcpus <= cpus_online()
    assert 256 << 20 <= c.guest.memory <= (mem_total_bytes() or c.guest.memory)
    for v in c.factors.get("guest_vcpus", []):
        assert isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= cpus_online()
    for v in c.factors.get("guest_memory", []):
        assert 256 << 20 <= parse_size(v) <= (mem_total_bytes() or parse_size(v))


@SLOW
@given(
    st.one_of(
        st.sampled_from(["/etc/passwd", sys.executable, "/proc/self/exe", "/dev/null", "host", "6.1", "", " "]),
        st.text(max_size=30),
        st.binary(max_size=0x300).map(lambda b: b"\x00" + b),
    )
)
def test_kernel_levels(tmp_path_factory, level):
    if isinstance(level, bytes):  # a file of these bytes, sometimes with the boot header in its place
        path = tmp_path_factory.mktemp("k") / "image"
        path.write_bytes(level)
        level = str(path)
    got, err = result_or_user_error(host_checked, guest_campaign(level, {}, {}))
    if got is not None:
        for cell in got[1]:
            if cell.kernel is not None:  # a guest will boot this: it is a kernel image
                assert kernels.image_problem(kernels.resolve(cell.kernel).image) is None


@SLOW
@given(st.dictionaries(st.text(max_size=40), HOSTILE, max_size=3), HOSTILE)
def test_glusterfs_volume_options_and_ranks(options, ranks):
    data = {
        "name": "g",
        "target": {"kind": "glusterfs", "hosts": 2, "volume_options": options},
        "mpi": {"ranks": ranks},
        "workloads": [{"name": "seq-write"}],
    }
    try:
        got, err = result_or_user_error(host_checked, data)
    except ValueError:
        return  # dump_toml cannot write the drawn keys
    if got is not None:
        c, _ = got
        for key, value in c.target.volume_options.items():
            assert volume_option_problem(key, value) is None
            assert "\n" not in value
        assert 1 <= c.mpi.ranks <= local_ranks_limit()
