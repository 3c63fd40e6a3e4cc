"""The CLI reference of the documentation site is generated from the CLI: every command gets a page,
and every page names every option of its command with the help text `--help` gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import docs_cli  # noqa: E402


@pytest.fixture(scope="module")
def pages():
    return docs_cli.pages()


def test_every_command_and_subcommand_has_a_page(pages):
    titles = {title for title, _ in pages.values()}
    assert {
        "fsmeter",
        "fsmeter run",
        "fsmeter compare",
        "fsmeter campaign run",
        "fsmeter crash run",
        "fsmeter study report",
        "fsmeter export",
    } <= titles
    index = pages["cli/index.md"][1]
    for uri, (title, _) in pages.items():
        if title.count(" ") == 1:  # top-level commands are linked from the index
            assert f"]({uri.split('/', 1)[1]})" in index, title


def test_a_page_lists_every_option_with_its_help(pages):
    text = pages["cli/fsmeter-run.md"][1]
    help_text = subprocess.run(
        [sys.executable, "-m", "fsmeter", "run", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"},
    ).stdout
    for opt in (
        "--dir",
        "--set",
        "--json",
        "--keep-files",
        "--min-phase-s",
        "--cache",
        "--no-wait",
        "--shared-file",
        "--reorder-shift",
    ):
        assert f"`{opt}`" in text and opt in help_text
    assert "| `WORKLOAD` | " in text
    assert "| `--min-phase-s` | float | `60.0` |" in text
    assert "override a parameter: key=value (repeatable)" in text


def test_the_site_names_the_reference_in_its_nav():
    assert "CLI reference: cli/index.md" in (ROOT / "mkdocs.yml").read_text()
    assert "scripts/docs_cli.py" in (ROOT / "mkdocs.yml").read_text()
