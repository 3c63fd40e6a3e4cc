"""What a fio job's buffers are and what its writes carry: iomem, buffer_pattern, verify= with its options and
verify_pattern (read back as fio reads it back), compressible and deduplicable contents, and untorn writes."""

from __future__ import annotations

import re

from fsmeter.families.access_params import parse_buffer_pattern, verify_header_len
from fsmeter.interop.fio.values import Ctx

#: fio's iomem (alias mem) -> the access family's buffer_memory.
_IOMEM = {
    "malloc": "heap",
    "mmap": "heap",
    "mmapshared": "heap",
    "shm": "heap",
    "mmaphuge": "hugetlb",
    "shmhuge": "hugetlb",
}


def buffer_memory(ctx: Ctx, notes: list) -> str:
    """fio's iomem (or mem; the later line wins, as in fio): where the I/O buffers come from. Plain
    pages (malloc, mmap, mmapshared, shm) are heap buffers here; huge pages (mmaphuge, shmhuge) are
    hugetlb buffers, from the same vm.nr_hugepages pool."""
    given = [o for o in (ctx.job.get("iomem"), ctx.job.get("mem")) if o is not None]
    if not given:
        return "heap"
    opt = max(given, key=lambda o: o.line)
    kind, _, path = (opt.value or "").strip().partition(":")
    if kind not in _IOMEM:
        ctx.fail(
            opt,
            "GPU memory is not supported by fsmeter (not planned)"
            if kind.startswith("cuda")
            else f"use one of {', '.join(_IOMEM)}",
        )
    if path and kind in ("mmap", "mmapshared"):
        notes.append(
            f"{opt.name}={kind}:{path}: fio maps that file for its buffers; fsmeter uses heap buffers "
            "(4 KiB pages) and does not touch the file"
        )
    elif path and kind == "mmaphuge":
        notes.append(
            f"{opt.name}={kind}:{path}: fsmeter maps anonymous hugetlb pages (MAP_HUGETLB) from the same "
            "pool instead of a file on hugetlbfs"
        )
    elif path:
        ctx.fail(opt, f"{kind} takes no file: remove ':{path}'")
    elif kind in ("mmap", "mmapshared", "shm"):
        notes.append(
            f"{opt.name}={kind}: fio's buffers then come from {'shmget' if kind == 'shm' else 'mmap'}: "
            "4 KiB pages, as fsmeter's heap buffers"
        )
    return _IOMEM[kind]


#: fio's verify methods fsmeter's verification has (docs/verify.md); the others are refused naming them.
_VERIFY = {
    "crc32c": "crc32c",
    "crc32c-intel": "crc32c",
    "sha256": "sha256",
    "xxhash": "xxh3",
    "md5": "md5",
    "sha1": "sha1",
    "crc32": "crc32",
    "crc16": "crc16",
    "crc7": "crc7",
    "crc64": "crc64",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha512": "sha512",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
    "meta": "crc32c",
}


#: fio's options that go with a verify method (_verify_options).
_VERIFY_OPTS = (
    "verify_backlog",
    "verify_backlog_batch",
    "verify_fatal",
    "verify_async",
    "verify_write_sequence",
    "verify_dump",
)


def _without_method(ctx: Ctx, notes: list) -> None:
    """Verify options without verify=: fio checks nothing and runs the job; so does fsmeter, saying so when the
    option asks for checking (do_verify=0, verify_fatal=0 and the like are fio's defaults: nothing to say)."""
    for name in ("do_verify", "verify_fatal", "verify_dump", "verify_write_sequence"):
        if ctx.job.get(name) is not None:
            ctx.flag(name)
    ctx.int("verify_backlog", 0, 0, 1 << 20)
    ctx.int("verify_backlog_batch", 0, 0, 1 << 20)
    ctx.int("verify_async", 0, 0, 1 << 16)
    ctx.size("verify_interval")
    for name in ("verify_interval", *_VERIFY_OPTS, "experimental_verify"):
        opt = ctx.job.get(name)
        if opt is None or name in ("do_verify",):
            continue
        if name in ("verify_fatal", "verify_dump", "experimental_verify") and not ctx.flag(name):
            continue
        if name in ("verify_backlog", "verify_backlog_batch", "verify_async") and not ctx.int(name, 0, 0):
            continue
        notes.append(f"{opt.as_written} without verify=: nothing is checked, as in fio (add verify=crc32c to check)")


