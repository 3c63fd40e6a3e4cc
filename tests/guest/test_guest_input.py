"""A guest's inputs are checked before a campaign is stored or QEMU started: a kernel level names a Linux
kernel image (its x86 boot header), `vcpus` is a whole number within the host's CPUs (not a boolean), and
`memory` a size within the host's memory."""

from __future__ import annotations

import os
import sys

import pytest
from fsmeter.campaign import parse_campaign
from fsmeter.errors import UserError
from fsmeter.guest import kernels
from fsmeter.hostinfo import cpus_online, mem_total_bytes
from fsmeter.runner import check_guest_resources
from fsmeter_cli import fsm

CAMPAIGN = """name = "g"
min_phase_s = 0
[target]
kind = "loop"
size = "256M"
[[filesystems]]
name = "ext4"
[factors]
kernel = [{kernel}]
{factors}
[[workloads]]
name = "seq-write"
params = {{ file_size = "4M", duration_s = 1, warmup_s = 0 }}
{guest}
"""

IMAGE = bytes(kernels.BOOT_MAGIC_OFFSET) + kernels.BOOT_MAGIC + bytes(512)


def campaign(kernel: str, guest: str = "", factors: str = "") -> str:
    return CAMPAIGN.format(kernel=kernel, guest=guest, factors=factors)


@pytest.fixture
def image(tmp_path):
    p = tmp_path / "bzImage"
    p.write_bytes(IMAGE)
    return p


@pytest.mark.parametrize("what", ["/etc/passwd", "text", "short", "exe", "zeros"])
def test_a_file_that_is_not_a_kernel_image_is_refused(tmp_path, what):
    path = {
        "/etc/passwd": "/etc/passwd",
        "exe": sys.executable,
        "text": tmp_path / "notes.txt",
        "short": tmp_path / "short",
        "zeros": tmp_path / "zeros",
    }[what]
    if what == "text":
        path.write_text("HdrS " * 1000)  # the magic somewhere, not at 0x202
    elif what == "short":
        path.write_bytes(b"HdrS")
    elif what == "zeros":
        path.write_bytes(bytes(1 << 16))
    with pytest.raises(UserError) as e:
        kernels.resolve(str(path))
    assert "not a Linux kernel image" in e.value.message and "0x202" in e.value.message


def test_a_kernel_image_passes_and_so_does_the_hosts(image):
    assert kernels.resolve(str(image)).image == str(image)
    for version in kernels.installed():
        assert kernels.image_problem(os.path.join(kernels.BOOT, f"vmlinuz-{version}")) is None, version


def test_campaign_kernel_level_is_checked_with_its_line(tmp_path):
    with pytest.raises(UserError, match=r"g.toml:8: factors: kernel: /etc/passwd: not a Linux kernel image"):
        parse_campaign(campaign('"/etc/passwd"'), "g.toml")


def test_campaign_run_with_a_bad_kernel_stores_nothing(tmp_path):
    c = tmp_path / "g.toml"
    c.write_text(campaign(f'"{sys.executable}"'))
    db = tmp_path / "s.sqlite"
    r = fsm("campaign", "run", c, "--db", db, "--no-wait", "-q", cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "not a Linux kernel image" in lines[0], r.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    "guest, words",
    [
        ("vcpus = true", "vcpus: True is not a whole number of CPUs"),
        ('vcpus = "2"', "is not a whole number of CPUs"),
        ("vcpus = 0", "give 1 to"),
        ('memory = "9999999999999999999999G"', "at most 1 PiB"),
        ('memory = "1M"', "at least 256M"),
        ("memory = true", "not a size"),
        ("boot_timeout_s = inf", "boot_timeout_s"),
        ('disk_size = "9999999999999999999999G"', "disk_size"),
    ],
)
def test_guest_section_types_and_bounds(image, guest, words):
    with pytest.raises(UserError) as e:
        parse_campaign(campaign(f'"{image}"', guest="[guest]\n" + guest), "g.toml")
    assert words in e.value.message


@pytest.mark.parametrize(
    "factors, words",
    [("guest_vcpus = [1, true]", "not a whole number"), ('guest_memory = ["1G", "lots"]', "not a size")],
)
def test_guest_factor_levels(image, factors, words):
    with pytest.raises(UserError, match=words):
        parse_campaign(campaign(f'"{image}"', factors=factors))


def test_guest_cpus_and_memory_within_the_hosts(image):
    too_many = cpus_online() + 1
    too_much = f"{(mem_total_bytes() >> 20) + 1024}M"
    for guest, factors, where in (
        (f"[guest]\nvcpus = {too_many}", "", "guest.vcpus"),
        (f'[guest]\nmemory = "{too_much}"', "", "guest.memory"),
        ("", f"guest_vcpus = [1, {too_many}]", "factors.guest_vcpus"),
        ("", f'guest_memory = ["1G", "{too_much}"]', "factors.guest_memory"),
    ):
        c = parse_campaign(campaign(f'"{image}"', guest=guest, factors=factors))  # a guest may parse it
        with pytest.raises(UserError) as e:
            check_guest_resources(c)  # the host does not start it
        assert e.value.message.startswith(where) and "this host" in e.value.message
    check_guest_resources(parse_campaign(campaign(f'"{image}"', guest='[guest]\nvcpus = 1\nmemory = "256M"')))
