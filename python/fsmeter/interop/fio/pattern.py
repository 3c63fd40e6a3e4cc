"""A fio job's access pattern: rw= (with its offset modifier) and the read/write mix, request sizes (bs, bsrange,
bssplit, per direction), trims, random_distribution, and fio's random map."""

from __future__ import annotations

import re

from fsmeter.families.access_params import check_distribution
from fsmeter.interop.fio.values import Ctx
from fsmeter.interop.fio_jobfile import FioOption, parse_fio_pct, parse_fio_size

RW_PATTERNS = {
    "read": (100, 0),
    "write": (0, 0),
    "randread": (100, 100),
    "randwrite": (0, 100),
    "rw": (None, 0),
    "readwrite": (None, 0),
    "randrw": (None, 100),
}


#: fio's trim patterns -> (random %, each trim followed by a write of the same range).
TRIM_PATTERNS = {"trim": (0, False), "randtrim": (100, False), "trimwrite": (0, True), "randtrimwrite": (100, True)}


def rw_mix(ctx: Ctx) -> tuple:
    """rw= (alias readwrite) with its modifier, rwmixread/rwmixwrite and percentage_random -> (the rw option,
    the pattern, the bytes each sequential request moves on past the last one's end, read %, random %)."""
    job = ctx.job
    rw_opt = job.get("rw") or job.get("readwrite")
    rw = "read" if rw_opt is None else (rw_opt.value or "").strip()
    seq_add = 0
    if ":" in rw:
        rw, _, mod = rw.partition(":")
        rw, mod = rw.strip(), mod.strip()
        try:  # fio: the I/Os before a new random offset, or the bytes added to each sequential one
            n = parse_fio_size(mod.lstrip("+-"), ctx.kb_base)
        except ValueError:
            ctx.fail(rw_opt, f"{mod!r} after ':' is not a number: write rw={rw}:N")
        if rw.startswith("rand"):
            if n > 1 or mod.startswith("-"):
                ctx.fail(
                    rw_opt,
                    f"the modifier ':{mod}' (a new random offset every N I/Os, sequential ones between) "
                    f"is not supported by fsmeter yet (planned): write rw={rw} for the plain pattern, or "
                    "run this job with fio",
                )
        elif n and rw not in ("read", "write", "trim"):
            ctx.fail(
                rw_opt,
                f"the offset modifier ':{mod}' on a mix of directions (fio keeps one position per "
                "direction) is not supported by fsmeter yet (planned): use it with read, write or trim, "
                "or run this job with fio",
            )
        elif n:
            seq_add = -n if mod.startswith("-") else n
    if rw not in RW_PATTERNS and rw not in TRIM_PATTERNS:
        ctx.fail(rw_opt, f"use one of {', '.join([*RW_PATTERNS, *TRIM_PATTERNS])}")
    read_pct, random_pct = RW_PATTERNS.get(rw, (0, TRIM_PATTERNS.get(rw, (0,))[0]))
    if read_pct is None:
        mr, mw = job.get("rwmixread"), job.get("rwmixwrite")
        if (
            mr is not None
            and mw is not None
            and ctx.int("rwmixread", 50, 0, 100) + ctx.int("rwmixwrite", 50, 0, 100) != 100
        ):
            ctx.fail(mw, "rwmixread and rwmixwrite must add up to 100")
        read_pct = (
            ctx.int("rwmixread", 50, 0, 100)
            if mr is not None
            else (100 - ctx.int("rwmixwrite", 50, 0, 100) if mw is not None else 50)
        )
    pr = job.get("percentage_random")
    if pr is not None and random_pct:
        if "," in (pr.value or ""):
            ctx.fail(pr, "one percentage for both directions only (fsmeter: planned)")
        random_pct = ctx.int("percentage_random", 100, 0, 100)
    return rw_opt, rw, seq_add, read_pct, random_pct


