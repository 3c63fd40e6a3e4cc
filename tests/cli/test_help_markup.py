"""Help texts go through rich's markup: an unescaped `[word]` is read as a style tag and vanishes from
`--help` (`[rules]`, `[[claims]]` printed as nothing, or as `[]`). Every command's and option's help
keeps its brackets."""

from __future__ import annotations

import re
import sys

from fsmeter_cli import fsm
from repo_paths import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import docs_cli  # noqa: E402

# rich's markup tag: "[" then a letter, "#", "/" or "@" (not "[--campaign N]"), unless escaped "\[".
TAG = re.compile(r"(?<!\\)\[([a-z#/@][^\[\]]*?)\]")


def lost_brackets(text: str) -> list[str]:
    return [m.group(0) for m in TAG.finditer(text)]


def test_the_rule_finds_a_tag_and_spares_what_rich_prints():
    assert lost_brackets("an optional [rules] and [[claims]]") == ["[rules]", "[claims]"]
    assert lost_brackets(r"an optional \[rules] and \[\[claims]], --db STORE [--campaign N]") == []


def test_no_help_text_carries_an_unescaped_markup_tag():
    found = []
    for path, cmd in docs_cli._walk(docs_cli._root(), ["fsmeter"]):
        texts = [("help", cmd.help or "")] + [(p.name, getattr(p, "help", "") or "") for p in cmd.params]
        found += [f"{' '.join(path)} {where}: {tag}" for where, text in texts for tag in lost_brackets(text)]
    assert not found, "escape these as \\[ in the help text, or rich drops them from --help:\n" + "\n".join(found)


def test_the_claim_files_tables_show_in_help():
    out = fsm("claim", "check", "--help").stdout
    for table in ("[[claims]]", "[rules]", "[[hardware]]"):
        assert table in out
    assert "[rules]" in fsm("study", "calibrate", "--help").stdout
