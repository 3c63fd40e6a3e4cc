"""A script of bench/ loaded as a module, so that tests can call its functions (it is not a package)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from repo_paths import ROOT


def load_bench(script: str, name: str) -> ModuleType:
    """bench/SCRIPT loaded under the module name NAME (each test file its own, so that none shares state)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