def requests(ctx: Ctx, rw: str, read_pct: int, random_pct: int, notes: list) -> tuple:
    """The request sizes per direction [(size, pct)] (bssplit, bsrange, bs or blocksize) as the access workload's
    entries -> (bssplit's lists or None, bs per direction, the sizes per direction, entries, trim then write?)."""
    split = _bssplit(ctx)
    ranges = _bsrange(ctx)
    if ranges is not None and split is None and any(lo != hi for lo, hi in ranges):
        # fio draws each request's size between the ends: the sizes it can draw, with their shares, as bssplit.
        split = tuple(range_split(lo, hi) for lo, hi in ranges)
        notes.append(
            f"{(ctx.job.get('bsrange') or ctx.job.get('blocksize_range')).as_written}: fio draws each size as "
            "min + max x a uniform fraction, rounded down to a multiple of min and capped at max; fsmeter draws "
            "the same sizes with the same shares ("
            + "; ".join(",".join(f"{s}/{p:g}%" for s, p in lst) for lst in split)
            + ")"
        )
    bs = (
        ((ranges[0][0], ranges[1][0]) if ranges else None)
        or _bs_pair(ctx, "bs")
        or _bs_pair(ctx, "blocksize")
        or (4096, 4096)
    )
    per_dir = split if split is not None else ([(bs[0], 100.0)], [(bs[1], 100.0)])
    entries = []
    if per_dir[0] == per_dir[1]:
        for size, pct in per_dir[0]:
            entries.append({"size": size, "weight": pct, "read_pct": float(read_pct), "random_pct": float(random_pct)})
    else:
        for d, share in ((0, read_pct), (1, 100 - read_pct)):
            for size, pct in per_dir[d]:
                if share > 0:
                    entries.append(
                        {
                            "size": size,
                            "weight": share * pct / 100.0,
                            "read_pct": 100.0 if d == 0 else 0.0,
                            "random_pct": float(random_pct),
                        }
                    )
    trim_then_write = False
    if rw in TRIM_PATTERNS:
        entries, trim_then_write = _trim_entries(ctx, rw, random_pct, notes)
    return split, bs, per_dir, entries, trim_then_write


def _bs_pair(ctx: Ctx, name: str) -> tuple | None:
    """bs=R or bs=R,W (a third, trim value is read by _trim_entries for the trim patterns)."""
    opt = ctx.job.get(name)
    if opt is None:
        return None
    parts = [p.strip() for p in (opt.value or "").split(",")]
    if len(parts) > 3 or not any(parts):
        ctx.fail(opt, "give bs=SIZE or bs=READ,WRITE")
    out = []
    for p in parts[:2]:
        if not p:
            out.append(4096)
            continue
        if "-" in p or ":" in p:
            ctx.fail(opt, "a block size range is not supported by fsmeter (planned, as bsrange): give one size")
        try:
            out.append(parse_fio_size(p, ctx.kb_base))
        except ValueError as exc:
            ctx.fail(opt, str(exc))
    if len(out) == 1:
        out.append(out[0])
    if min(out) <= 0:
        ctx.fail(opt, "must be > 0")
    return tuple(out)


def _bsrange(ctx: Ctx, dirs: int = 2) -> tuple | None:
    """bsrange (alias blocksize_range): ((lo, hi) for reads, (lo, hi) for writes[, (lo, hi) for trims]); a
    direction without a range takes the last one given, as fio fills them forward."""
    opt = ctx.job.get("bsrange") or ctx.job.get("blocksize_range")
    if opt is None:
        return None
    out = []
    for part in (opt.value or "").split(",")[:dirs]:
        lo, hi = ctx._range(FioOption(opt.name, part, opt.line, opt.written))
        if lo <= 0:
            ctx.fail(opt, "must be > 0")
        if hi // lo > 4096:
            ctx.fail(opt, "the larger end may be at most 4096 times the smaller: narrow the range")
        out.append((lo, hi))
    while len(out) < dirs:
        out.append(out[-1])
    return tuple(out[:dirs])


def range_split(lo: int, hi: int) -> list:
    """The sizes fio's get_next_buflen draws for a range [lo, hi], with their shares in percent: lo + hi x u
    (u uniform in [0, 1)) rounded down to a multiple of lo, then capped at hi. The size m (a multiple of lo) takes
    the part of [lo, lo + hi) that rounds to it: (min(m + lo, lo + hi) - m) / hi."""
    if lo == hi:
        return [(lo, 100.0)]
    shares: dict = {}
    m = lo
    while m < lo + hi:
        share = (min(m + lo, lo + hi) - m) / hi * 100.0
        size = min(m, hi)
        shares[size] = shares.get(size, 0.0) + share
        m += lo
    return sorted(shares.items())


