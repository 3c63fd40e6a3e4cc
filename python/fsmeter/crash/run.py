"""Running a crash campaign: for each cell, record a write-heavy run, cut the power N times, recover, verify.

One cell (filesystem x size x dirty set):
  1. mkfs on a fresh image file; a sparse copy of it is the base of every cut.
  2. The image is served by fsmeter-blocklog under a direct-I/O loop device, mounted, and the crash
     family's ``write`` phase runs on it: its ledger (what fsync promised, when) goes to the results
     folder, outside the filesystem under test.
  3. The N crash instants are drawn (seeded) uniformly over the write phase. For each, the image the
     device held then is built from the base and the write log (fsmeter.crash.cut), attached to a
     loop device of its own, checked and mounted as a rebooted machine would (fsmeter.crash.recovery,
     timed), and the engine's ``check`` phase compares every file with the ledger's promises.
  4. A cut that lost data beyond what fsync promised keeps its image beside the ledger (the evidence);
     the others are deleted unless ``keep_images``.

results.json (rewritten after every crash point, so an interrupted campaign keeps what it measured)
holds the campaign, the host, and per cell the write phase's summary and each crash point's
recovery and check.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime

from fsmeter import __version__
from fsmeter.crash.blocklog import LoggedDisk
from fsmeter.crash.cut import CutBuilder
from fsmeter.crash.model import CrashCampaign, CrashFs
from fsmeter.crash.recovery import RecoveredMount, recover
from fsmeter.engine import EngineSession
from fsmeter.hostinfo import host_info
from fsmeter.provision import sysinfo
from fsmeter.provision._run import run as run_tool
from fsmeter.provision.errors import MkfsError
from fsmeter.provision.filesystems import get_filesystem
from fsmeter.provision.state import StateFile
from fsmeter.provision.undo import detach_loop, undo_image
from fsmeter.units import format_size
from fsmeter.userpaths import own_dir

RESULTS = "results.json"


def cell_slug(fs: CrashFs, size: int, dirty: int) -> str:
    title = fs.title.replace(" ", "-").replace("=", "-").replace("/", "-")
    return f"{title}-{format_size(size)}-dirty{format_size(dirty)}"


def draw_cuts(seed: int, slug: str, n: int, t_start: int, t_end: int) -> list[int]:
    """N crash instants, uniform over [t_start, t_end), sorted; the same seed and cell give the same ones."""
    rng = random.Random(f"{seed}:{slug}")
    return sorted(t_start + int(rng.random() * (t_end - t_start)) for _ in range(n))


def lost_beyond_fsync(check: dict) -> bool:
    """Whether a cut's check counted anything lost beyond what fsync promised (a `*_beyond_fsync`
    counter above 0): the cut is then a finding. Garbage blocks are not: a power cut may expose stale
    data without breaking a promise (data=writeback). The engine's own rule for keeping a ledger
    (`broke_promises`) adds them, since its check follows a write phase with no cut, where stale
    data has no excuse."""
    return any(n for k, n in check.get("counters", {}).items() if k.endswith("_beyond_fsync"))


class CrashRunner:
    def __init__(
        self,
        campaign: CrashCampaign,
        source: str,
        out_dir: str,
        scratch: str,
        say: Callable[[str], None] = print,
        db: str | None = None,
    ):
        self.c = campaign
        self.db = db
        self.stored = None  # CrashStore, when results also go to the results store
        self.source = source
        self.out = os.path.abspath(out_dir)
        self.scratch = os.path.abspath(scratch)
        self.say = say
        self.doc: dict = {}

    def _save(self) -> None:
        tmp = os.path.join(self.out, RESULTS + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1)
        os.replace(tmp, os.path.join(self.out, RESULTS))

    def run(self) -> dict:
        os.makedirs(self.out, exist_ok=True)
        state = StateFile(self.scratch)
        self.doc = {
            "format": "fsmeter-crash/1",
            "fsmeter_version": __version__,
            "campaign": self.c.model_dump(mode="json"),
            "source": self.source,
            "host": host_info(),
            "started": datetime.now(UTC).isoformat(),
            "finished": None,
            "status": "running",
            "cells": [],
        }
        self._save()
        t0 = time.monotonic()
        if self.db is not None:
            from fsmeter.crash.store import CrashStore, cell_factors

            self.stored = CrashStore(
                self.db,
                self.c.campaign.name,
                self.source,
                [cell_factors(fs.title, size, dirty) for fs, size, dirty in self.c.cells()],
            )
            self.doc["store"] = {"path": str(self.stored.path), "campaign_id": self.stored.campaign_id}
        try:
            for fs, size, dirty in self.c.cells():
                cell = {
                    "filesystem": fs.name,
                    "title": fs.title,
                    "mount_options": fs.mount_options,
                    "mkfs_options": list(fs.mkfs_options),
                    "size_bytes": size,
                    "dirty_bytes": dirty,
                    "slug": cell_slug(fs, size, dirty),
                    "status": "running",
                    "points": [],
                }
                self.doc["cells"].append(cell)
                self._save()
                try:
                    self._cell(state, fs, size, dirty, cell)
                    cell["status"] = "done"
                except Exception as exc:  # noqa: BLE001 - one cell failing does not lose the others
                    cell["status"] = "failed"
                    cell["cause"] = f"{type(exc).__name__}: {exc}"
                    self.say(f"{cell['slug']}: failed: {exc}")
                except BaseException:
                    cell["status"] = "interrupted"
                    if self.stored is not None:
                        self.stored.cell_done(len(self.doc["cells"]) - 1, "interrupted")
                    raise
                if self.stored is not None:
                    self.stored.cell_done(len(self.doc["cells"]) - 1, cell["status"], cell.get("cause"))
                self._save()
            self.doc["status"] = "done"
        except BaseException:
            self.doc["status"] = "interrupted"
            raise
        finally:
            self.doc["finished"] = datetime.now(UTC).isoformat()
            self.doc["elapsed_s"] = time.monotonic() - t0
            self._save()
            if self.stored is not None:
                self.stored.close(self.doc["status"])
        return self.doc

    # -- one cell ------------------------------------------------------------------------------
    def _cell(self, state: StateFile, fs: CrashFs, size: int, dirty: int, cell: dict) -> None:
        slug = cell["slug"]
        ident = f"crash-{os.getpid()}-{len(self.doc['cells'])}"
        work = os.path.join(self.scratch, "crash", ident)
        cell_out = str(own_dir(os.path.join(self.out, slug), "crash output folder"))
        ledger = os.path.join(cell_out, "ledger.jsonl")
        # The images (and cp's copies of them) are made by name: their folder is this user's alone, so no
        # other user can plant a link under one of those names.
        images = str(own_dir(os.path.join(self.scratch, "images"), "crash image folder", private=True))
        live, base, work_img, log = (
            os.path.join(images, f"{ident}-{n}") for n in ("live.img", "base.img", "work.img", "writes.log")
        )
        records = [state.add("image", path=p) for p in (live, base, work_img, log)]
        state_work = state.add("mountpoint", path=work)
        os.makedirs(work, mode=0o700)
        try:
            fsys = get_filesystem(fs.name)
            fsys.check_available()
            with open(live, "wb") as f:
                f.truncate(size)
            argv = fsys.mkfs_argv(live, fsys.mkfs_options(_cfg(fs), overwrite=True), None)
            run_tool(argv, error=MkfsError, what=f"{argv[0]} ({fs.name})", hint="check the mkfs options")
            cell["mkfs_argv"] = argv
            cell["mkfs_version"] = fsys.tool_version
            _sparse_copy(live, base)
            t_write = self._record(state, fs, live, log, work, ledger, dirty, cell)
            cuts = draw_cuts(self.c.campaign.seed, slug, self.c.campaign.crash_points, *t_write)
            builder = CutBuilder(base, log, work_img, self.c.campaign.cut, seed=self.c.campaign.seed)
            cell["log_records"] = len(builder.records)
            cell["log_bytes"] = os.path.getsize(log)
            for k, cut_ns in enumerate(cuts):
                started = datetime.now(UTC).isoformat()
                point = self._point(
                    state, fs, builder, cut_ns, k, t_write[0], work, images, ident, ledger, dirty, cell_out
                )
                cell["points"].append(point)
                if self.stored is not None:
                    self.stored.record(
                        len(self.doc["cells"]) - 1, self.doc, cell, point, started, datetime.now(UTC).isoformat()
                    )
                self._save()
        finally:
            for rid, path in zip(records, (live, base, work_img, log)):
                undo_image({"path": path})
                state.remove(rid)
            if not _has_mounts(work):
                shutil.rmtree(work, ignore_errors=True)
            state.remove(state_work)

    def _engine_job(self, directory: str, ledger: str, dirty: int, cut_ns: int | None) -> str:
        w = self.c.workload
        spec = {
            "family": "crash",
            "runtime_s": self.c.campaign.runtime_s,
            "files_per_thread": w.files_per_thread,
            "file_size": w.file_size,
            "block_size": w.block_size,
            "write_size": w.write_size,
            "dirty_bytes": dirty,
            "overwrite_pct": w.overwrite_pct,
            "sync": w.sync,
            "checksum": w.checksum,
            "ledger": ledger,
        }
        if cut_ns is not None:
            spec["cut_ns"] = cut_ns
        return json.dumps(
            {
                "dir": directory,
                "threads": self.c.campaign.threads,
                "seed": self.c.campaign.seed,
                "interval_s": 1.0,
                "workload": spec,
            }
        )

    def _record(
        self, state: StateFile, fs: CrashFs, live: str, log: str, work: str, ledger: str, dirty: int, cell: dict
    ) -> tuple[int, int]:
        """The recorded write phase; returns its (start, end) CLOCK_MONOTONIC instants."""
        with LoggedDisk(state, live, log, work) as disk:
            cell["loop_direct_io"] = disk.direct_io()
            mnt = RecoveredMount(state, disk.device, os.path.join(work, "live"), fs.name, fs.mount_options)
            try:
                _, err = mnt.mount()
                if err:
                    raise MkfsError(f"mount of the fresh {fs.name} failed: {err}")
                seen = [m for m in sysinfo.mounts_at(mnt.path)]
                cell["mount_options_in_effect"] = seen[-1].options if seen else None
                self.say(
                    f"{cell['slug']}: writing for {self.c.campaign.runtime_s:g} s "
                    f"(dirty set {format_size(dirty)}, {self.c.campaign.threads} threads)"
                )
                session = EngineSession(self._engine_job(mnt.path, ledger, dirty, None))
                t_start = time.monotonic_ns()
                report = session.run_phase("write")
                t_end = time.monotonic_ns()
            finally:
                mnt.close()
        cell["write"] = {
            "elapsed_s": report.get("elapsed_s"),
            "bytes": report["total"]["bytes"],
            "bytes_per_s": report["total"]["bytes_per_s"],
            "counters": report.get("counters", {}),
            "interrupted": report.get("interrupted", False),
            "sync_lat_ns": {
                k: report["ops"][k]["lat"] for k in ("fsync", "fdatasync", "dirsync") if k in report.get("ops", {})
            },
        }
        if report.get("interrupted"):
            raise KeyboardInterrupt
        return t_start, t_end

    def _point(
        self,
        state: StateFile,
        fs: CrashFs,
        builder: CutBuilder,
        cut_ns: int,
        k: int,
        t0: int,
        work: str,
        images: str,
        ident: str,
        ledger: str,
        dirty: int,
        cell_out: str,
    ) -> dict:
        cut_img = os.path.join(images, f"{ident}-cut{k}.img")
        rid = state.add("image", path=cut_img)
        point: dict = {"index": k, "cut_ns": cut_ns, "cut_after_s": (cut_ns - t0) / 1e9}
        keep = False
        try:
            t_build = time.monotonic()
            info = builder.build(cut_ns, cut_img)
            point["cut"] = info.__dict__
            point["build_s"] = time.monotonic() - t_build
            dio = "on" if self.c.campaign.recovery_direct_io else "off"
            out = run_tool(["losetup", f"--direct-io={dio}", "--find", "--show", cut_img], what="losetup (cut image)")
            dev = out.strip().splitlines()[-1]
            point["recovery_direct_io"] = _loop_dio(dev)
            lid = state.add("loop", device=dev, image=cut_img)
            mnt = RecoveredMount(state, dev, os.path.join(work, f"cut{k}"), fs.name, fs.mount_options)
            try:
                rec = recover(fs.name, dev, mnt)
                point["recovery"] = rec.as_dict()
                if rec.mount_error is None:
                    session = EngineSession(self._engine_job(mnt.path, ledger, dirty, cut_ns))
                    check = session.run_phase("check")
                    point["check"] = {
                        "counters": check.get("counters", {}),
                        "findings": check.get("extra", {}).get("findings", []),
                        "elapsed_s": check.get("elapsed_s"),
                    }
                    keep = lost_beyond_fsync(point["check"])
                else:
                    keep = True  # an image that does not mount after its own check is a finding too
            finally:
                mnt.close()
                detach_loop(dev, cut_img)
                state.remove(lid)
            point["finding"] = keep
            c = point.get("check", {}).get("counters", {})
            r = point.get("recovery", {})
            self.say(
                f"{os.path.basename(cell_out)}: cut {k + 1} at {point['cut_after_s']:.2f} s: "
                f"fsck {r.get('fsck_s') or 0:.2f} s (rc {r.get('fsck_rc')}), mount {r.get('mount_s') or 0:.2f} s, "
                f"promised blocks {c.get('blocks_promised', '-')}, lost beyond fsync "
                f"{c.get('blocks_lost_beyond_fsync', '-')}" + ("  FINDING: evidence kept" if keep else "")
            )
        finally:
            if keep or self.c.campaign.keep_images:
                # the image as the cut left it (rebuilt: recovery changed the one checked), and as recovered
                dst = os.path.join(cell_out, f"cut{k}.img")
                try:
                    builder.build(cut_ns, dst)
                    point["evidence_image"] = dst
                    _sparse_copy(cut_img, os.path.join(cell_out, f"cut{k}-recovered.img"))
                    point["recovered_image"] = os.path.join(cell_out, f"cut{k}-recovered.img")
                except OSError as exc:
                    point["evidence_error"] = str(exc)
            undo_image({"path": cut_img})
            state.remove(rid)
        return point


def _cfg(fs: CrashFs):
    from fsmeter.provision.specs import FsConfig

    return FsConfig(name=fs.name, mkfs_options=list(fs.mkfs_options), mount_options=fs.mount_options)


def _sparse_copy(src: str, dst: str) -> None:
    from fsmeter.crash.cut import copy_sparse

    copy_sparse(src, dst)


def _has_mounts(path: str) -> bool:
    from fsmeter.provision import sysinfo

    return any(m.target.startswith(path + "/") or m.target == path for m in sysinfo.proc_mounts())


def _loop_dio(device: str) -> bool | None:
    try:
        with open(f"/sys/block/{os.path.basename(device)}/loop/dio") as f:
            return f.read().strip() == "1"
    except OSError:
        return None
