"""The --no-wait option every measuring command takes, for the machine-wide run lock (fsmeter.runlock)."""

from __future__ import annotations

import typer

NO_WAIT_HELP = (
    "when another measuring fsmeter runs on this machine, stop with an error naming it "
    "instead of waiting for it to finish"
)


def no_wait_option():
    return typer.Option(False, "--no-wait", help=NO_WAIT_HELP)
