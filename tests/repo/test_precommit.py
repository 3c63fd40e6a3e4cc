"""`.pre-commit-config.yaml` runs what `make lint` runs: one hook per lint target, each calling it."""

from __future__ import annotations

import re

import yaml
from repo_paths import ROOT


def _lint_targets() -> set[str]:
    rule = re.search(r"^lint:([^#\n]*)", (ROOT / "Makefile").read_text(), re.M)
    assert rule, "the Makefile has no lint target"
    return set(rule.group(1).split())


def test_every_lint_target_has_a_hook_and_every_hook_is_one():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    entries = [hook["entry"].split() for hook in hooks]
    assert all(e[:2] == ["make", "-s"] and len(e) == 3 for e in entries), entries
    called = [e[2] for e in entries]
    assert sorted(called) == sorted(_lint_targets()), f"hooks call {called}, make lint runs {_lint_targets()}"
    assert all(hook["pass_filenames"] is False and hook["language"] == "system" for hook in hooks)
