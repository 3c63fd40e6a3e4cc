"""Record what fio itself does with the job files of tests/data/fio/counts: each job's bytes and I/O counts per
direction, into tests/data/fio/counts/counts.json, which tests/interop/fio/test_fio_counts.py holds fsmeter to.

    python bench/fio_counts.py [--fio PATH] [--only NAME ...]

Each file runs once under fio (`fio --output-format=json --directory=SCRATCH FILE`, in a scratch folder of its
own on /tmp), and the record keeps the command, fio's version and, per job in fio's order, its name and its
read and write bytes and I/Os (and its trims', for a job that trims). Re-run it when a file there changes; the tests need neither fio nor this script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "tests" / "data" / "fio" / "counts"


def record(fio: str, path: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="fio-counts-") as scratch:
        cmd = [fio, "--output-format=json", f"--directory={scratch}", str(path)]
        out = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise SystemExit(f"{path.name}: fio failed ({out.returncode}): {out.stderr.strip()[:400]}")
        doc = json.loads(out.stdout[out.stdout.index("{") :])
    jobs = [
        {
            "name": j["jobname"],
            "read": [j["read"]["io_bytes"], j["read"]["total_ios"]],
            "write": [j["write"]["io_bytes"], j["write"]["total_ios"]],
            # Trims only where a job trims, so the records of files without trims stay as they were.
            **({"trim": [j["trim"]["io_bytes"], j["trim"]["total_ios"]]} if j["trim"]["total_ios"] else {}),
        }
        for j in doc["jobs"]
    ]
    return {"command": f"fio --output-format=json --directory=SCRATCH {path.name}", "jobs": jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    version = subprocess.run([a.fio, "--version"], capture_output=True, text=True).stdout.strip()
    out = HERE / "counts.json"
    data = json.loads(out.read_text()) if out.exists() else {"files": {}}
    data["fio"] = version
    for path in sorted(HERE.glob("*.fio")):
        if a.only and path.stem not in a.only:
            continue
        data["files"][path.name] = record(a.fio, path)
        print(path.name, data["files"][path.name]["jobs"], file=sys.stderr)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