def buffer_pattern_and_verify(ctx: Ctx, params: dict, notes: list, passes: int = 1) -> None:
    """buffer_pattern= and verify= (with do_verify, verify_interval) onto the access workload's own. `passes`:
    the job's passes over its files as fsmeter runs them (its loops; 1 when time-based)."""
    bp = ctx.job.get("buffer_pattern")
    if bp is not None:
        try:
            parse_buffer_pattern((bp.value or "").strip())
        except ValueError as exc:
            ctx.fail(bp, str(exc))
        params["buffer_pattern"] = (bp.value or "").strip()
    v = ctx.job.get("verify")
    if ctx.job.get("verify_pattern") is not None:
        _verify_pattern(ctx, params, notes)
        _pattern_options(ctx, params, notes)
        return
    if v is None:
        _without_method(ctx, notes)
        return
    method = (v.value or "").strip()
    if method in ("null", "0", "none"):
        notes.append(f"verify={method}: nothing is verified, as in fio")
        for name in _VERIFY_OPTS:
            if ctx.job.get(name) is not None:
                notes.append(f"{ctx.job.get(name).as_written}: nothing to do without a verify method, as in fio")
        return
    if method not in _VERIFY:
        ctx.fail(
            v,
            f"fsmeter's verification has {', '.join(sorted(_VERIFY))}, not {method} (not planned): "
            "use one of those, or run this job with fio",
        )
    if not ctx.flag("do_verify", True):
        notes.append(
            f"verify={method} with do_verify=0: fio writes its headers and checks nothing; fsmeter leaves "
            "verification off"
        )
        for name in _VERIFY_OPTS:
            if ctx.job.get(name) is not None:
                notes.append(f"{ctx.job.get(name).as_written}: nothing is checked with do_verify=0, as in fio")
        return
    if any(e.get("trim_pct") for e in params["entries"]):
        ctx.fail(v, "cannot be combined with trims (a trimmed block reads back as zeros): remove one")
    if bp is not None:
        ctx.fail(
            v,
            "cannot be combined with buffer_pattern (fsmeter's verified blocks carry their own header and "
            "data): remove one",
        )
    params["verify"] = _VERIFY[method]
    params["reuse_files"] = False  # verified blocks are laid out with their headers
    block = ctx.size("verify_interval")
    if block is not None:
        params["verify_block"] = block
    header = verify_header_len(params["verify"])
    smallest = block if block is not None else min(e["size"] for e in params["entries"])
    if smallest < header + 8:
        src = next((ctx.job.get(n) for n in ("verify_interval", "bssplit", "bs", "blocksize") if ctx.job.get(n)), v)
        ctx.fail(
            src,
            f"with verify={method}, each {smallest}-byte block must hold fsmeter's {header}-byte header and "
            f"data: use {'verify_interval' if block is not None else 'bs'} >= {header + 8} bytes"
            + ("" if header == 80 else " (or a checksum of at most 32 bytes, whose header is 80 bytes)"),
        )
    if method == "xxhash":
        notes.append("verify=xxhash: fsmeter checks with XXH3 (64-bit) where fio uses XXH32; both checksum each block")
    if method == "meta":
        notes.append(
            "verify=meta: fio checks its block header only; fsmeter checks its header and a crc32c of the "
            "data after it (the same I/Os)"
        )
    _verify_options(ctx, params, notes)
    if ctx.flag("experimental_verify"):
        notes.append(
            "experimental_verify=1: fio finds the blocks to check by replaying the job's offsets instead of "
            "keeping a log of them; fsmeter checks every block it wrote in its verify phase: the same reads"
        )
        if passes > 1:
            notes.append(
                "experimental_verify=1 with loops: fio (3.33 to 3.42) does one pass whatever loops says (its I/O "
                "log has one pass of writes and of reads); fsmeter does every loop, as loops asks"
            )
    notes.append(
        f"verify={method}: every block written carries fsmeter's header and checksum, and reads check it "
        "(docs/verify.md)"
    )


