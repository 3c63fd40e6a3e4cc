"""What ext2, ext3 and ext4 share: mke2fs, its flags, and an external journal device."""

from __future__ import annotations

from typing import ClassVar

from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.filesystems.base import Filesystem
from fsmeter.provision.specs import FsConfig

DATA_MODES = ("ordered", "writeback", "journal")


def _merge_extended(options: list[str]) -> list[str]:
    # mke2fs keeps only the last -E, so defaults and user extended options are joined into one
    # (user keys last, so they override ours).
    out, extended = [], []
    it = iter(options)
    for opt in it:
        if opt == "-E":
            extended.append(next(it, ""))
        elif opt.startswith("-E") and len(opt) > 2:
            extended.append(opt[2:])
        else:
            out.append(opt)
    if extended:
        out += ["-E", ",".join(e for e in extended if e)]
    return out


def _block_size(options: list[str]) -> str:
    for i, opt in enumerate(options):
        if opt == "-b" and i + 1 < len(options):
            return options[i + 1]
        if opt.startswith("-b") and len(opt) > 2:
            return opt[2:]
    return "4096"


class ExtFilesystem(Filesystem):
    mkfs_tool = "mke2fs"
    debian_package = "e2fsprogs"
    quiet_options = ["-q"]
    force_options = ["-F"]
    version_args = ["-V"]
    ext_type: ClassVar[str] = "ext2"

    def validate(self, cfg: FsConfig) -> None:
        super().validate(cfg)
        for opt in cfg.mount_options.split(","):
            if opt.startswith("data=") and opt[5:] not in DATA_MODES:
                raise ProvisionError(
                    f"{self.name}: mount option {opt!r}: use data=" + "|".join(DATA_MODES), exit_code=2
                )

    def mkfs_options(self, cfg: FsConfig, *, overwrite: bool) -> list[str]:
        return _merge_extended(["-t", self.ext_type, *super().mkfs_options(cfg, overwrite=overwrite)])

    def mkfs_argv(self, device: str, options: list[str], journal_device: str | None) -> list[str]:
        opts = list(options)
        if journal_device:
            # The journal's block size must match the filesystem's.
            if "-b" not in opts and not any(o.startswith("-b") and len(o) > 2 for o in opts):
                opts += ["-b", "4096"]
            opts += ["-J", f"device={journal_device}"]
        return ["mke2fs", *opts, device]

    def journal_mkfs_argv(self, journal_device: str, options: list[str], *, overwrite: bool) -> list[str] | None:
        flags = ["-q"] + (["-F"] if overwrite else [])
        return ["mke2fs", *flags, "-O", "journal_dev", "-b", _block_size(options), journal_device]
