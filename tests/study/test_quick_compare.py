"""The default comparison's study keeps the choices docs/compare.md explains (fresh filesystem per trial, turns, >= 3 trials)."""

from __future__ import annotations

import pytest
from fsmeter.campaign import parse_campaign
from fsmeter.cli.compare import STUDY
from fsmeter.provision import FsConfig, get_filesystem


def test_study_runs_fresh_interleaved_trials():
    c = parse_campaign(STUDY.read_text(), str(STUDY))
    assert c.mkfs == "per-trial" and c.order == "interleaved"
    r = c.repetitions
    assert r.policy == "adaptive" and r.min_trials >= 3 and r.discard == 0
    assert [f.name for f in c.filesystems] == ["ext2", "ext3", "ext4", "xfs", "btrfs"]


@pytest.mark.parametrize(
    "fs,option", [("ext4", "lazy_itable_init=0"), ("ext4", "lazy_journal_init=0"), ("ext3", "lazy_journal_init=0")]
)
def test_ext_journals_and_inode_tables_are_zeroed_at_mkfs(fs, option):
    opts = get_filesystem(fs).mkfs_options(FsConfig(name=fs), overwrite=True)
    assert opts.count("-E") == 1 and option in opts[opts.index("-E") + 1]
    # a user's own -E keys are merged into the same single -E (mke2fs keeps only the last one)
    opts = get_filesystem(fs).mkfs_options(FsConfig(name=fs, mkfs_options=["-E", "stride=4"]), overwrite=True)
    assert opts.count("-E") == 1 and option in opts[opts.index("-E") + 1] and "stride=4" in opts[opts.index("-E") + 1]
