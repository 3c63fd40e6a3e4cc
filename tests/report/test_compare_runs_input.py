"""`fsmeter compare-runs` on hostile input: campaign ids past SQLite's integer or not ASCII digits, a threshold
or alpha that is not a finite number in range, an export JSON that is not of the export's shape (a list, a
string where the cells belong, nested 100,000 deep, values of the wrong type, dangling references). Each is one
line naming what is wrong, before anything is compared; never a traceback, never exit 0."""

from __future__ import annotations

import copy
import json

import pytest
from fsmeter_cli import fsm
from store_sample import fill


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cr") / "s.sqlite"
    fill(path)[0].close()
    return path


@pytest.fixture(scope="module")
def export(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("ex") / "a.json"
    r = fsm("export", "1", "--db", store, "-f", "json", "-o", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def refused(r, *words):
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fsmeter: error:"), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("ref", [str(1 << 63), "9" * 30, "²", "١", "\udcff"])
def test_campaign_ids_past_sqlite_or_not_ascii_are_no_campaign(store, ref):
    refused(fsm("compare-runs", ref, "1", "--db", store), "no campaign")


@pytest.mark.parametrize(
    "option, value, words",
    [
        ("--threshold", "nan", "--threshold nan: give a finite number"),
        ("--threshold", "inf", "--threshold inf"),
        ("--threshold", "-1", "--threshold -1"),
        ("--alpha", "nan", "--alpha nan"),
        ("--alpha", "1", "--alpha 1"),
        ("--correction", "bonferroni", "--correction bonferroni"),
    ],
)
def test_options_are_checked_before_any_side_is_read(tmp_path, option, value, words):
    missing = tmp_path / "no-such.sqlite"  # never opened: the option is refused first
    refused(fsm("compare-runs", "1", "2", "--db", missing, option, value), words)


def _broken(doc):
    """name -> (a document made from the sound export ``doc``, words of the refusal)."""
    out = {}

    def case(name, words, change):
        d = copy.deepcopy(doc)
        out[name] = (change(d) or d, words)

    case("a list", "a JSON list, not an fsmeter campaign export", lambda d: [d])
    case("cells a string", "cells", lambda d: d.update(cells="x"))
    case("no version", "version", lambda d: (d.pop("version"), None)[1])
    case("version a bool", "version", lambda d: d.update(version=True))
    case("metric value text", "metrics.0.value", lambda d: d["metrics"][0].update(value="fast"))
    case("status a number", "trials.0.status", lambda d: d["trials"][0].update(status=1))
    case("factors a list", "cells.0.factors", lambda d: d["cells"][0].update(factors=[1]))
    case("factor level a table", "cells.0.factors", lambda d: d["cells"][0]["factors"].update(filesystem={"a": 1}))
    case("dangling trial", "trials.0.cell_id", lambda d: d["trials"][0].update(cell_id=999))
    case("dangling metric", "metrics.0.trial_id", lambda d: d["metrics"][0].update(trial_id=999))
    case("factor named value", "factor 'value'", lambda d: d["cells"][0]["factors"].update(value=1))
    case("newer version", "version 99 is newer", lambda d: d.update(version=99))
    case("a run result", "one `fsmeter run` result", lambda d: {"format": "fsmeter-run"})
    deep: list = []
    for _ in range(70):
        deep = [deep]
    case("nested 70 deep", "nested more than 64 levels deep", lambda d: d["campaign"].update(note=deep))
    return out


def test_export_documents_of_the_wrong_shape(tmp_path, export):
    from fsmeter.errors import UserError
    from fsmeter.report.export import read_campaign_document

    for name, (doc, words) in _broken(export).items():
        p = tmp_path / "b.json"
        p.write_text(json.dumps(doc))
        with pytest.raises(UserError) as e:
            read_campaign_document(p)
        assert words in e.value.message and "\n" not in e.value.message, (name, e.value.message)
    doc, words = _broken(export)["metric value text"]  # and through the command, as a user meets it
    p.write_text(json.dumps(doc))
    refused(fsm("compare-runs", p, p), words)


@pytest.mark.parametrize(
    "text, words",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"format": "fsmeter-campaign", "cells": "x"}', "not an fsmeter campaign export"),
        ("{not json", "not JSON"),
        (b'{"format": "\xff"}', "not UTF-8"),
    ],
)
def test_export_files_that_are_not_json_exports(tmp_path, text, words):
    p = tmp_path / "x.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    refused(fsm("compare-runs", p, p), words)


def test_a_sound_export_still_compares(tmp_path, export):
    p = tmp_path / "a.json"
    p.write_text(json.dumps(export))
    r = fsm("compare-runs", p, p)
    assert r.returncode == 0 and "no significant regression" in r.stdout, r.stderr