def _verify_pattern(ctx: Ctx, params: dict, notes: list) -> None:
    """verify_pattern (with verify=pattern, or no verify=, which fio then sets to pattern): the layout and every
    write carry the pattern, every read and a verify phase check it. do_verify=0 writes it unchecked."""
    vp, v = ctx.job.get("verify_pattern"), ctx.job.get("verify")
    method = (v.value or "").strip() if v is not None else "pattern"
    meta = method == "meta"
    if method not in ("pattern", "meta"):
        ctx.fail(
            vp,
            f"with verify={method} (fio: {method}'s header and the pattern in each block) is not supported by "
            "fsmeter yet (planned): use verify=pattern (or no verify=) for the pattern alone, verify=meta for "
            "a header and the pattern, or run this job with fio",
        )
    text = (vp.value or "").strip()
    try:
        n = len(parse_buffer_pattern(text))
    except ValueError as exc:
        if "%o" in text and not re.search(r'"[^"]*%o[^"]*"', text):  # fio's, not a malformed pattern
            ctx.fail(
                vp,
                "%o (fio writes each block's offset into the pattern) is not supported by fsmeter yet "
                "(planned): write the pattern without it, or run this job with fio",
            )
        ctx.fail(vp, str(exc))
    if ctx.job.get("buffer_pattern") is not None:
        ctx.fail(vp, "cannot be combined with buffer_pattern (the verify pattern is what fio writes): remove one")
    if any(e.get("trim_pct") for e in params["entries"]):
        ctx.fail(vp, "cannot be combined with trims (a trimmed range reads back as zeros): remove one")
    block = ctx.size("verify_interval")
    for name, val in [("a request size", e["size"]) for e in params["entries"]] + [
        ("blockalign", params["alignment"]),
        ("offset", params["offset"]),
        ("verify_interval", block or 0),
        ("rw's offset modifier", abs(params.get("seq_add", 0))),
        ("1 MiB (fsmeter's layout writes)", 1 << 20),
    ]:
        if val % n:
            ctx.fail(
                vp,
                f"its {n} bytes do not divide {name} ({val} bytes): fsmeter checks each byte against its "
                "place in the pattern by file offset, so use a pattern of 1, 2, 4, 8 ... bytes",
            )
    if meta:
        _meta_pattern(ctx, params, notes, text, n, block)
        return
    if not ctx.flag("do_verify", True):
        params["buffer_pattern"] = text
        notes.append(
            f"verify_pattern={text} with do_verify=0: fio writes the pattern and checks nothing here; so "
            "does fsmeter (written as buffer_pattern)"
        )
        return
    params["verify_pattern"] = text
    notes.append(
        f"verify_pattern={text}: the layout and every write carry the pattern; every read and a verify "
        "phase after the run check each byte against it (fio's verify=pattern); files already there are "
        "read as they are, as fio reads them"
    )


