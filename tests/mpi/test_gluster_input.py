"""GlusterFS and local MPI inputs checked before anything is made: a volume option the installed glusterd
does not know, or a value with a newline, is refused when the campaign (or `compare --target glusterfs`) is
read; ranks that all run on this machine (no hostfile, or the namespace hosts of a glusterfs target) are
bounded by its CPUs, so that `--ranks 64 --hosts 1` on two CPUs does not start."""

from __future__ import annotations

import os
import shutil

import pytest
from fsmeter.campaign import parse_campaign
from fsmeter.errors import UserError
from fsmeter.mpi.launch import local_ranks_limit
from fsmeter.provision.gluster import known_volume_options, volume_option_problem
from fsmeter.runner import check_target
from fsmeter_cli import fsm

GLUSTER = """name = "g"
[[workloads]]
name = "seq-write"
[mpi]
ranks = {ranks}
[target]
kind = "glusterfs"
hosts = 2
volume_options = {{ {options} }}
"""


def gluster(ranks=2, options='"performance.write-behind" = "off"') -> str:
    return GLUSTER.format(ranks=ranks, options=options)


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("performance.write-behind", "off\nrm -rf /", "control character"),
        ("performance.write-behind", "a\tb", "control character"),
        ("performance.write-behind", " ", "empty value"),
        ("performance.write-behind", "x" * 5000, "5000 characters"),
        ("write behind", "off", "not a volume option's name"),
        ("x", "1", "not a volume option's name"),
    ],
)
def test_volume_option_values_and_names(key, value, words):
    assert words in volume_option_problem(key, value)


def test_known_options_come_from_the_installed_glusterd():
    assert volume_option_problem("performance.write-behind", "off") is None
    assert volume_option_problem("user.note", "anything") is None  # gluster's own free-form namespace
    if not known_volume_options():
        pytest.skip("no glusterd.so to read the option table from: only the form of a name is checked here")
    assert {"performance.write-behind", "network.ping-timeout", "cluster.lookup-optimize"} <= known_volume_options()
    why = volume_option_problem("performance.wirte-behind", "off")
    assert "not an option of the installed glusterd" in why and "performance.write-behind?" in why


def test_a_campaign_with_an_unknown_option_or_a_newline_is_refused_on_its_line():
    with pytest.raises(UserError, match=r"g.toml:9: target.volume_options: .*control character"):
        parse_campaign(gluster(options='"performance.write-behind" = "off\\nx"'), "g.toml")
    with pytest.raises(UserError, match="not a volume option's name"):
        parse_campaign(gluster(options='"no such" = "1"'), "g.toml")
    parse_campaign(gluster(), "g.toml")


def test_ranks_on_this_machine_are_bounded_by_its_cpus():
    too_many = local_ranks_limit() + 1
    with pytest.raises(UserError, match=rf"mpi.ranks: {too_many} ranks on this machine: at most"):
        check_target(parse_campaign(gluster(ranks=too_many)))
    local = (
        'name = "m"\n[[workloads]]\nname = "seq-write"\n[factors]\n'
        f'ranks = [1, {too_many}]\n[target]\nkind = "dir"\npath = "."\n'
    )
    with pytest.raises(UserError, match="factors.ranks"):
        check_target(parse_campaign(local))
    # with a hostfile the ranks run on its hosts: their slots are mpirun's to count
    check_target(parse_campaign(local.replace("[target]", '[mpi]\nhostfile = "/etc/hosts"\n[target]')))


needs_gluster = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("glusterd", "glusterfs", "mpirun")),
    reason="compare --target glusterfs checks root, glusterd, glusterfs and mpirun first",
)


@needs_gluster
@pytest.mark.parametrize(
    "args, words",
    [
        (["--ranks", "64", "--hosts", "1"], "--ranks 64: 64 ranks on this machine"),
        (["--volume-option", "performance.write-behind=off\nx"], "control character"),
        (["--volume-option", "performance.write-behnd=off"], "not an option"),
    ],
)
def test_compare_glusterfs_refuses_before_anything_is_made(tmp_path, args, words):
    if "64" in args and local_ranks_limit() >= 64:
        pytest.skip("this machine may run 64 ranks")
    if "not an option" in words and not known_volume_options():
        pytest.skip("no glusterd.so to read the option table from")
    db = tmp_path / "s.sqlite"
    r = fsm("compare", "--target", "glusterfs", *args, "--db", db, "--no-wait", cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and words in lines[0], r.stderr
    assert not db.exists()