def _bssplit(ctx: Ctx, dirs: int = 2) -> tuple | None:
    """bssplit=4k/10:64k/90 (one list for every direction) or READLIST,WRITELIST[,TRIMLIST] -> per direction
    [(size, pct)], for reads and writes (dirs=2) or also trims (dirs=3); a direction without a list takes the one
    before it, as fio fills them forward."""
    opt = ctx.job.get("bssplit")
    if opt is None:
        return None
    lists = [p for p in (opt.value or "").split(",")]
    if len(lists) > 3 or not lists[0].strip():
        ctx.fail(opt, "give SIZE/PCT:SIZE/PCT..., or READLIST,WRITELIST")
    out = []
    for lst in lists[:dirs]:
        if not lst.strip():
            out.append(None)
            continue
        entries, free = [], 0
        for item in lst.split(":"):
            size_s, sep, pct_s = item.partition("/")
            try:
                size = parse_fio_size(size_s, ctx.kb_base)
            except ValueError as exc:
                ctx.fail(opt, str(exc))
            if size <= 0:
                ctx.fail(opt, f"{size_s.strip()!r}: a block size must be > 0")
            if sep and pct_s.strip():
                try:  # fio: each percentage 0..100, and together at most 100
                    pct = parse_fio_pct(pct_s)
                except ValueError as exc:
                    ctx.fail(opt, str(exc))
            else:
                pct, free = None, free + 1
            entries.append([size, pct])
        given = sum(p for _, p in entries if p is not None)
        if given > 100 or (free == 0 and abs(given - 100) > 1e-9):
            ctx.fail(opt, f"the percentages add up to {given:g}, not 100")
        for e in entries:  # fio shares what is left equally among the sizes without a percentage
            if e[1] is None:
                e[1] = (100.0 - given) / free
        out.append([(s, p) for s, p in entries if p > 0])
    while len(out) < dirs:
        out.append(out[-1])
    return tuple(x if x is not None else out[0] for x in out)


def _trim_entries(ctx: Ctx, rw: str, random_pct: int, notes: list) -> tuple:
    """rw=trim/randtrim/trimwrite/randtrimwrite: hole punches of fio's trim block size (bs's third value, else
    its write value), each followed by a write of the same range for the *trimwrite kinds."""
    opt = ctx.job.get("bs") or ctx.job.get("blocksize")
    parts = [p.strip() for p in (opt.value or "").split(",")] if opt is not None else []
    size = 4096
    for p in reversed(parts[:3]):  # fio fills missing values forward: bs=8k,32k trims with 32k
        if p:
            try:
                size = parse_fio_size(p, ctx.kb_base)
            except ValueError as exc:
                ctx.fail(opt, str(exc))
            break
    if size <= 0:
        ctx.fail(opt, "must be > 0")
    sizes = _trim_split(ctx, notes) or [(size, 100.0)]
    then_write = TRIM_PATTERNS[rw][1]
    if then_write:
        if len(sizes) > 1:
            notes.append(
                f"rw={rw}: each write covers the range just trimmed, of the size drawn for the trim, as in fio"
            )
        elif len(parts) > 1 and parts[1] and parts[1] != parts[-1]:
            notes.append(
                f"rw={rw}: each write covers the range just trimmed ({size} bytes), whatever bs says for writes"
            )
    notes.append(
        f"rw={rw}: a trim on a file is a hole punched over its range (fallocate PUNCH_HOLE|KEEP_SIZE); "
        "fio's own file engines issue a block-device discard there"
    )
    return [
        {"size": s, "weight": pct, "read_pct": 0.0, "random_pct": float(random_pct), "trim_pct": 100.0}
        for s, pct in sizes
    ], then_write


def _trim_split(ctx: Ctx, notes: list) -> list | None:
    """The trim sizes [(size, pct)] of bssplit or bsrange, or None: fio's third list or range is the trims', and
    a missing one is the write's (the last given), as fio fills them forward."""
    split = _bssplit(ctx, dirs=3)
    if split is not None:
        return split[2]
    ranges = _bsrange(ctx, dirs=3)
    if ranges is None:
        return None
    lo, hi = ranges[2]
    if lo != hi:
        notes.append(
            f"{(ctx.job.get('bsrange') or ctx.job.get('blocksize_range')).as_written}: each trim's size is drawn "
            f"as fio draws it, between {lo} and {hi} bytes"
        )
    return range_split(lo, hi)