def _pattern_options(ctx: Ctx, params: dict, notes: list) -> None:
    """verify_backlog (and _batch), verify_fatal, verify_write_sequence, verify_async and verify_dump beside
    verify_pattern (verify=pattern or verify=meta)."""
    dump = ctx.job.get("verify_dump")
    if dump is not None and ctx.flag("verify_dump", False):
        ctx.fail(
            dump,
            "with verify_pattern is not supported by fsmeter yet (planned): it reports the first corrupt bytes "
            "of each read instead; remove verify_dump, or run this job with fio",
        )
    backlog, batch = _backlog(ctx)
    fatal = ctx.flag("verify_fatal", False)
    if not params.get("verify_pattern") or not params.get("verify_pattern_check", True):
        # do_verify=0: the pattern is written and nothing read back or checked, as in fio.
        for name, on in (("verify_backlog", backlog), ("verify_fatal", fatal)):
            if on:
                notes.append(f"{ctx.job.get(name).as_written} with do_verify=0: nothing is checked, as in fio")
        return
    if backlog:
        params["verify_backlog"], params["verify_backlog_batch"] = backlog, batch
        params["verify_phase"] = False
        notes.append(_backlog_note(backlog, batch) + "; no separate verify phase")
    if fatal:
        params["verify_fatal"] = True
        notes.append(
            "verify_fatal=1: a thread stops at its first read that does not hold the pattern, as fio's job does"
        )
    if ctx.job.get("verify_write_sequence") is not None and not ctx.flag("verify_write_sequence", True):
        notes.append("verify_write_sequence=0: a pattern carries no write number to compare: nothing changes")
    if ctx.job.get("verify_async") is not None and ctx.int("verify_async", 0, 0, 1 << 16):
        notes.append(
            f"{ctx.job.get('verify_async').as_written}: fsmeter compares the pattern in the thread that "
            "read it: the same I/Os"
        )


def _meta_pattern(ctx: Ctx, params: dict, notes: list, text: str, n: int, block: int | None) -> None:
    """verify=meta with verify_pattern (fio's surface-scan): fio fills each verify_interval block with the pattern and
    writes its header over the block's start; a read checks the header's fields and each pattern byte after it. fsmeter
    writes its own header there (verify_pattern_meta)."""
    sizes = [e["size"] for e in params["entries"]]
    blk = block or min(sizes)
    opt = ctx.job.get("verify_interval") or ctx.job.get("verify")
    if blk < 88:
        ctx.fail(
            opt,
            f"{blk} bytes per header is too small for fsmeter's 80-byte header and a payload: use a "
            "verify_interval of at least 88 bytes (fio's own header is 48 bytes)",
        )
    for name, val in [("a request size", s) for s in sizes] + [
        ("blockalign", params["alignment"]),
        ("offset", params["offset"]),
    ]:
        if val % blk:
            ctx.fail(
                opt,
                f"{blk} bytes per header does not divide {name} ({val} bytes): fsmeter puts one header at "
                "the start of each block of a fixed grid: use a verify_interval that divides it",
            )
    if (1 << 20) % blk:
        ctx.fail(opt, f"{blk} bytes per header does not divide 1 MiB (fsmeter's layout writes): use a power of two")
    if blk % n:
        ctx.fail(opt, f"{blk} bytes per header is not a multiple of the {n}-byte verify_pattern: use one that is")
    params["verify_pattern"] = text
    params["verify_pattern_meta"] = True
    if block is not None:
        params["verify_block"] = block
    where = f"each {blk}-byte block (verify_interval) starts with fsmeter's 80-byte header (offset, length, writer, "
    where += "crc32c of the header) and holds the pattern in the rest, in the place fio puts it"
    if not ctx.flag("do_verify", True):
        params["verify_pattern_check"] = False
        notes.append(f"verify=meta, verify_pattern={text}, do_verify=0: {where}; nothing is checked here, as in fio")
        return
    notes.append(
        f"verify=meta, verify_pattern={text}: {where}; every read and a verify phase after the run check each "
        "header (magic, length, the block's offset, its crc32c) and every pattern byte, as fio checks its "
        "header and the pattern; fio's header is 48 bytes, so the two tools' files differ in bytes 48-79 of a "
        "block"
    )


