"""After SIGKILL the next start or `fsmeter cleanup` removes exactly the recorded leftovers;
SIGTERM and SIGINT tear down before exit; nothing unrecorded or changed since is touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import typer
from fsmeter.cli import cleanup as cleanup_cli
from fsmeter.provision import Provisioner, StateFile, sysinfo
from fsmeter.provision.undo import cleanup_leftovers
from repo_paths import ROOT
from typer.testing import CliRunner

PYTHON_DIR = str(ROOT / "python")

# Provisions an ext4 loop filesystem with host factors applied, prints its info, then waits to be killed.
CHILD = textwrap.dedent("""
    import json, sys, time
    from fsmeter.provision import Provisioner, TargetSpec, FsConfig, HostFactors
    with Provisioner(sys.argv[1]) as prov:
        mnt = prov.create(TargetSpec(size_bytes=300 << 20), FsConfig(name="ext4", external_journal=True))
        factors = HostFactors(scheduler="mq-deadline", page_cache_limit_bytes=256 << 20)
        with prov.host(factors, mnt) as host:
            open(mnt.path + "/busy", "w").write("x")
            print(json.dumps({**mnt.info(), **host.info()}), flush=True)
            time.sleep(120)
""")


def _start_child(scratch: str) -> tuple[subprocess.Popen, dict]:
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, scratch], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        pytest.fail(f"child failed: {proc.stderr.read()}")
    return proc, json.loads(line)


def _leftovers(info: dict) -> list[str]:
    found = []
    if sysinfo.mounts_at(info["path"]):
        found.append(f"mount {info['path']}")
    for key in ("device", "journal_device"):
        if sysinfo.loop_backing_file(info[key]) in (info["image"], info["journal_image"]):
            found.append(f"loop {info[key]}")
    for key in ("image", "journal_image"):
        if os.path.exists(info[key]):
            found.append(f"image {info[key]}")
    if info["memory_cgroup"] and os.path.exists(info["memory_cgroup"]):
        found.append(f"cgroup {info['memory_cgroup']}")
    return found


def _kill(proc: subprocess.Popen, signum: int) -> None:
    proc.send_signal(signum)
    proc.wait(timeout=60)


@pytest.mark.root
def test_sigkill_leftovers_removed_by_next_start(scratch):
    proc, info = _start_child(scratch)
    _kill(proc, signal.SIGKILL)
    assert len(_leftovers(info)) == 6  # mount, 2 loops, 2 images, cgroup: the kill really left them
    sched_before = info["scheduler"]
    assert sched_before == "mq-deadline"
    with Provisioner(scratch) as prov:
        assert any("unmounted" in m for m in prov.leftovers_removed)
        assert prov.leftover_problems == []
    assert _leftovers(info) == []
    assert StateFile(scratch).entries() == []
    assert scratch not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert not [m for m in sysinfo.proc_mounts() if m.target.startswith(scratch)]


@pytest.mark.root
def test_sigkill_leftovers_removed_by_fsmeter_cleanup(scratch):
    proc, info = _start_child(scratch)
    _kill(proc, signal.SIGKILL)
    assert _leftovers(info)
    app = typer.Typer()
    cleanup_cli.register(app)
    app.command("noop")(lambda: None)  # two commands keep typer in group mode
    result = CliRunner().invoke(app, ["cleanup", "--scratch", scratch])
    assert result.exit_code == 0, result.output
    assert f"removed: unmounted {info['path']}" in result.output
    assert f"deleted {info['image']}" in result.output
    assert _leftovers(info) == []
    again = CliRunner().invoke(app, ["cleanup", "--scratch", scratch])
    assert "nothing to clean" in again.output


@pytest.mark.root
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_tear_down_before_exit(scratch, signum):
    proc, info = _start_child(scratch)
    _kill(proc, signum)
    assert proc.returncode != 0
    assert _leftovers(info) == [], proc.stderr.read()
    assert StateFile(scratch).entries() == []  # nothing for a later cleanup to do


@pytest.mark.root
def test_cleanup_leaves_a_live_owner_alone(scratch):
    proc, info = _start_child(scratch)
    try:
        done, problems = cleanup_leftovers(StateFile(scratch))
        assert done == [] and problems == []
        assert len(_leftovers(info)) == 6
    finally:
        _kill(proc, signal.SIGTERM)
    assert _leftovers(info) == []


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _record_as_dead(state: StateFile, kind: str, **fields) -> str:
    entry = state.add(kind, **fields)
    state.update(entry, pid=_dead_pid(), pid_start="1")
    return entry


def test_leftover_files_removed_but_unrecorded_and_live_ones_kept(scratch):
    state = StateFile(scratch)
    os.makedirs(os.path.join(scratch, "images"))
    dead_img = os.path.join(scratch, "images", "dead.img")
    live_img = os.path.join(scratch, "images", "live.img")
    other = os.path.join(scratch, "images", "not-recorded.img")
    for path in (dead_img, live_img, other):
        open(path, "w").close()
    mountpoint = os.path.join(scratch, "mnt-dead")
    os.mkdir(mountpoint)
    _record_as_dead(state, "image", path=dead_img)
    _record_as_dead(state, "mountpoint", path=mountpoint)
    state.add("image", path=live_img)  # recorded by this live process
    done, problems = cleanup_leftovers(state)
    assert problems == []
    assert sorted(done) == sorted([f"deleted {dead_img}", f"removed directory {mountpoint}"])
    assert not os.path.exists(dead_img) and not os.path.exists(mountpoint)
    assert os.path.exists(live_img) and os.path.exists(other)
    assert [e["path"] for e in state.entries()] == [live_img]


@pytest.mark.root
def test_mount_or_loop_no_longer_matching_its_record_is_left_alone(scratch, loop_disk):
    state = StateFile(scratch)
    target = os.path.join(scratch, "mnt-other")
    os.mkdir(target)
    # Someone else's tmpfs now sits where a killed run had its mount; loop_disk backs another file.
    subprocess.run(["mount", "-t", "tmpfs", "someone-else", target], check=True)
    try:
        _record_as_dead(state, "mount", target=target, source="fsmeter-ext4-1-0", fstype="tmpfs")
        _record_as_dead(state, "loop", device=loop_disk, image=os.path.join(scratch, "images", "gone.img"))
        cleanup_leftovers(state)
        assert sysinfo.mounts_at(target)[0].source == "someone-else"
        assert sysinfo.loop_backing_file(loop_disk) == os.path.join(scratch, "disk.img")
    finally:
        subprocess.run(["umount", target], check=True)


def test_signal_handlers_restored_after_the_with_block(scratch):
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with Provisioner(scratch):
        assert signal.getsignal(signal.SIGTERM) not in before
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_state_file_survives_concurrent_writers(scratch):
    code = (
        "import sys; from fsmeter.provision import StateFile; s = StateFile(sys.argv[1])\n"
        "for i in range(40): s.add('image', path=f'/nonexistent/{i}')"
    )
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    procs = [subprocess.Popen([sys.executable, "-c", code, scratch], env=env) for _ in range(4)]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    assert len(StateFile(scratch).entries()) == 160  # no lost update


@pytest.mark.root
def test_busy_leftover_mount_keeps_its_loop_and_image_for_the_next_cleanup(scratch):
    proc, info = _start_child(scratch)
    _kill(proc, signal.SIGKILL)
    holder = open(os.path.join(info["path"], "busy"))  # an open file keeps the mount busy
    try:
        done, problems = cleanup_leftovers(StateFile(scratch))
        assert any("kept, its mount is still there" in p for p in problems)
        assert sysinfo.mounts_at(info["path"])
        assert os.path.exists(info["image"])
        assert sysinfo.loop_backing_file(info["device"]) == info["image"]
    finally:
        holder.close()
    done, problems = cleanup_leftovers(StateFile(scratch))
    assert problems == [] and _leftovers(info) == []


# Provisions a small ext4 loop filesystem, prints its info, then waits to be killed.
SMALL_CHILD = textwrap.dedent("""
    import json, sys, time
    from fsmeter.provision import Provisioner, TargetSpec, FsConfig
    with Provisioner(sys.argv[1]) as prov:
        mnt = prov.create(TargetSpec(size_bytes=48 << 20), FsConfig(name="ext4"))
        print(json.dumps(mnt.info()), flush=True)
        time.sleep(120)
