"""Campaign files written by fsmeter (`fsmeter compare`, studies, `campaign run --set`) read back as written."""

from __future__ import annotations

import tomllib

from fsmeter.campaign import dump_toml, parse_campaign


def test_awkward_strings_and_keys_survive_the_round_trip(tmp_path):
    # A name is one line without control characters (campaign names are validated so); the
    # description may hold a newline and a tab, which the writer must escape.
    data = {
        "name": 'quote " backslash \\ é',
        "description": "two\nlines,\ta tab, é and ✓",
        "target": {"kind": "dir", "path": str(tmp_path / "a b")},
        "factors": {"threads": [1, 2]},
        "workloads": [
            {"name": "seq-read", "label": "a.b = c", "params": {"duration_s": 0.5, "file_size": "4M", "direct": False}}
        ],
        "exclusions": [{"threads": 2, "workload": "a.b = c"}],
        "repetitions": {"policy": "fixed", "n": 2},
    }
    text = dump_toml(data)
    assert tomllib.loads(text) == data
    c = parse_campaign(text)
    assert c.name == data["name"] and c.description == data["description"]
    assert c.workloads[0].label == "a.b = c" and c.exclusions == [{"threads": 2, "workload": "a.b = c"}]


def test_a_key_that_is_not_a_bare_word_is_quoted():
    text = dump_toml(
        {
            "name": "x",
            "target": {"kind": "dir", "path": "/tmp"},
            "workloads": [{"name": "seq-read", "params": {"odd key": 1}}],
        }
    )
    assert tomllib.loads(text)["workloads"][0]["params"] == {"odd key": 1}
    assert '"odd key" = 1' in text
