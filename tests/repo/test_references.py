"""The project stands alone: no tracked file points to documents outside the repository, and every
repository path a file names in backticks exists (or is an output the build makes and git ignores)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from repo_paths import ROOT

# Written in pieces so that this file does not match itself.
OUTSIDE = [".." + "/shared", "/work" + "/", "DESIGN" + ".md", "WORKLOADS" + ".md", "STYLE" + ".md"]
#: A repository path in backticks: it starts with a top-level folder or names a top-level file.
TOP = ("python/", "crates/", "tests/", "bench/", "scripts/", "docs/", ".ci/")
TOP_FILES = ("README.md", "HACKING.md", "Makefile", "pyproject.toml", "Cargo.toml", "Cargo.lock")
BACKTICKED = re.compile(r"`([^`\s]+)`")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _tracked_text_files() -> list:
    out = []
    for rel in _git("ls-files", "-z").split("\0"):
        if not rel:
            continue
        path = os.path.join(ROOT, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        try:
            out.append((rel, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def _is_repo_path(token: str) -> bool:
    token = token.rstrip(".,:;)")
    if any(c in token for c in "<>*{}$|"):
        return False  # a pattern or placeholder (`bench/bench_<x>.py`), not one file
    return token.startswith(TOP) or token in TOP_FILES


def _exists_or_generated(token: str) -> bool:
    token = token.rstrip(".,:;)").split("::")[0]
    if os.path.exists(os.path.join(ROOT, token)):
        return True
    # An output of the build or of a run (bench/out/results.json): ignored by git, made on demand.
    return subprocess.run(["git", "check-ignore", "-q", "--no-index", token], cwd=ROOT).returncode == 0


@pytest.fixture(scope="module")
def files():
    try:
        found = _tracked_text_files()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"needs a git checkout of the repository: {exc}")
    assert len(found) > 50
    return found


def test_no_file_points_outside_the_repository(files):
    bad = []
    for rel, text in files:
        for n, line in enumerate(text.splitlines(), 1):
            for needle in OUTSIDE:
                if needle in line:
                    bad.append(f"{rel}:{n}: {needle}: {line.strip()[:100]}")
    assert not bad, "state the rule in the project's own words, or point to a file of the project:\n" + "\n".join(bad)


def test_every_backticked_repository_path_exists(files):
    missing = []
    for rel, text in files:
        for n, line in enumerate(text.splitlines(), 1):
            for token in BACKTICKED.findall(line):
                if _is_repo_path(token) and not _exists_or_generated(token):
                    missing.append(f"{rel}:{n}: `{token}`")
    assert not missing, "these files are named but not in the repository:\n" + "\n".join(missing)


def test_the_scan_finds_what_it_looks_for():
    """The two checks can fail: a pointer outside and a missing path are caught."""
    assert _is_repo_path("tests/test_stats_bonnie.py") and not _exists_or_generated("tests/test_stats_bonnie.py")
    assert _is_repo_path("python/fsmeter/runner.py") and _exists_or_generated("python/fsmeter/runner.py")
    assert _exists_or_generated("bench/out/results.json")  # generated, ignored by git
    assert not _is_repo_path("bench/bench_<x>.py") and not _is_repo_path("out.json")
    line = "see " + OUTSIDE[2] + " for the rules"
    assert any(needle in line for needle in OUTSIDE)