def random_distribution(ctx: Ctx, notes: list) -> str:
    """random_distribution=: fio's meanings, checked as the engine checks them (zoned kinds refused); and
    random_generator=, accepted with a note."""
    gen = ctx.job.get("random_generator")
    if gen is not None:
        g = (gen.value or "").strip()
        if g not in ("tausworthe", "lfsr", "tausworthe64"):
            ctx.fail(gen, "use tausworthe, lfsr or tausworthe64")
        notes.append(
            f"random_generator={g}: fsmeter draws its offsets from xoshiro256++ (the random map, when on, "
            "visits each block once per pass, as fio's lfsr does)"
        )
    opt = ctx.job.get("random_distribution")
    if opt is None:
        return "random"
    value = (opt.value or "").strip()
    kind = re.split(r"[:=]", value, maxsplit=1)[0].strip()
    if kind in ("zoned", "zoned_abs", "sequence") and value[len(kind) :].startswith("="):
        value = kind + ":" + value[len(kind) + 1 :]  # fio's documentation also writes zoned_abs=...
    if not value.isascii():  # float() reads other scripts' digits (zipf:١.٢), fio's strtod does not
        ctx.fail(opt, "write its numbers in ASCII digits")
    try:
        if kind in ("zoned", "zoned_abs"):
            from fsmeter.families.access_params import format_zoned, parse_zoned

            value = format_zoned(*parse_zoned(value, lambda z: parse_fio_size(z, ctx.kb_base)))
        else:
            value = check_distribution(value)
    except ValueError as exc:
        ctx.fail(opt, str(exc))
    if kind in ("zoned", "zoned_abs"):
        notes.append(
            f"random_distribution={(opt.value or '').strip()}: fio's zones: each random request picks a zone "
            "by its share of the accesses (per direction), then a block uniformly inside it; fio's random "
            "map is off, as in fio"
        )
    elif kind == "sequence":
        notes.append(
            f"random_distribution={value}: random requests visit these blocks in turn, as fio's sequence "
            "distribution (counted per direction and per thread)"
        )
    elif value != "random":
        notes.append(
            f"random_distribution={value}: fio's definition; the hot blocks are spread over each file by a "
            "permutation (fio: a multiplicative hash), and fio's random map is off, as in fio"
        )
    return value


def dir_min_bs(ctx: Ctx, split: tuple | None, bs: tuple) -> tuple:
    """fio's smallest block size per direction (read, write, trim): from bssplit (a list for each direction given;
    trims take the write list when two lists are given), else from bs/blocksize (a value not ended by a comma
    applies to the directions after it; an empty one is fio's 4 KiB)."""
    if split is not None and ctx.job.get("bssplit") is None:  # a bsrange range: its smaller ends
        return min(s for s, _ in split[0]), min(s for s, _ in split[1]), min(s for s, _ in split[1])
    if split is not None:
        lists = (ctx.job.get("bssplit").value or "").split(",")
        trim = min(s for s, _ in split[1])
        if len(lists) > 2 and lists[2].strip():
            try:
                trim = min(parse_fio_size(item.partition("/")[0], ctx.kb_base) for item in lists[2].split(":"))
            except ValueError as exc:
                ctx.fail(ctx.job.get("bssplit"), str(exc))
        return min(s for s, _ in split[0]), min(s for s, _ in split[1]), trim
    opt = ctx.job.get("bs") or ctx.job.get("blocksize")
    parts = [p.strip() for p in (opt.value or "").split(",")] if opt is not None else []
    trim = bs[1]
    if len(parts) > 2:
        try:
            trim = parse_fio_size(parts[2], ctx.kb_base) if parts[2] else 4096
        except ValueError as exc:
            ctx.fail(opt, str(exc))
    return bs[0], bs[1], trim


