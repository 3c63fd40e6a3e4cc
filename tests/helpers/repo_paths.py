"""Where the repository and the tests' data files are, wherever under tests/ a test file sits."""

from __future__ import annotations

from pathlib import Path

#: The repository's top folder.
ROOT = Path(__file__).resolve().parents[2]
#: Recorded outputs and data sets the tests read (tests/data/README.md says what each is).
DATA = ROOT / "tests" / "data"
