"""Usage errors (an unknown option, a missing argument, a value of the wrong type) are one
`fsmeter: error:` line naming the command, like every other error: never click's boxed usage text."""

from __future__ import annotations

import pytest
from fsmeter_cli import fsm


def _commands(group, path=()):
    """Every command of the CLI, as its words (`store check` is ("store", "check"))."""
    for name, cmd in sorted(group.commands.items()):
        if getattr(cmd, "commands", None):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name)


def _all_commands():
    import typer.main
    from fsmeter.cli import app

    return list(_commands(typer.main.get_command(app)))


def one_error_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("fsmeter: error: "), r.stderr
    assert "╭" not in r.stderr and "Usage:" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    return lines[0]


@pytest.mark.parametrize("words", _all_commands(), ids=" ".join)
def test_an_unknown_option_is_one_line_for_every_command(words):
    r = fsm(*words, "--no-such-option")
    assert r.returncode == 2
    line = one_error_line(r)
    assert f"fsmeter {' '.join(words)}:" in line and "--no-such-option" in line and "--help" in line


@pytest.mark.parametrize(
    "args, words",
    [
        (["run"], "Missing argument"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["io500", "--ranks", "many"], "--ranks"),
        (["io500", "--ranks", "0"], "--ranks"),
        (["run", "seq-read", "--dir"], "--dir"),
        (["compare-runs", "1", "2", "--threshold", "x"], "--threshold"),
        (["store", "check"], "Missing argument"),
    ],
)
def test_usage_errors_name_the_command_and_what_is_wrong(args, words):
    r = fsm(*args)
    assert r.returncode == 2
    assert words in one_error_line(r)


def test_help_is_still_help():
    r = fsm("run", "--help")
    assert r.returncode == 0 and "Usage: fsmeter run" in r.stdout and r.stderr == ""
    r = fsm("store")  # a command group alone: its help
    assert "check" in r.stdout and "recover" in r.stdout and "fsmeter: error" not in r.stderr
