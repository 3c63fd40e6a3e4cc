"""The host-change contract (after pyperf): show what is, apply a change, revert it, log each step."""

from __future__ import annotations

import logging
import os
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


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def release_sysfs(state: StateFile, entry_id: str) -> str | None:
    """Undo the sysfs change recorded as ``entry_id``, safely when several processes changed the same
    file: the records of one path form a stack, in the order the changes were made.

    - Ours is the newest record: put back the value we found, if the file still holds the value we
      set (else someone outside fsmeter changed it since: leave it, and say so).
    - A later change is still recorded (another process applied after us and has not reverted):
      touch nothing, and hand our original value down to that record, so that its revert restores
      what was there before any of us. The setting the other process relies on stays in effect.

    Runs under the state file's lock, so two processes reverting at once cannot interleave.
    Returns what was done, for the log.
    """
    with state._locked() as data:
        entries = data["entries"]
        me = next((e for e in entries if e["id"] == entry_id), None)
        if me is None:
            return None
        stack = [e for e in entries if e["kind"] == "sysfs" and e["path"] == me["path"]]
        later = stack[stack.index(me) + 1 :]
        data["entries"] = [e for e in entries if e["id"] != entry_id]
        if later:
            later[0]["old"] = me["old"]
            return f"{me['path']}: left at {later[0]['new']!r} for a later change, which will restore {me['old']!r}"
        if not os.path.exists(me["path"]):
            return None
        now = read_sysfs_choice(me["path"])
        if now != me["new"]:
            log.warning("left %s alone: it is %r, no longer the %r fsmeter set", me["path"], now, me["new"])
            return None
        if me["old"] != now:
            _write(me["path"], me["old"])
        return f"restored {me['path']} to {me['old']}"


class SysfsSetting(HostChange):
    """A sysfs file set to a value and put back; recorded in the state file while changed,
    so a killed run's setting is restored by the next cleanup, and so that two processes changing
    the same file put it back to what it was before either (see release_sysfs).

    ``write``: where the setting is made, when that is not ``path`` itself: a (file, value) whose
    writing leaves ``path`` reading ``value`` (vm.dirty_bytes, which makes vm.dirty_ratio read 0). What
    is recorded, and restored, is ``path``."""

    def __init__(
        self, path: str, value: str, state: StateFile | None, label: str, write: tuple[str, str] | None = None
    ):
        self.path = path
        self.value = value
        self.state = state
        self.label = label
        self.write = write or (path, value)
        self._old: str | None = None
        self._entry: str | None = None

    def show(self) -> str:
        return read_sysfs_choice(self.path)

    def check(self) -> None:
        """Raise HostFactorError when ``value`` cannot be set; called by apply before writing."""

    def apply(self) -> None:
        self.check()
        if self.state is None:
            self._old = self.show()
            if self._old != self.value:
                self._set()
            log.info("%s: %s -> %s", self.label, self._old, self.value)
            return
        # Read, record and write under the state lock: another process changing the same file waits.
        # Recorded even when the value is already in effect: a process that set it before us must
        # not put it back while we rely on it.
        with self.state._locked() as data:
            self._old = self.show()
            entry = self.state.new_entry("sysfs", path=self.path, old=self._old, new=self.value)
            if self._old != self.value:
                self._set()
            data["entries"].append(entry)
            self._entry = entry["id"]
        log.info("%s: %s -> %s", self.label, self._old, self.value)

    def _set(self) -> None:
        path, value = self.write
        try:
            _write(path, value)
        except OSError as exc:
            self._old = None
            raise HostFactorError(f"{self.label}: cannot set {value!r} in {path}: {exc.strerror}: run as root") from exc

    def revert(self) -> None:
        if self._old is None:
            return
        if self._entry is not None and self.state is not None:
            msg = release_sysfs(self.state, self._entry)
            self._entry = None
        elif self.show() == self.value:  # no record to share: restore only what is still ours
            if self._old != self.value:
                _write(self.path, self._old)
            msg = f"reverted to {self._old}"
        else:
            msg = None
            log.warning("%s: left alone: no longer %r", self.label, self.value)
        if msg:
            log.info("%s: %s", self.label, msg)
        self._old = None
