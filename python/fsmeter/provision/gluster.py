"""A GlusterFS volume made by fsmeter: bricks on fsmeter's own loop filesystems, servers and
clients placed on hosts, every host mounting the volume through its own client.

    with Provisioner() as prov, NsHosts(2) as hosts:
        with GlusterVolume(hosts, prov, servers=["h2"], clients=["h1", "h2"],
                           brick_fs=FsConfig(name="xfs")) as vol:
            ... mpirun on hosts, --dir vol.path (each host sees its own client's mount there)
            record vol.info()

The hosts are any object with the namespace harness's interface (fsmeter.provision.nshosts.NsHosts):
``names``, ``ns`` (host -> network namespace), ``addr`` (host -> address), ``state`` (a private
folder), ``enter(host, argv)`` and ``bind(host, source, target)``. Each server host runs its own
glusterd with its state (/var/lib/glusterd, /var/log/glusterfs; /run is the host's already) in
folders of the harness, bound over the machine's in that host's processes only; so nothing of the machine's own
GlusterFS set-up (if any) is read or changed. Bricks are named by address, so no name service is
needed. Each client is a FUSE mount made from inside its host's network namespace, so its traffic
leaves from its own host.

Teardown, whatever happens: unmount the clients, stop the servers' gluster processes (they hold
the bricks), then the Provisioner unmounts and deletes the brick filesystems like any other.
Debian packages: glusterfs-server (servers), glusterfs-client (clients).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsmeter.provision.errors import ProvisionError
from fsmeter.provision.specs import FsConfig, TargetSpec

VOLUME_TYPES = ("distribute", "replicate")
#: Folders of a glusterd that must be private to each server host.
#: (/run, with glusterd's socket and pid file, is already the host's own.)
_SERVER_DIRS = {"glusterd": "/var/lib/glusterd", "log": "/var/log/glusterfs"}


#: Where Debian (and most distributions) install glusterd's translator, whose volume-option table names
#: every option `gluster volume set` takes.
_GLUSTERD_SO = ("/usr/lib/*/glusterfs/*/xlator/mgmt/glusterd.so", "/usr/lib*/glusterfs/*/xlator/mgmt/glusterd.so")
#: An option's name as gluster writes them (performance.write-behind, cluster.lookup-optimize).
_OPTION_RE = re.compile(r"[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9_-]*)+")
_MAX_VALUE_CHARS = 4096


@functools.cache
def known_volume_options() -> frozenset:
    """The option names the installed glusterd knows, or an empty set when its translator cannot be read.
    `gluster volume set help` would list them, but only with a glusterd running; the same names are the
    strings of glusterd's volume-option table (glusterd-volume-set.c), read here from glusterd.so."""
    import glob

    for pattern in _GLUSTERD_SO:
        for path in sorted(glob.glob(pattern)):
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            names = {
                m.group(1).decode() for m in re.finditer(rb"\x00([a-z][a-z0-9-]*(?:\.[a-z0-9][a-z0-9_-]*)+)\x00", data)
            }
            if "performance.write-behind" in names:  # the table is there: these are the option names
                return frozenset(names)
    return frozenset()


def volume_option_problem(key: str, value: str) -> str | None:
    """Why ``key = value`` cannot be set on a volume (`gluster volume set`), or None: the key is an option
    the installed glusterd knows (or, where its table cannot be read, is written like one); the value is
    one line of text. Checked when the campaign is read, not after the bricks are made."""
    import difflib

    if not _OPTION_RE.fullmatch(key) and not key.startswith("user."):
        return f"{key[:80]!r} is not a volume option's name (such as performance.write-behind)"
    known = known_volume_options()
    if known and key not in known and not key.startswith("user."):
        near = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        return f"{key}: not an option of the installed glusterd{hint}: see `gluster volume set help`"
    text = str(value)
    if not text.strip():
        return f"{key}: an empty value: give the option's value"
    if len(text) > _MAX_VALUE_CHARS:
        return f"{key}: a value of {len(text)} characters, more than {_MAX_VALUE_CHARS}"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        return f"{key}: the value holds a control character (a newline, a tab, ...): give it on one line"
    return None


