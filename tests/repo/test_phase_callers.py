"""Who drives the engine's phases: `phases.run_phases` does, for every way of running a job, and the few
modules HACKING.md names as exceptions with their reasons. A call of `.run_phase(...)` anywhere else is a
copy of the phase loop (without its cache reset, regime, quality gates or stop signals) and fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from repo_paths import ROOT

PACKAGE_DIR = ROOT / "python" / "fsmeter"

#: module (relative to the package) -> why it may call the engine's phases itself (HACKING.md says the same)
CALLERS = {
    "engine.py": "the Python face of the engine: `EngineSession.run_phase` itself",
    "phases.py": "the one phase loop, `run_phases`",
    "mpi/run.py": "`RankSteps`, the phase loop's MPI steps (barriers, stonewall, wear-out, merge)",
    "crash/run.py": "a crash run's write under the write log and the check of each cut image: no measured rate",
    "mpi/io500.py": "IO500's own phase rules: one job per phase, the wear-out, rank 0's score",
}


def phase_calls(package_dir: Path) -> dict[str, list[int]]:
    """Module (relative path) -> the lines where it calls something's `.run_phase(...)`."""
    out: dict[str, list[int]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        lines = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_phase"
        ]
        if lines:
            out[path.relative_to(package_dir).as_posix()] = lines
    return out


def test_only_the_phase_loop_and_the_named_exceptions_run_phases():
    found = phase_calls(PACKAGE_DIR)
    bad = {m: lines for m, lines in found.items() if m not in CALLERS}
    assert not bad, (
        "these modules run the engine's phases themselves; go through phases.run_phases, or name the module "
        f"with its reason in HACKING.md and in CALLERS: {bad}"
    )
    stale = sorted(set(CALLERS) - set(found))
    assert not stale, f"no longer call run_phase (remove them from CALLERS and HACKING.md): {stale}"


def test_every_exception_is_named_in_hacking():
    text = (ROOT / "HACKING.md").read_text()
    missing = [m for m in CALLERS if m not in ("engine.py", "phases.py") and f"`{m}`" not in text]
    assert not missing, f"HACKING.md does not name these callers of run_phase: {missing}"


def test_a_planted_caller_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "phases.py").write_text("def loop(s):\n    return s.run_phase('run')\n")
    (pkg / "sub" / "rogue.py").write_text(
        "'''s.run_phase(x) in a docstring is no call'''\n\n\ndef f(s):\n    s.run_phase('run')\n"
    )
    (pkg / "quiet.py").write_text("# s.run_phase('run')\nrun_phase = None\n")
    assert phase_calls(pkg) == {"phases.py": [2], "sub/rogue.py": [5]}
