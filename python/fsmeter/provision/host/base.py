"""The host-change contract (after pyperf): show what is, apply a change, revert it, log each step."""
from __future__ import annotations

import logging
from typing import Any

from fsmeter.provision.errors import HostFactorError
from fsmeter.provision.state import StateFile

log = logging.getLogger("fsmeter.provision.host")


def read_sysfs_choice(path: str) -> str:
    """A sysfs value; for a choice list like ``[none] mq-deadline`` the bracketed one."""
    with open(path) as f:
        text = f.read().strip()
    for token in text.split():
        if token.startswith("[") and token.endswith("]"):
            return token[1:-1]
    return text


class HostChange:
    """One reversible change to the host. ``apply`` then ``revert`` leaves the host as it was."""

    name: str = "change"

    def show(self) -> str:
        """The current setting, as a user would read it."""
        raise NotImplementedError

    def apply(self) -> None:
        raise NotImplementedError

    def revert(self) -> None:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """What is in effect, for the trial's environment record."""
        return {self.name: self.show()}


class SysfsSetting(HostChange):
    """A sysfs file set to a value and put back; recorded in the state file while changed,
    so a killed run's setting is restored by the next cleanup."""

    def __init__(self, path: str, value: str, state: StateFile | None, label: str):
        self.path = path
        self.value = value
        self.state = state
        self.label = label
        self._old: str | None = None
        self._entry: str | None = None

    def show(self) -> str:
        return read_sysfs_choice(self.path)

    def check(self) -> None:
        """Raise HostFactorError when ``value`` cannot be set; called by apply before writing."""

    def apply(self) -> None:
        self.check()
        self._old = self.show()
        if self._old == self.value:
            log.info("%s: already %s", self.label, self.value)
            return
        if self.state is not None:
            self._entry = self.state.add("sysfs", path=self.path, old=self._old, new=self.value)
        try:
            with open(self.path, "w") as f:
                f.write(self.value)
        except OSError as exc:
            self._forget()
            raise HostFactorError(f"{self.label}: cannot set {self.value!r} in {self.path}: {exc.strerror}: "
                                  "run as root") from exc
        log.info("%s: %s -> %s", self.label, self._old, self.value)

    def revert(self) -> None:
        if self._old is None or self._old == self.value:
            self._old = None
            return
        with open(self.path, "w") as f:
            f.write(self._old)
        log.info("%s: reverted to %s", self.label, self._old)
        self._old = None
        self._forget()

    def _forget(self) -> None:
        if self._entry and self.state is not None:
            self.state.remove(self._entry)
        self._entry = None