def _run(argv: Sequence, what: str, timeout: float = 120) -> str:
    try:
        r = subprocess.run(
            list(map(str, argv)), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise ProvisionError(f"glusterfs: {what} did not finish in {timeout:g} s") from None
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise ProvisionError(f"glusterfs: {what} failed: {msg[-1] if msg else 'exit ' + str(r.returncode)}")
    return r.stdout


def client_version() -> str | None:
    """The glusterfs client's version (first line of `glusterfs --version`)."""
    if shutil.which("glusterfs") is None:
        return None
    r = subprocess.run(["glusterfs", "--version"], capture_output=True, text=True)
    return (r.stdout.splitlines() or [None])[0]


class GlusterVolume:
    """One volume: ``bricks_per_server`` bricks on each server, of ``brick_fs`` (a loop filesystem
    of ``brick_bytes`` each), distribute or replicate (replica = number of bricks)."""

    def __init__(
        self,
        hosts,
        prov,
        servers: Sequence[str],
        clients: Sequence[str],
        *,
        brick_fs: FsConfig = FsConfig(name="xfs"),
        brick_bytes: int = 512 << 20,
        bricks_per_server: int = 1,
        volume_type: str = "distribute",
        options: dict | None = None,
        name: str = "fsmvol",
    ):
        for tool, pkg in (
            ("glusterd", "glusterfs-server"),
            ("gluster", "glusterfs-server"),
            ("glusterfs", "glusterfs-client"),
        ):
            if shutil.which(tool) is None:
                raise ProvisionError(
                    f"glusterfs: {tool} not found: install the Debian packages glusterfs-server "
                    f"and glusterfs-client ({pkg} has {tool})",
                    exit_code=1,
                )
        if volume_type not in VOLUME_TYPES:
            raise ProvisionError(
                f"glusterfs volume_type {volume_type!r}: use one of {', '.join(VOLUME_TYPES)}", exit_code=2
            )
        for h in [*servers, *clients]:
            if h not in hosts.names:
                raise ProvisionError(
                    f"glusterfs: host {h!r} is not one of the hosts ({', '.join(hosts.names)})", exit_code=2
                )
        if not servers or not clients:
            raise ProvisionError("glusterfs: needs at least one server host and one client host", exit_code=2)
        self.hosts, self.prov = hosts, prov
        self.servers, self.clients = list(servers), list(clients)
        self.brick_fs, self.brick_bytes = brick_fs, int(brick_bytes)
        self.bricks_per_server = int(bricks_per_server)
        self.volume_type = volume_type
        self.options = dict(options or {})
        self.name = name
        self.bricks: list = []  # {"server", "mounted", "path"}
        self.mounts: dict = {}  # client host -> its mount point
        self.path: str | None = None
        self.started: list = []  # server hosts whose glusterd runs

    # -- set-up ---------------------------------------------------------------------------------------
    def __enter__(self) -> GlusterVolume:
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _server(self, host: str, argv: Sequence, what: str, timeout: float = 120) -> str:
        return _run(self.hosts.enter(host, argv), f"{what} on {host}", timeout)

    def _cli(self, host: str, args: Sequence, what: str, timeout: float = 120) -> str:
        return self._server(host, ["gluster", "--mode=script", *args], what, timeout)

    def _create(self) -> None:
        state = Path(self.hosts.state)
        for h in self.servers:
            for key, dst in _SERVER_DIRS.items():
                src = state / h / f"gluster-{key}"
                src.mkdir(parents=True, exist_ok=True)
                self.hosts.bind(h, str(src), dst)
            for _ in range(self.bricks_per_server):
                mnt = self.prov.create(TargetSpec(kind="loop", size_bytes=self.brick_bytes), self.brick_fs)
                brick = os.path.join(mnt.path, "brick")
                os.makedirs(brick, exist_ok=True)
                self.bricks.append({"server": h, "mounted": mnt, "path": brick})
        for h in self.servers:
            self.started.append(h)
            self._server(h, ["glusterd"], "starting glusterd")
        first = self.servers[0]
        self._wait_cli(first)
        for h in self.servers[1:]:
            self._wait_cli(h)
            self._cli(first, ["peer", "probe", self.hosts.addr[h]], "peer probe")
        spec = [f"{self.hosts.addr[b['server']]}:{b['path']}" for b in self.bricks]
        kind = ["replica", str(len(spec))] if self.volume_type == "replicate" else []
        deadline = time.monotonic() + 60
        while True:  # a probed peer takes a moment to be "in cluster"
            try:
                self._cli(first, ["volume", "create", self.name, *kind, *spec, "force"], "volume create")
                break
            except ProvisionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        for key, value in self.options.items():
            self._cli(first, ["volume", "set", self.name, key, str(value)], f"volume set {key}")
        self._cli(first, ["volume", "start", self.name], "volume start")
        self.path = str(state / "gluster-mnt")
        os.makedirs(self.path, exist_ok=True)
        for h in self.clients:
            mnt = state / h / "gluster-client"
            mnt.mkdir(parents=True, exist_ok=True)
            self._mount_client(h, str(mnt))
            self.mounts[h] = str(mnt)
            self.hosts.bind(h, str(mnt), self.path)  # every host sees its own client at one path

    def _wait_cli(self, host: str) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                self._cli(host, ["pool", "list"], "waiting for glusterd", 10)
                return
            except ProvisionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _mount_client(self, host: str, mnt: str) -> None:
        server = self.hosts.addr[self.servers[0]]
        deadline = time.monotonic() + 30
        while True:  # the bricks' processes start a moment after `volume start` returns
            try:
                _run(
                    [
                        "nsenter",
                        f"--net=/run/netns/{self.hosts.ns[host]}",
                        "mount",
                        "-t",
                        "glusterfs",
                        f"{server}:/{self.name}",
                        mnt,
                    ],
                    f"mounting the client on {host}",
                )
                return
            except ProvisionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    # -- teardown -------------------------------------------------------------------------------------
    def close(self) -> None:
        errors = []
        for h, mnt in list(self.mounts.items()):
            r = subprocess.run(["umount", mnt], capture_output=True, text=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", mnt], capture_output=True, text=True)
            del self.mounts[h]
        for h in self.started:
            self._kill_gluster(h)
        self.started = []
        for b in reversed(self.bricks):
            try:
                self.prov.destroy(b["mounted"])
            except Exception as exc:  # noqa: BLE001 - the other bricks still need tearing down
                errors.append(exc)
        self.bricks = []
        if errors:
            raise errors[0]

    def _kill_gluster(self, host: str) -> None:
        """Every gluster process in the host's network namespace (glusterd, the bricks' glusterfsd)."""
        r = subprocess.run(["ip", "netns", "pids", self.hosts.ns[host]], capture_output=True, text=True)
        pids = []
        for pid in r.stdout.split():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip().startswith("gluster"):
                        pids.append(int(pid))
            except OSError:
                continue
        # SIGTERM, 5 s of grace, then SIGKILL. A killed process still has to exit (close its bricks' files,
        # drop its FUSE and network connections) before a brick can be unmounted, and on a busy machine that
        # can take well over 5 s: wait for it up to a minute, which only bounds a process stuck in the kernel.
        for sig, grace_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 60)):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and any(
                os.path.exists(f"/proc/{p}/comm") and _state(p) not in ("Z", None) for p in pids
            ):
                time.sleep(0.05)

    # -- what to record -------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        opts = {}
        try:
            out = self._cli(self.servers[0], ["volume", "info", self.name], "volume info", 30)
            lines = out.splitlines()
            if "Options Reconfigured:" in [ln.strip() for ln in lines]:
                at = [ln.strip() for ln in lines].index("Options Reconfigured:")
                for ln in lines[at + 1 :]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        opts[k.strip()] = v.strip()
        except ProvisionError:
            pass
        return {
            "target": "glusterfs",
            "volume": self.name,
            "volume_type": self.volume_type,
            "servers": {h: self.hosts.addr[h] for h in self.servers},
            "clients": {h: self.mounts.get(h) for h in self.clients},
            "bricks": [
                {
                    "server": b["server"],
                    "path": b["path"],
                    "fs": self.brick_fs.name,
                    "mkfs_options": list(self.brick_fs.mkfs_options),
                    "mount_options": self.brick_fs.mount_options,
                    "device": b["mounted"].info().get("device"),
                }
                for b in self.bricks
            ],
            "volume_options": opts,
            "client_version": client_version(),
            "path": self.path,
        }