""")


@pytest.mark.root
@pytest.mark.parametrize("how", ["fsmeter cleanup", "next start"])
def test_cleanup_leaves_a_users_image_on_the_same_loop_number_and_mount_point_alone(scratch, tmp_path, how):
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    proc = subprocess.Popen(
        [sys.executable, "-c", SMALL_CHILD, scratch], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        pytest.fail(f"child failed: {proc.stderr.read()}")
    info = json.loads(line)
    _kill(proc, signal.SIGKILL)
    device, mountpoint = info["device"], info["path"]
    # By hand: the killed run's mount and loop device go...
    subprocess.run(["umount", mountpoint], check=True)
    subprocess.run(["losetup", "--detach", device], check=True)
    # ...and the user's own image takes the same loop number and the same mount point.
    user_img = str(tmp_path / "user.img")
    with open(user_img, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext2", "-q", "-F", user_img], check=True, capture_output=True)
    attached = subprocess.run(["losetup", device, user_img], capture_output=True, text=True)
    if attached.returncode != 0:
        pytest.skip(f"{device} was taken by another process meanwhile: {attached.stderr.strip()}")
    mounted = False
    try:
        subprocess.run(["mount", device, mountpoint], check=True)
        mounted = True
        with open(os.path.join(mountpoint, "mine.txt"), "w") as f:
            f.write("the user's data")
        if how == "fsmeter cleanup":
            app = typer.Typer()
            cleanup_cli.register(app)
            app.command("noop")(lambda: None)  # two commands keep typer in group mode
            result = CliRunner().invoke(app, ["cleanup", "--scratch", scratch])
            assert result.exit_code == 0, result.output
            output = result.output
        else:  # the automatic cleanup when the next provisioning run starts
            with Provisioner(scratch) as prov:
                output = "\n".join(prov.leftovers_removed + prov.leftovers_left_alone)
                assert prov.leftover_problems == []
        # The user's mount, its directory, the loop device and the image all survive...
        assert [m.source for m in sysinfo.mounts_at(mountpoint)] == [device]
        with open(os.path.join(mountpoint, "mine.txt")) as f:
            assert f.read() == "the user's data"
        assert sysinfo.loop_backing_file(device) == user_img and os.path.exists(user_img)
        # ...each said in one line, its stale record dropped; the killed run's own image is deleted.
        assert f"mount {mountpoint}: left alone" in output
        assert f"loop {device}: left alone" in output
        assert f"directory {mountpoint}: left alone" in output
        assert f"deleted {info['image']}" in output and not os.path.exists(info["image"])
        assert StateFile(scratch).entries() == []
    finally:
        if mounted:
            subprocess.run(["umount", mountpoint], capture_output=True)
        if sysinfo.loop_backing_file(device) == user_img:
            subprocess.run(["losetup", "--detach", device], capture_output=True)


def test_files_replaced_since_their_record_or_outside_scratch_are_left_alone(scratch, tmp_path):
    from fsmeter.provision.undo import file_identity

    state = StateFile(scratch)
    os.makedirs(os.path.join(scratch, "images"))
    img = os.path.join(scratch, "images", "x.img")
    open(img, "w").close()
    _record_as_dead(state, "image", path=img, **file_identity(img))
    os.rename(img, img + ".aside")  # the recorded file is gone (kept aside, so its inode stays taken)...
    with open(img, "w") as f:  # ...and someone else's now has its name
        f.write("someone else's")
    mnt = os.path.join(scratch, "mnt-x")
    os.mkdir(mnt)
    _record_as_dead(state, "mountpoint", path=mnt, **file_identity(mnt))
    os.rename(mnt, mnt + ".aside")
    os.mkdir(mnt)
    os.mkdir(os.path.join(tmp_path, "elsewhere"))
    outside = os.path.join(tmp_path, "elsewhere", "y.img")
    open(outside, "w").close()
    _record_as_dead(state, "image", path=outside)  # no identity recorded, and not in the scratch folder
    left: list = []
    done, problems = cleanup_leftovers(state, left)
    assert done == [] and problems == []
    assert open(img).read() == "someone else's" and os.path.isdir(mnt) and os.path.exists(outside)
    assert sorted(x.split(":")[0] for x in left) == sorted([f"image {img}", f"directory {mnt}", f"image {outside}"])
    assert state.entries() == []  # the stale records are dropped


def test_a_stop_signal_during_a_shielded_commit_stops_the_run_after_it(tmp_path):
    """A SIGTERM that arrives while a trial is committed (a shielded block) is not lost: the block
    finishes, then the run stops with it (it used to be dropped, and the campaign ran on)."""
    from fsmeter.interrupt import Interrupted

    committed = []
    with Provisioner(str(tmp_path / "scratch")) as prov:
        with pytest.raises(Interrupted) as exc:
            with prov._shielded():
                os.kill(os.getpid(), signal.SIGTERM)
                committed.append("trial")  # the commit is not torn in half
        assert exc.value.signum == signal.SIGTERM
        assert committed == ["trial"]
        with prov._shielded():  # raised once, not again
            committed.append("next")
    assert committed == ["trial", "next"]