def _backlog(ctx: Ctx) -> tuple[int, int]:
    """verify_backlog and verify_backlog_batch, read as fio reads them (a batch needs a backlog)."""
    backlog = ctx.int("verify_backlog", 0, 0, 1 << 20)
    batch = ctx.int("verify_backlog_batch", 0, 0, 1 << 20)
    if batch and not backlog:
        ctx.fail(
            ctx.job.get("verify_backlog_batch"),
            "has no effect without verify_backlog: add verify_backlog=N, or remove it",
        )
    return backlog, batch


def _backlog_note(backlog: int, batch: int) -> str:
    return (
        f"verify_backlog={backlog}: each thread reads back and checks its oldest written requests "
        f"whenever {backlog} wait, {batch or backlog} at a time, during the run (as fio does: counted as "
        "the job's reads), and those left once its writes are done"
    )


def _verify_options(ctx: Ctx, params: dict, notes: list) -> None:
    """verify_backlog (and _batch), verify_fatal, verify_write_sequence and verify_async beside a verify method."""
    backlog, batch = _backlog(ctx)
    if backlog:
        params["verify_backlog"], params["verify_backlog_batch"] = backlog, batch
        notes.append(_backlog_note(backlog, batch))
    if ctx.flag("verify_dump", False):
        params["verify_dump"] = True
        notes.append(
            "verify_dump=1: the first 16 corrupt blocks each thread reads are written as "
            "<file>.<offset>.received and .expected beside the job's file (fio: in its working directory)"
        )
    if ctx.flag("verify_fatal", False):
        params["verify_fatal"] = True
        notes.append("verify_fatal=1: a thread stops at its first corrupt block, as fio's job does")
    if not ctx.flag("verify_write_sequence", True):
        params["verify_write_sequence"] = False
        notes.append(
            "verify_write_sequence=0: write numbers are not compared (a block is checked for its own "
            "header and checksum only), as fio then skips its sequence number"
        )
    if ctx.int("numjobs", 1, 1, 4096) > 1 and not params.get("thread_files"):
        notes.append(
            "verify with clones sharing files: fio warns that they may overwrite each other's blocks and "
            "its check then fails (a block holds another clone's seed) and stops the clone; fsmeter checks "
            "such a block for its own header and checksum, so it reads every write back and reports no "
            "corruption for them"
        )
    if ctx.job.get("verify_async") is not None and ctx.int("verify_async", 0, 0, 1 << 16):
        notes.append(
            f"{ctx.job.get('verify_async').as_written}: fio checks completed reads in helper threads; "
            "fsmeter checks them in the thread that read them, inside the read's measured time: the same "
            "I/Os"
        )