def dir_map_block(
    ctx: Ctx,
    per_dir: tuple,
    mins: tuple,
    read_pct: int,
    random_pct: int,
    distribution: str,
    nrfiles: int,
    time_based: bool,
    notes: list,
) -> int:
    """fio's random map when a direction's smallest block is not the job's (rw_min_bs, over reads, writes and
    trims): fio keeps one map of rw_min_bs blocks, each direction draws and marks blocks in units of its own
    smallest size (io_u.c: last_block, __get_next_rand_offset, mark_random_map), and the job ends the first time a
    draw's next free block lies past the file (get_next_offset fails). The engine keeps that map and that stop
    (random_map_block). -> rw_min_bs when it applies, else 0 (with a note when fio's map would differ)."""
    job = ctx.job
    used = [d for d, on in ((0, read_pct > 0), (1, read_pct < 100)) if on]
    block = min(mins)
    if (
        not random_pct
        or ctx.flag("norandommap", False)
        or distribution != "random"
        or all(mins[d] == block for d in used)
    ):
        return 0
    gen = job.get("random_generator")
    why = None
    if job.get("blockalign") is not None or job.get("ba") is not None:
        return 0  # fio: any blockalign turns its random map off
    if gen is not None and (gen.value or "").strip() == "lfsr":
        why = "random_generator=lfsr (fio then keeps no map but an LFSR over the same blocks)"
    elif random_pct != 100:
        why = f"percentage_random={random_pct}"
    elif nrfiles != 1:
        why = f"{nrfiles} files per job"
    elif any(s % mins[d] or mins[d] % block for d in used for s, _ in per_dir[d]):
        why = "sizes that are not multiples of their direction's smallest"
    if why is not None:
        notes.append(
            f"per-direction block sizes under fio's random map with {why}: fio keeps one map of {block}-byte "
            "blocks that each direction indexes in units of its own smallest size, and may end the job "
            f"before its bytes are done; fsmeter keeps a map of {block}-byte blocks for every direction "
            "alike and moves the job's bytes"
        )
        return 0
    loops = job.get("loops")
    if loops is not None and ctx.int("loops", 1, 1, 1 << 32) > 1:
        ctx.fail(
            loops,
            "loops with per-direction block sizes under fio's random map is not supported by fsmeter "
            "(fio ends each loop where its draws say, and starts the next one afresh): remove loops, or "
            "add norandommap",
        )
    if time_based and ctx.flag("randrepeat", True):
        ctx.fail(
            job.get("time_based"),
            "time_based with per-direction block sizes under fio's random map: fio ends "
            "each pass where its draws say and, with randrepeat=1 (its default), seeds "
            "its random numbers again and repeats the same pass; fsmeter runs this only "
            "with randrepeat=0 (each pass drawn afresh): add randrepeat=0, or norandommap",
        )
    units = ", ".join(f"{('reads', 'writes')[d]} {mins[d]}" for d in used)
    notes.append(
        f"per-direction block sizes under fio's random map: fio keeps one map of {block}-byte blocks and "
        f"each direction draws and marks blocks in units of its own smallest size ({units} bytes), so a "
        "request of that size takes one block of the map; the job ends the first time a draw's next free "
        "block lies past the file, at a point that depends on the draws. fsmeter keeps the same map and "
        "the same stop, so its bytes and I/O counts vary with the seed as fio's do: compare them over "
        "seeds, not run by run (up to fio 3.34, randrepeat=1, its default, draws the same offsets whatever "
        "randseed says; randrepeat=0 with randseed=N varies them)"
    )
    return block


def dir_entries(per_dir: tuple, read_pct: int, random_pct: int) -> list:
    """Each direction's sizes as entries of their own (read_pct 100 or 0), in fio's order: its bssplit sorted by
    percentage (options.c: bs_cmp), which decides the size taken when the drawn one does not fit."""
    entries = []
    for d, share in ((0, read_pct), (1, 100 - read_pct)):
        for size, pct in sorted(per_dir[d], key=lambda x: x[1]):
            if share > 0:
                entries.append(
                    {
                        "size": size,
                        "weight": share * pct / 100.0,
                        "read_pct": 100.0 if d == 0 else 0.0,
                        "random_pct": float(random_pct),
                    }
                )
    return entries


def sized_map(sizes: list, align: int, random_pct: float, distribution: str, ctx) -> bool:
    """fio's random map over several request sizes, which the engine keeps as fio does (a map of the smallest
    blocks; a request ends at the first block already done): every request random, the sizes multiples of the
    smallest, offsets aligned to it (fio's default blockalign)."""
    return (
        len(set(sizes)) > 1
        and random_pct == 100
        and distribution == "random"
        and align == min(sizes)
        and all(s % align == 0 for s in sizes)
        and not ctx.flag("norandommap", False)
    )


def random_map(
    ctx: Ctx,
    params: dict,
    notes: list,
    dir_block: int,
    random_pct: int,
    sizes: list,
    align: int,
    distribution: str,
) -> None:
    """The random distribution and fio's random map (each block once per pass) onto the access parameters: a
    per-direction map (dir_block), a map of one request size aligned to itself, or one over several sizes."""
    if distribution != "random":
        params["random_distribution"] = distribution
    if dir_block:
        params["random_map"], params["random_map_block"] = True, dir_block
    elif random_pct and not ctx.flag("norandommap", False) and distribution == "random":
        if (len(set(sizes)) == 1 and align == sizes[0]) or sized_map(sizes, align, random_pct, distribution, ctx):
            params["random_map"] = True  # each block once per pass, as fio's random map
        else:
            notes.append(
                "random offsets are drawn with replacement (fio's norandommap): fsmeter keeps a random "
                "map only for one request size aligned to itself"
            )
