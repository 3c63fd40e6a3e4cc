"""The dirty-page limits set beside a page-cache limit (fsmeter.provision.host.dirty): the machine's ratios
applied to the limit, and the ratios put back afterwards, by the run or by a later cleanup."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fsmeter.provision import HostFactorError, HostFactors, Provisioner, StateFile
from fsmeter.provision.host import applied, find_memory_cgroup
from fsmeter.provision.host.dirty import MIN_DIRTY_BYTES, dirty_limits, scaled_bytes
from fsmeter.provision.undo import cleanup_leftovers

MiB = 1 << 20
VM = "/proc/sys/vm"


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def test_scaled_bytes_hand_checked():
    assert scaled_bytes(768 * MiB, 20, 0, 24 << 30) == 768 * MiB * 20 // 100  # 153.6 MiB
    assert scaled_bytes(768 * MiB, 10, 0, 24 << 30) == 768 * MiB // 10
    # A machine set in bytes: 2 GiB of 24 GiB keeps its proportion, 1/12 of the limit.
    assert scaled_bytes(768 * MiB, 0, 2 << 30, 24 << 30) == 64 * MiB
    assert scaled_bytes(4 * MiB, 20, 0, 24 << 30) == MIN_DIRTY_BYTES  # never under the floor


def _fake_vm(tmp_path, ratio="20", bg="10", nbytes="0", bg_bytes="0"):
    vm = tmp_path / "vm"
    vm.mkdir()
    for name, v in (("dirty_ratio", ratio), ("dirty_background_ratio", bg)):
        (vm / name).write_text(v + "\n")
    for name, v in (("dirty_bytes", nbytes), ("dirty_background_bytes", bg_bytes)):
        (vm / name).write_text(v + "\n")
    return vm


def test_apply_writes_the_bytes_and_records_the_ratio_that_puts_it_back(tmp_path):
    vm = _fake_vm(tmp_path)
    state = StateFile(str(tmp_path))
    with applied(dirty_limits(64 * MiB, state, vm_dir=str(vm))) as host:
        assert _read(vm / "dirty_bytes") == str(64 * MiB * 20 // 100)
        assert _read(vm / "dirty_background_bytes") == str(64 * MiB * 10 // 100)
        recorded = {(os.path.basename(e["path"]), e["old"], e["new"]) for e in state.entries()}
        assert recorded == {("dirty_ratio", "20", "0"), ("dirty_background_ratio", "10", "0")}
        assert host.info() == {"vm_dirty_bytes": 64 * MiB // 5, "vm_dirty_background_bytes": 64 * MiB // 10}
        # What the kernel does on writing a *_bytes file: the ratio reads 0.
        (vm / "dirty_ratio").write_text("0\n")
        (vm / "dirty_background_ratio").write_text("0\n")
    assert _read(vm / "dirty_ratio") == "20" and _read(vm / "dirty_background_ratio") == "10"
    assert state.entries() == []


def test_a_machine_set_in_bytes_gets_its_bytes_back(tmp_path):
    vm = _fake_vm(tmp_path, ratio="0", bg="0", nbytes=str(2 << 30), bg_bytes=str(1 << 30))
    state = StateFile(str(tmp_path))
    with applied(dirty_limits(768 * MiB, state, vm_dir=str(vm))):
        assert int(_read(vm / "dirty_bytes")) < 2 << 30
    assert _read(vm / "dirty_bytes") == str(2 << 30) and _read(vm / "dirty_background_bytes") == str(1 << 30)


def test_real_limits_follow_a_page_cache_limit_and_come_back(root, scratch):
    try:
        find_memory_cgroup()
    except HostFactorError as exc:
        pytest.skip(str(exc))
    before = {n: _read(os.path.join(VM, n)) for n in ("dirty_ratio", "dirty_background_ratio", "dirty_bytes")}
    if before["dirty_ratio"] == "0":
        pytest.skip("this machine sets vm.dirty_bytes: the ratio path is the one tested here")
    ratio = int(before["dirty_ratio"])
    with Provisioner(scratch) as prov, prov.host(HostFactors(page_cache_limit_bytes=128 * MiB)) as host:
        assert int(_read(os.path.join(VM, "dirty_bytes"))) == 128 * MiB * ratio // 100
        assert _read(os.path.join(VM, "dirty_ratio")) == "0"
        assert host.info()["vm_dirty_bytes"] == 128 * MiB * ratio // 100
    after = {n: _read(os.path.join(VM, n)) for n in before}
    assert after == before
    # A run killed while they were set: the next cleanup puts the ratios back from the state file.
    killed = (
        "import os; from fsmeter.provision import StateFile; from fsmeter.provision.host.dirty import dirty_limits; "
        f"[c.apply() for c in dirty_limits({128 * MiB}, StateFile({scratch!r}))]; os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", killed], check=True, timeout=60)
    assert _read(os.path.join(VM, "dirty_ratio")) == "0"
    state = StateFile(scratch)
    assert len(state.entries()) == 2
    cleanup_leftovers(state)
    assert {n: _read(os.path.join(VM, n)) for n in before} == before