class GlusterMounted:
    """The ``glusterfs`` target as the Provisioner hands it out: namespace hosts and a volume on
    them, shaped like a Mounted (path, info, reset_cache). ``path`` is the volume as every host and
    this process see it (here, through the first client's mount); ``launch`` turns an mpirun
    command line into one run on the hosts."""

    owns_mount = False
    device = None
    journal_device = None

    def __init__(self, prov, spec, fs: FsConfig):
        from fsmeter.provision.nshosts import NsHosts

        self.config = fs
        self.fs_name = fs.name
        self.destroyed = False
        self.hosts = NsHosts(spec.hosts)
        self.hosts.__enter__()
        try:
            servers = list(spec.servers) or [self.hosts.names[-1]]
            clients = list(spec.clients) or list(self.hosts.names)
            self.volume = GlusterVolume(
                self.hosts,
                prov,
                servers,
                clients,
                brick_fs=fs,
                brick_bytes=spec.size_bytes,
                bricks_per_server=spec.bricks_per_server,
                volume_type=spec.volume_type,
                options=dict(spec.volume_options),
            )
            self.volume.__enter__()
            self.path = self.volume.path
            # this process (the campaign) sees the volume at the same path, through the first client
            _run(["mount", "--bind", self.volume.mounts[clients[0]], self.path], "binding the volume for fsmeter")
            self._bound = True
        except BaseException:
            self.close()
            raise

    def launch(self, cmd: list) -> list:
        """mpirun ARGS... as run on the hosts: from the first host, over their network only."""
        return self.hosts.enter(self.hosts.names[0], [cmd[0], *self.hosts.mpi_args(), *cmd[1:]])

    def reset_cache(self, files=None) -> str:
        with open("/proc/sys/vm/drop_caches", "w") as f:  # one kernel: every client's cache and the bricks'
            f.write("3\n")
        return "drop_caches"

    def cache_reset_method(self) -> str:
        return "drop_caches"

    def is_mounted(self) -> bool:
        return not self.destroyed

    def info(self) -> dict[str, Any]:
        return {
            "fs": self.fs_name,
            "path": self.path,
            "target": "glusterfs",
            "device": None,
            "owns_mount": False,
            "mkfs_options": list(self.config.mkfs_options),
            "gluster": self.volume.info(),
            "hosts": {h: self.hosts.addr[h] for h in self.hosts.names},
            "cache_reset_method": "drop_caches",
            "kernel": os.uname().release,
        }

    def close(self) -> None:
        if getattr(self, "_bound", False):
            subprocess.run(["umount", self.path], capture_output=True)
            self._bound = False
        try:
            if getattr(self, "volume", None) is not None:
                self.volume.close()
        finally:
            self.hosts.close()
            self.destroyed = True

    def __repr__(self) -> str:
        return f"GlusterMounted({self.fs_name} bricks, {self.path})"


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        return s[s.rindex(")") + 2 :].split()[0]
    except (OSError, ValueError):
        return None


__all__ = ["GlusterMounted", "GlusterVolume", "VOLUME_TYPES", "client_version"]
