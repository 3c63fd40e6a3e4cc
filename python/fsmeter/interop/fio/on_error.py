"""fio's continue_on_error, ignore_error and error_dump: the errors a job counts and goes on after."""

from __future__ import annotations

from fsmeter.interop.fio.values import Ctx

#: fio's error classes (continue_on_error) -> the access workload's continue_on lists.
_ERROR_CLASSES = {
    "none": (),
    "read": ("read",),
    "write": ("write",),
    "io": ("read", "write"),
    "verify": ("verify",),
    "all": ("read", "write", "verify"),
    "0": (),
    "1": ("read", "write", "verify"),
}


#: fio's errno names (its str2error), resolved on this machine; EWOULDBLOCK and EDEADLOCK are aliases.
_FIO_ERRNOS = (
    "EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT ENOTBLK EBUSY EEXIST "
    "EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM "
    "ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY ELOOP EWOULDBLOCK ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT "
    "EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR EXFULL ENOANO EBADRQC EBADSLT EDEADLOCK EBFONT ENOSTR ENODATA "
    "ETIME ENOSR ENONET ENOPKG EREMOTE ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ "
    "EBADFD EREMCHG ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK EDESTADDRREQ "
    "EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE "
    "EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN "
    "ETOOMANYREFS ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL "
    "EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED EKEYREJECTED EOWNERDEAD "
    "ENOTRECOVERABLE ERFKILL EHWPOISON"
).split()


def _errno_list(ctx: Ctx, opt, text: str) -> list:
    """One class's list of ignore_error: errno names (fio's) or numbers (decimal or 0x), separated by ':'."""
    import errno as _errno

    out = []
    for item in text.split(":"):
        item = item.strip()
        if not item:
            break  # fio stops at an empty name
        if item.startswith("E"):
            n = getattr(_errno, item, None) if item in _FIO_ERRNOS else None
            if not isinstance(n, int):
                ctx.fail(opt, f"{item} is not an error name fio knows: give its number")
        else:
            try:
                n = abs(int(item, 16) if item[:2].lower() == "0x" else int(item, 10))
            except ValueError:
                n = 0
            if not n:
                ctx.fail(opt, f"{item!r} is not an error: give a name such as ENOSPC or a number")
        out.append(n)
    return out


def on_error(ctx: Ctx, params: dict, notes: list) -> None:
    """fio's continue_on_error (which classes of errors a job goes on after: read, write, verify), ignore_error
    (READ,WRITE,VERIFY lists of errnos, each replacing the class's default EIO and EILSEQ, and turning the class
    on) and error_dump -> the access workload's continue_on."""
    import errno as _errno

    coe, ign = ctx.job.get("continue_on_error"), ctx.job.get("ignore_error")
    classes: set = set()
    if coe is not None:
        v = (coe.value or "").strip().lower()
        if v not in _ERROR_CLASSES:
            ctx.fail(coe, f"use one of {', '.join(_ERROR_CLASSES)}")
        classes = set(_ERROR_CLASSES[v])
    lists = {}
    if ign is not None:
        parts = (ign.value or "").split(",")
        if len(parts) > 3:
            ctx.fail(ign, "give READ_ERRORS,WRITE_ERRORS,VERIFY_ERRORS (each a ':' list)")
        for cls, text in zip(("read", "write", "verify"), parts):
            got = _errno_list(ctx, ign, text)
            if got:
                lists[cls] = got
        if coe is None or coe.line < ign.line:
            classes |= set(lists)  # fio: a list turns its class on (a later continue_on_error sets them anew)
    dump = ctx.flag("error_dump", True)
    if ctx.job.get("error_dump") is not None and not classes:
        notes.append(
            f"{ctx.job.get('error_dump').as_written}: without continue_on_error every error stops the job, "
            "and is always reported"
        )
    if not classes:
        return
    default = [_errno.EIO, _errno.EILSEQ]
    params["continue_on"] = {c: lists.get(c, default) for c in sorted(classes)}
    params["continue_on"]["dump"] = dump
    names = "; ".join(
        f"{c}: {', '.join(_errno.errorcode.get(n, str(n)) for n in params['continue_on'][c])}"
        for c in ("read", "write", "verify")
        if c in classes
    )
    notes.append(
        f"errors the job counts and goes on after ({names}), as fio's continue_on_error: the failed request "
        "is not measured, counts in the job's bytes, and the run reports the errors per direction and errno "
        "(fio's total_err, first_error)" + (" and the first 16 of each thread (error_dump)" if dump else "")
    )
    if "verify" in classes and not params.get("verify"):
        notes.append("continue_on_error for verify errors: the job verifies nothing (no verify=), so none can occur")
    elif "verify" in classes:
        notes.append(
            "continue_on_error for verify errors: fsmeter's verification counts every corrupt block and "
            "never stops the job on one"
        )
