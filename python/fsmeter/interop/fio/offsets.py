"""Where a fio job's requests go beyond the plain pattern: rw=...:N offset modifiers, strided zones and the
sequence distribution's stride (the access shape), offset_increment (each clone its own region of a shared file)
and sprandom's preconditioning plan."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fsmeter.interop.fio.values import Ctx, fio_float
from fsmeter.interop.fio_jobfile import is_percentage
from fsmeter.units import MAX_SIZE_BYTES

if TYPE_CHECKING:
    from fsmeter.interop.fio.files import Placement


def _walk_end(filesize: int, bs: int, skip: int) -> int | None:
    """The requests of fio's forward walk with a hole (rw=read:N) before it ends, or None when it wraps. fio's
    get_next_seq_offset: after a request ending at E, the walk ends when E is the file's end; else the next
    starts at E + N, back at the file's start when that is at or past the end (a wrap: the walk then repeats
    until the job's bytes are done), and the job ends when a request starting there would not fit (fio's
    t0007: 85 reads of 1 MiB over 128 MiB with rw=read:512k). Requests start at k x (bs + N)."""
    step = bs + skip
    last = (filesize - bs) // step  # the last request that fits
    end = last * step + bs
    if end >= filesize:
        return last + 1
    nxt = end + skip
    return None if nxt >= filesize else last + 1


def access_shape(
    ctx: Ctx,
    rw: str,
    seq_add: int,
    sizes: list,
    filesize: int,
    nrfiles: int,
    offset: int,
    random_pct: int,
    distribution: str,
    notes: list,
) -> dict:
    """rw=...:N, strided zones (zonemode=strided) and the sequence distribution's stride: {"params": access
    parameters, "cap": I/Os per clone fio does before the shape stops it, None when it never does} ({} without a
    shape: the plain pattern's count holds)."""
    job = ctx.job
    rw_opt = job.get("rw") or job.get("readwrite")
    out: dict = {}
    if seq_add:
        if nrfiles > 1:
            ctx.fail(
                rw_opt,
                f"the offset modifier with {nrfiles} files per job is not supported by fsmeter yet "
                "(planned): give the job one file, or run this job with fio",
            )
        if len(set(sizes)) > 1:
            ctx.fail(
                rw_opt,
                "the offset modifier with several request sizes is not supported by fsmeter yet "
                "(planned): give one bs, or run this job with fio",
            )
        if seq_add < 0 and offset:
            ctx.fail(
                rw_opt,
                "a backwards walk after offset= is not supported by fsmeter yet (planned): remove "
                "offset=, or run this job with fio",
            )
        if abs(seq_add) >= filesize:
            ctx.fail(rw_opt, f"the modifier moves {abs(seq_add)} bytes, not less than the {filesize}-byte file")
        cap = _walk_end(filesize, sizes[0], seq_add) if seq_add > 0 and not random_pct and not offset else None
        if cap is not None:
            out = {"params": {"seq_add": seq_add}, "cap": cap}
            notes.append(
                f"rw={rw}:{seq_add}: each request starts {seq_add} bytes after the end of the one before it "
                f"(fio's offset modifier) and the walk ends where the next would not fit, after {cap} requests "
                "per pass, as fio's does"
            )
        else:
            # fio starts again at the file's start when a request would not fit, until the job's bytes are done.
            out = {"params": {"seq_add": seq_add}, "cap": None}
            notes.append(
                f"rw={rw}:{seq_add}: each request starts {abs(seq_add)} bytes "
                f"{'after' if seq_add > 0 else 'before'} the end of the one before it (fio's offset modifier), "
                "starting again at the beginning of the file where a request would not fit, as fio does; each "
                "thread walks its whole file, as each fio clone does"
            )
    zones = _zones(ctx, sizes, filesize, nrfiles, random_pct, notes)
    if zones is not None:
        if seq_add:
            ctx.fail(
                rw_opt,
                "the offset modifier with strided zones is not supported by fsmeter yet (planned): "
                "use one or the other, or run this job with fio",
            )
        out = {"params": dict(zip(("zone_size", "zone_range", "zone_skip"), zones)), "cap": None}
    stride = job.get("random_sequence_stride")
    if stride is not None:
        on = ctx.flag("random_sequence_stride")
        if not distribution.startswith("sequence"):
            ctx.fail(stride, "only with random_distribution=sequence:...: add one, or remove it")
        if on:
            out = {"params": {"random_sequence_stride": True}, "cap": None}
    if distribution.startswith("zoned_abs"):
        from fsmeter.families.access_params import parse_zoned

        covered = max(sum(z for _, z in d) for d in parse_zoned(distribution)[1])
        if covered > filesize:
            ctx.fail(
                job.get("random_distribution"),
                f"the zones cover {covered} bytes, more than the {filesize}-byte "
                "file (fio stops: zoned_abs sizes exceed file size): make them "
                "smaller",
            )
    if distribution.startswith("sequence"):
        dist_opt = job.get("random_distribution")
        if nrfiles > 1:
            ctx.fail(
                dist_opt,
                f"the sequence distribution with {nrfiles} files per job is not supported by fsmeter "
                "yet (planned): give the job one file, or run this job with fio",
            )
        if random_pct < 100:
            ctx.fail(
                dist_opt,
                "the sequence distribution with sequential requests in the mix (percentage_random) is "
                "not supported by fsmeter yet (planned): remove percentage_random",
            )
        from fsmeter.families.access_params import parse_sequence

        seq = parse_sequence(distribution)
        blocks = filesize // min(sizes)
        beyond = [b for b in seq if b >= blocks]
        if beyond:
            ctx.fail(
                dist_opt,
                f"block {beyond[0]} is beyond the file's {blocks} blocks of {min(sizes)} bytes (fio "
                "stops with an error): give block numbers below that",
            )
        if out.get("params", {}).get("random_sequence_stride"):
            if rw == "randrw":
                ctx.fail(
                    stride,
                    "a strided sequence over reads and writes together is not supported by fsmeter yet "
                    "(planned): use randread or randwrite",
                )
            # fio's request i goes to block (i // n) * n + seq[i % n] and stops at the first past the file.
            n = len(seq)
            g = max(0, (blocks - max(seq)) // n - 1)
            while True:
                hit = next((j for j in range(n) if g * n + seq[j] >= blocks), None)
                if hit is not None:
                    out["cap"] = g * n + hit
                    break
                g += 1
    return out


def _zones(ctx: Ctx, sizes: list, filesize: int, nrfiles: int, random_pct: int, notes: list) -> tuple | None:
    """zonemode=strided (or zonesize= alone, as fio reads it) -> (zone_size, zone_range, zone_skip) bytes, or None.
    zonemode=zbd (zoned block devices) is refused."""
    job = ctx.job
    zm = job.get("zonemode")
    mode = (zm.value or "").strip() if zm is not None else None
    if mode not in (None, "none", "strided", "zbd"):
        ctx.fail(zm, "use none or strided (zbd is for zoned block devices)")
    if mode == "zbd":
        ctx.fail(
            zm,
            "zoned block devices are not supported and fsmeter will not support them (fsmeter measures "
            "filesystems, not zoned devices): use zonemode=strided for zones of a file, or run this job "
            "with fio",
        )
    zsize, zrange, zskip = ctx.size("zonesize", 0), ctx.size("zonerange", 0), ctx.size("zoneskip", 0)
    if mode is None and zsize:
        mode = "strided"  # fio: a zone size without a zone mode means strided zones
    if mode != "strided":
        return None
    anchor = zm or job.get("zonesize")
    if not zsize:
        ctx.fail(anchor, "strided zones need zonesize= (bytes transferred per zone): add it")
    if nrfiles > 1:
        notes.append(
            f"{anchor.as_written} with {nrfiles} files per job: fio turns strided zones off for a job with "
            "several files, and so does fsmeter"
        )
        return None
    zrange = zrange or zsize
    if random_pct and not ctx.flag("norandommap", False):
        ctx.fail(
            anchor,
            "random requests in strided zones with fio's random map (reset at every zone) are not "
            "supported by fsmeter yet (planned): add norandommap, or run this job with fio",
        )
    if random_pct and zrange > filesize:
        ctx.fail(
            anchor,
            f"random requests in a zone of {zrange} bytes, larger than the {filesize}-byte file, are "
            "not supported by fsmeter: make zonerange smaller",
        )
    notes.append(
        f"zonemode=strided: {zsize} bytes in each zone of {zrange} bytes, then {zskip} bytes skipped, back "
        "to the first zone after the end of the file or where a request would not fit (fio's strided "
        "zones); each thread walks its whole file, as each fio clone does"
    )
    return zsize, zrange, zskip


def offset_increment(
    ctx: Ctx,
    params: dict,
    notes: list,
    *,
    numjobs: int,
    offset: int,
    place: Placement,
    rw: str,
    sizes: list,
    seq_add: int,
    random_pct: int,
    time_based: bool,
    loops: int,
    distribution: str,
    shape: dict,
) -> int | None:
    """fio's offset_increment: the clones share the named file and clone t (from 0) works on its own region,
    from offset + t * increment (filesetup.c get_start_offset; N% is N% of the file's size, and the start is then
    aligned up to the request size), for size= bytes, or without size= to the end of the file. Each clone does
    io_size (else its region's size) per pass, and a pass ends early at its region's end (io_u.c: an offset past
    the region ends it), then `loops` passes. -> the largest clone's bytes per pass (None: time-based)."""
    job = ctx.job
    opt = job.get("offset_increment")
    value = (opt.value or "").strip()
    if numjobs == 1:
        ctx.fail(opt, "moves the clones of a job (numjobs) apart, and this job has one: remove it, or set numjobs")
    why = None
    if place.thread_files:
        why = "with each clone on its own files (no filename=): name the one file the clones share with filename="
    elif len(place.names) > 1:
        why = "with several files: give one filename="
    elif len(set(sizes)) > 1:
        why = "with several request sizes: give one bs"
    elif rw not in ("read", "write", "randread", "randwrite", "randrw") or random_pct not in (0, 100):
        why = "with a sequential mix, trims or percentage_random: use read, write, randread, randwrite or randrw"
    elif seq_add < 0:
        why = "with a backwards walk (rw=...:-N)"
    elif distribution != "random" or shape.get("params", {}).get("zone_size"):
        why = "with zones or a random_distribution other than random"
    elif job.get("size") is not None and is_percentage(job.get("size").value or ""):
        why = "with size=N%: give a size"
    elif job.get("number_ios") is not None:
        why = "with number_ios"
    if why:
        ctx.fail(opt, f"offset_increment {why} is not supported by fsmeter yet (planned); or run this job with fio")
    bs = sizes[0]
    real = min(place.existing) if place.existing else None
    sized = job.get("size") is not None or job.get("filesize") is not None
    if is_percentage(value):
        pct = value[:-1].strip()
        if not (pct.isascii() and pct.isdigit()) or int(pct) > 100:  # str.isdigit() takes '²', int() does not
            ctx.fail(opt, "give a whole percentage from 0 to 100 (of the file's size), or a size")
        if real is None:
            ctx.fail(
                opt,
                "a percentage of the file's size needs the file there before the run (fio takes its "
                "size): create it, or give a size",
            )
        step, align = int(pct) * real // 100, bs  # fio: aligned up to the smallest block size
    else:
        step, align = ctx.size("offset_increment", 0), 1
    starts = [-(-(offset + t * step) // align) * align for t in range(numjobs)]
    if random_pct and any(s % params["alignment"] for s in starts):
        ctx.fail(
            opt,
            f"clone 1 would start at {starts[1]} bytes, not a multiple of the alignment "
            f"({params['alignment']} bytes): make offset_increment a multiple of it",
        )
    region = params["file_size"] if sized else None
    lens = []
    for t, start in enumerate(starts):
        n = region if region is not None else (real - start)
        if n < bs:
            ctx.fail(
                opt,
                f"clone {t} would start at {start} bytes, leaving {max(n, 0)} of the file's {real} bytes "
                f"for {bs}-byte requests (fio: 'you need to specify valid offset='): give a smaller "
                "offset_increment or fewer clones",
            )
        lens.append(n)
    io = ctx.size("io_size") or ctx.size("io_limit")
    if io and io > MAX_SIZE_BYTES:
        ctx.fail(
            job.get("io_size") or job.get("io_limit"),
            f"more than fsmeter's limit of {MAX_SIZE_BYTES} bytes (1 PiB): give a smaller size",
        )
    v_opt = job.get("verify")
    verifying = (
        (v_opt is not None and (v_opt.value or "").strip() not in ("", "0", "none"))
        or job.get("verify_pattern") is not None
    ) and ctx.flag("do_verify", True)
    # fio counts a verifying writer's read-back in the bytes its io_size is compared with (td->io_bytes).
    rw_per_io = 2 if verifying and rw in ("write", "randwrite") else 1
    if verifying and rw == "randrw" and io:
        ctx.fail(
            opt,
            "offset_increment with io_size on a verified randrw job is not supported by fsmeter yet "
            "(planned): remove io_size, or run this job with fio",
        )
    per_pass, passes = [], []
    for n in lens:
        whole = -(-(io or n) // bs)
        if random_pct and ctx.flag("norandommap", False):
            cap = whole
        elif random_pct:
            cap = n // params["alignment"]  # fio's random map: each block once, then the pass ends
        elif seq_add:
            cap = (n - bs) // (bs + seq_add) + 1  # holes: a request every bs + N bytes while one fits
        else:
            cap = n // bs
        k = min(whole, cap)
        # fio's thread_main: `loops` passes, then more while io_size is not done (keep_running: the clone's
        # reads and writes below io_size by at least a request). Each pass stops at io_size * its number
        # (io_bytes_exceeded) or at the region's end, so every pass does k requests.
        # The smallest p >= loops with io - p * k * bs * rw_per_io < bs, computed (a loop of passes would take
        # io_size / (k * bs) steps: 2^46 for an io_size of 2^64).
        p, per = loops, k * bs * rw_per_io
        if io and not time_based and per > 0 and io >= bs:
            p = max(loops, (io - bs) // per + 1)
        per_pass.append(k)
        passes.append(p)
    end = max(s + n for s, n in zip(starts, lens))
    params["offset"] = starts[0]
    params["file_size"] = max(end, real or 0) - starts[0]
    params["thread_regions"] = [
        {"start": s, "len": n, "bytes": 0 if time_based else k * bs * p, "pass_ios": 0 if time_based else k}
        for s, n, k, p in zip(starts, lens, per_pass, passes)
    ]
    if not time_based:
        params["total_bytes"] = sum(r["bytes"] for r in params["thread_regions"])
    notes[:] = [n for n in notes if not n.startswith("filename= with numjobs")]
    notes.append(
        f"{opt.as_written}: the {numjobs} threads share the file, thread t from {starts[0]} + t * {step} "
        f"bytes{' (aligned up to ' + str(align) + ')' if align > 1 else ''}, each on "
        + (f"{region} bytes" if region is not None else "the rest of the file")
        + ", as fio's clones"
    )
    return None if time_based else max(per_pass) * bs


def sprandom(
    ctx: Ctx,
    rw: str,
    sizes: list,
    align: int,
    numjobs: int,
    nfiles: int,
    logical: int,
    filesize: int,
    random_pct: int,
    distribution: str,
    time_based: bool,
    loops: int,
    params: dict,
    notes: list,
) -> None:
    """fio's sprandom (SanDisk's preconditioning): one job writing one file at random, norandommap and the lfsr
    generator, as fio's init.c and filesetup.c ask; the job writes the file's physical size (logical + op),
    region by region, rewriting the share of each region its steady-state model asks for (the engine's
    sprandom.rs). Refused where fio refuses it, or where fsmeter cannot do what fio does."""
    opt = ctx.job.get("sprandom")
    if opt is None or not ctx.flag("sprandom", False):
        return
    if rw != "randwrite" or random_pct != 100:
        ctx.fail(opt, "fio's sprandom needs random writes only: write rw=randwrite (and no percentage_random)")
    gen = ctx.job.get("random_generator")
    if gen is not None and (gen.value or "").strip() != "lfsr":
        ctx.fail(gen, "fio: sprandom requires random_generator=lfsr: write random_generator=lfsr or remove it")
    if gen is None:
        notes.append("sprandom sets random_generator=lfsr, as fio does")
    nrm = ctx.job.get("norandommap")
    if nrm is not None and not ctx.flag("norandommap", False):
        ctx.fail(nrm, "fio: sprandom requires norandommap=1: write norandommap=1 or remove it")
    if nrm is None:
        notes.append("sprandom sets norandommap=1, as fio does")
    if numjobs != 1:
        ctx.fail(ctx.job.get("numjobs"), "sprandom preconditions with one job: write numjobs=1")
    if nfiles != 1:
        ctx.fail(opt, f"fio's sprandom supports only one file ({nfiles} here): give one filename and nrfiles=1")
    if len(set(sizes)) != 1 or align != sizes[0]:
        ctx.fail(opt, "sprandom writes blocks of one size aligned to itself: give one bs and blockalign equal to it")
    if distribution != "random":
        ctx.fail(
            ctx.job.get("random_distribution"), "fio ignores it with sprandom, which picks its own offsets: remove it"
        )
    if time_based:
        ctx.fail(ctx.job.get("time_based"), "sprandom ends when its plan is written: remove time_based")
    if loops > 1:
        ctx.fail(ctx.job.get("loops"), "sprandom ends when its plan is written: remove loops")
    for name in ("zonesize", "zonerange", "zoneskip", "offset_increment"):
        if ctx.job.get(name) is not None:
            ctx.fail(ctx.job.get(name), "sprandom picks its own offsets over the whole file: remove it")
    ver = ctx.job.get("verify")
    if ver is not None and (ver.value or "").strip() not in ("", "0", "none"):
        ctx.fail(
            ver,
            "verifying sprandom's rewritten blocks is not supported by fsmeter yet (planned): remove "
            "verify, or run this job with fio",
        )
    op_opt = ctx.job.get("spr_op")
    op = 0.15
    if op_opt is not None:
        try:
            op = fio_float(op_opt.value or "")
        except ValueError:
            ctx.fail(op_opt, "give the over-provisioning ratio as a number in (0, 1), e.g. spr_op=0.15")
        if not 0.0 < op < 1.0:
            ctx.fail(op_opt, "give the over-provisioning ratio as a number in (0, 1), e.g. spr_op=0.15")
    regions = ctx.int("spr_num_regions", 100, 1, 1 << 24)
    cache = ctx.size("spr_cs", 0) or 0
    bs = sizes[0]
    physical = logical + math.ceil(logical * op)
    physical -= physical % bs
    region = physical // regions
    if region < bs:
        ctx.fail(
            ctx.job.get("spr_num_regions") or opt,
            f"{regions} regions leave less than one {bs}-byte block per region of the {physical}-byte "
            "physical size: use fewer regions",
        )
    if cache > region:
        ctx.fail(
            ctx.job.get("spr_cs"),
            f"spr_cs must be smaller than the region size ({region} bytes), which "
            f"means at most {physical // cache} regions",
        )
    params.pop("random_map", None)
    params["sprandom"] = {
        "over_provisioning": op,
        "regions": regions,
        "cache_size": cache,
        "logical_size": logical if logical < filesize else 0,
    }
    nio = ctx.job.get("number_ios")
    cap = ctx.int("number_ios", 0, 0) * bs if nio is not None and ctx.int("number_ios", 0, 0) > 0 else None
    params["total_bytes"] = min(physical, cap) if cap else physical
    notes.append(
        f"sprandom: {physical} bytes ({physical // bs} writes) over {regions} regions of {region // bs} "
        "writes; fio draws its fresh offsets from its lfsr and its keep/skip choices from its own "
        "generator, fsmeter from its own: the counts and each region's share are the same, the offsets "
        "are not fio's"
    )