def verify_readback(ctx: Ctx, params: dict, notes: list, per_job: int, time_based: bool, loops: int) -> None:
    """fio reads back what a job wrote once its writes are done (after each loop, and with time_based after each
    size= of I/O): each thread here reads back its own written requests in the run, counted as its reads, through
    the verify_backlog machinery with N = the writes of one pass; the verify phase of the whole files is dropped."""
    if not params.get("verify") or not any(e["read_pct"] < 100 for e in params["entries"]):
        return
    sizes = [e["size"] for e in params["entries"] if e["read_pct"] < 100]
    writes_only = all(e["read_pct"] == 0 for e in params["entries"])
    params["verify_phase"] = False
    if params.get("verify_backlog"):
        return
    pass_writes = -(-per_job // min(sizes))
    # Each thread keeps up to this many written requests (24 bytes each): about 100 MiB for the whole job.
    cap = min(1 << 20, max(1 << 12, (1 << 22) // ctx.int("numjobs", 1, 1, 4096)))
    if pass_writes > cap:
        pass_writes = cap
        notes.append(
            f"verify: more than {cap} writes per thread to read back: fsmeter reads back every {cap} "
            "writes instead of after all of them (the same reads, earlier)"
        )
    elif (time_based or loops > 1) and not writes_only:
        notes.append(
            "verify with a read/write mix: fio reads back after each pass of size= bytes; fsmeter after as "
            "many writes as a pass could hold (the same reads, at other moments)"
        )
    params["verify_backlog"] = pass_writes
    notes.append(
        "verify: as fio, each thread reads back every request it wrote once its writes are done"
        + (" (after each pass)" if time_based or loops > 1 else "")
        + ", as reads of the job; no separate verify phase"
    )


def write_contents(ctx: Ctx, params: dict, notes: list, size: int, nrfiles: int) -> None:
    """fio's buffer contents (its init-time fixups and fill_io_buffer): buffer_compress_percentage and
    buffer_compress_chunk, dedupe_percentage with dedupe_mode, dedupe_working_set_percentage and dedupe_global,
    refill_buffers, zero_buffers and scramble_buffers, onto the access workload's `content`."""
    job = ctx.job
    cp_opt, dp_opt = job.get("buffer_compress_percentage"), job.get("dedupe_percentage")
    cp = ctx.int("buffer_compress_percentage", 0, 0, 100)
    dp = ctx.int("dedupe_percentage", 0, 0, 100)
    for name in ("dedupe_mode", "dedupe_working_set_percentage", "dedupe_global"):
        if job.get(name) is not None and dp_opt is None:
            ctx.fail(job.get(name), "has no effect without dedupe_percentage: add dedupe_percentage=N, or remove it")
    if job.get("buffer_compress_chunk") is not None and cp_opt is None:
        ctx.fail(
            job.get("buffer_compress_chunk"),
            "has no effect without buffer_compress_percentage: add buffer_compress_percentage=N, or remove it",
        )
    chunk = ctx.size("buffer_compress_chunk", 512)
    if chunk > 1 << 30:
        ctx.fail(job.get("buffer_compress_chunk"), "at most 1 GiB")
    pattern = bool(params.get("buffer_pattern"))
    zero = ctx.flag("zero_buffers", False)
    refill_opt = job.get("refill_buffers")
    refill = ctx.flag("refill_buffers", False)
    verified = bool(params.get("verify") or params.get("verify_pattern"))
    # fio: a compress or dedupe option given turns its own scramble off (TD_F_COMPRESS); 100% compressible is
    # zero_buffers; another share, or any dedupe, refills every write unless refill_buffers says otherwise.
    compress_flag = cp_opt is not None or dp_opt is not None
    if cp == 100:
        zero, cp = True, 0
    elif cp and refill_opt is None:
        refill = True
    if dp:
        refill = True
    if (cp or dp) and verified:
        ctx.fail(
            cp_opt if cp else dp_opt,
            "cannot be combined with verify (fsmeter's verified blocks carry their own header and data): remove one",
        )
    if cp and not refill:
        ctx.fail(
            refill_opt,
            "refill_buffers=0 with buffer_compress_percentage (fio then fills each buffer once and "
            "writes it again and again) is not supported by fsmeter (planned): remove refill_buffers=0",
        )
    content: dict | None = None
    if cp or dp:
        content = {"compress_pct": cp, "compress_chunk": chunk, "dedupe_pct": dp}
        if zero and dp:
            notes.append(
                f"buffer_compress_percentage=100 with dedupe_percentage (line {cp_opt.line}): fio turns the "
                "100 into zero_buffers, which its dedupe fill does not use, so the blocks are random, not zero; "
                "fsmeter writes what fio writes"
            )
        if pattern and dp and not cp:
            notes.append(
                "buffer_pattern with dedupe_percentage alone: fio's dedupe fill writes random blocks, not the "
                "pattern; so does fsmeter"
            )
        if dp:
            content.update(_dedupe(ctx, params, dp, size, nrfiles))
        notes.append(
            "write contents: the compressible share, the chunks and which writes repeat which follow fio's "
            "definitions; the random bytes are fsmeter's own, so no block matches one fio writes"
        )
    elif verified:
        pass  # verified writes carry their own bytes
    elif zero and not pattern:
        content = {"zero": True}
    elif refill and not pattern:
        content = {"refill": True}
    elif job.get("scramble_buffers") is not None and ctx.flag("scramble_buffers", True) and not compress_flag:
        content = {"scramble": True}
    if content is not None:
        params["content"] = content
        if any(e.get("trim_pct") for e in params["entries"]) and not params.get("trim_then_write"):
            ctx.fail(
                cp_opt or dp_opt or job.get("zero_buffers") or refill_opt or job.get("scramble_buffers"),
                "trims write no data: remove it",
            )


def _dedupe(ctx: Ctx, params: dict, dp: int, size: int, nrfiles: int) -> dict:
    """dedupe_mode, dedupe_working_set_percentage and dedupe_global, checked as fio checks them."""
    job = ctx.job
    mode_opt = job.get("dedupe_mode")
    mode = (mode_opt.value or "").strip() if mode_opt is not None else "repeat"
    if mode not in ("repeat", "working_set"):
        ctx.fail(mode_opt, "use repeat or working_set")
    out: dict = {"dedupe_mode": mode}
    if mode == "working_set":
        wsp_opt = job.get("dedupe_working_set_percentage")
        wsp = ctx.int("dedupe_working_set_percentage", 5, 0, 100)
        if job.get("size") is None:
            ctx.fail(
                mode_opt,
                "the working set is a share of size=, which the job does not set (fio refuses this too): add size=",
            )
        if nrfiles != 1:
            ctx.fail(
                mode_opt,
                f"the working set needs one file per job, and this job has {nrfiles} (fio refuses this "
                "too): use nrfiles=1",
            )
        if wsp + dp > 100:
            ctx.fail(
                wsp_opt or mode_opt,
                f"dedupe_working_set_percentage {wsp} + dedupe_percentage {dp} is more than "
                "100: the working set's blocks are unique, so that share cannot be copies "
                "(fio refuses this too)",
            )
        writes = [
            e["size"]
            for e in params["entries"]
            if e.get("read_pct", 0) + e.get("trim_pct", 0) < 100 or params.get("trim_then_write")
        ]
        min_write = min(writes) if writes else min(e["size"] for e in params["entries"])
        n = size * wsp // 100 // min_write
        if n < 1:
            ctx.fail(
                wsp_opt or mode_opt,
                f"the working set of {wsp}% of {size} bytes holds no {min_write}-byte block: "
                "raise dedupe_working_set_percentage or size",
            )
        if n > 1 << 32:
            ctx.fail(
                wsp_opt or mode_opt,
                f"a working set of {n} blocks: fsmeter keeps at most 2^32: lower "
                "dedupe_working_set_percentage, or raise bs",
            )
        out["working_set"] = n
    if ctx.flag("dedupe_global", False):
        out["global"] = True
    return out


def atomic(ctx: Ctx, params: dict, notes: list, engine: str) -> None:
    """fio's atomic=1: every write with RWF_ATOMIC (its pvsync2, libaio and io_uring engines), which the kernel takes
    with O_DIRECT only; the engine checks the file's untorn-write unit when it opens the files."""
    opt = ctx.job.get("atomic")
    if opt is None or not ctx.flag("atomic", False):
        return
    writes = params.get("trim_then_write") or any(
        e.get("read_pct", 0) + e.get("trim_pct", 0) < 100 for e in params["entries"]
    )
    if not writes:
        notes.append(f"atomic=1 (line {opt.line}) on a job without writes: fio turns it off, and so does fsmeter")
        return
    if engine not in ("io_uring", "libaio"):
        ctx.fail(
            opt, f"ioengine={engine} issues no untorn writes (fio refuses it too): use ioengine=io_uring or libaio"
        )
    if not params.get("direct"):
        ctx.fail(opt, "the kernel takes untorn writes (RWF_ATOMIC) with O_DIRECT only: add direct=1")
    params["atomic"] = True
    notes.append(
        "atomic=1: every write carries RWF_ATOMIC; the run stops at the start if the filesystem's atomic "
        "write unit (statx STATX_WRITE_ATOMIC) does not hold the write size"
    )
