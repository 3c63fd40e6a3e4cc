"""When a campaign probes its target's storage again (fsmeter.runner.RunContext.reprobe): every
REPROBE_EVERY_S between trials and once at the end, only for targets whose probe makes its own storage,
and never when no trial ran since the last probe."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fsmeter import runner


def _ctx(monkeypatch, kind: str) -> tuple[runner.RunContext, list]:
    calls: list = []
    monkeypatch.setattr(runner, "_probe_storage", lambda *a: calls.append(a))
    spec = SimpleNamespace(kind=kind)
    campaign = SimpleNamespace(target=SimpleNamespace(spec=lambda: spec))
    ctx = runner.RunContext(campaign, 1, None, None, None, None)  # type: ignore[arg-type]
    return ctx, calls


@pytest.mark.parametrize("kind", ["loop", "disk-model"])
def test_own_storage_is_probed_again_once_the_interval_passed(monkeypatch, kind):
    ctx, calls = _ctx(monkeypatch, kind)
    clock = [1000.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    ctx.probed_at = clock[0]
    ctx.reprobe()  # no trial yet
    ctx.trials_since_probe = 3
    clock[0] += runner.REPROBE_EVERY_S - 1
    ctx.reprobe()  # too soon
    assert calls == []
    clock[0] += 2
    ctx.reprobe()
    assert len(calls) == 1 and ctx.trials_since_probe == 0 and ctx.probed_at == clock[0]
    ctx.reprobe(final=True)  # nothing ran since
    assert len(calls) == 1
    ctx.trials_since_probe = 1
    ctx.reprobe(final=True)  # the end of the campaign: whatever the interval
    assert len(calls) == 2


@pytest.mark.parametrize("kind", ["device", "dir", "tmpfs", "glusterfs"])
def test_a_device_or_the_users_directory_is_probed_only_at_the_start(monkeypatch, kind):
    ctx, calls = _ctx(monkeypatch, kind)
    ctx.trials_since_probe = 5
    ctx.reprobe()
    ctx.reprobe(final=True)
    assert calls == []
