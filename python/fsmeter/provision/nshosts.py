"""Several "hosts" on one Linux machine, for running fsmeter under MPI across hosts without a cluster.

Each host is a network namespace with one veth on a private /24, its own host name (a UTS
namespace), its own ``/run`` (so its own ``/run/lock``, and daemons' sockets and pid files) and its
own ``/etc/hosts`` (bind mounts in a mount namespace of its own, private to the processes entering
it). The hosts' veths meet on a bridge that lives in a
further namespace of the harness (the "switch"), so nothing is added to the machine's own network:
no interface, no address, no route, and no host file entry; traffic can only go from one of the
harness's hosts to another. Two harnesses coexist (every name carries the creator's pid and a
random part); each has its own switch, so they may even use the same addresses.

Processes enter a host through a small script per host (``enter-HOST CMD...``), and Open MPI's
``mpirun`` reaches the other hosts through an rsh agent script (``agent HOST CMD``, what ssh would
do), so no sshd is needed. :meth:`NsHosts.mpirun` builds the whole command line: mpirun itself runs
on the first host.

Root only (namespaces, bind mounts). Everything is torn down on leaving the ``with`` block, however
it is left (an exception, Ctrl-C); leftovers of a harness whose creator died are removed by the
next one (:func:`sweep_stale`).

What it does not simulate: one kernel (one page cache, one set of CPUs and disks for every host),
and a network that is the kernel's veth and bridge code, with no real latency or bandwidth limit.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from fsmeter.errors import UserError

#: Every namespace of a harness is named PREFIX + creator pid + "-" + random + "-" + host.
PREFIX = "fsmh"
#: The harness's private network (only on the harness's own veths).
DEFAULT_NET = "10.199.0"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise UserError(f"namespace hosts: `ip {' '.join(args)}` failed: {r.stderr.strip()}", exit_code=1)
    return r


def namespaces() -> list:
    r = _ip("netns", "list", check=False)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]


def _remove_namespace(ns: str) -> None:
    """Kill what still runs in it, then delete it (its veths go with it)."""
    r = _ip("netns", "pids", ns, check=False)
    for pid in r.stdout.split():
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass
    _ip("netns", "del", ns, check=False)


def _mounts_under(folder: str) -> list:
    with open("/proc/self/mounts") as f:
        targets = [ln.split()[1].replace("\\040", " ") for ln in f]
    return [t for t in targets if t == folder or t.startswith(folder.rstrip("/") + "/")]


def sweep_stale() -> list:
    """Remove the namespaces (and state folders) of harnesses whose creating process is gone."""
    removed = []
    for ns in namespaces():
        if not ns.startswith(PREFIX):
            continue
        pid = ns[len(PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            _remove_namespace(ns)
            removed.append(ns)
    for d in Path(tempfile.gettempdir()).glob("fsmeter-nshosts-*"):
        marker = d / "creator"
        try:
            pid = int(marker.read_text())
        except (OSError, ValueError):
            continue
        if not os.path.exists(f"/proc/{pid}"):
            for target in reversed(_mounts_under(str(d))):
                subprocess.run(["umount", "-l", target], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)
    return removed


class NsHosts:
    """``with NsHosts(3, slots=2) as hosts:`` three hosts h1..h3, each with two MPI slots."""

    def __init__(self, count: int = 2, slots: int = 1, net: str = DEFAULT_NET, names: Sequence | None = None):
        if os.geteuid() != 0:
            raise UserError("namespace hosts need root (network, UTS and mount namespaces): run as root", exit_code=1)
        for tool in ("ip", "unshare", "mount"):
            if shutil.which(tool) is None:
                raise UserError(f"namespace hosts: {tool} not found: install iproute2 and util-linux", exit_code=1)
        if not 1 <= count <= 200:
            raise UserError(f"namespace hosts: {count} hosts: use 1 to 200")
        self.names = list(names) if names else [f"h{i + 1}" for i in range(count)]
        self.slots = int(slots)
        self.net = net
        self.tag = f"{PREFIX}{os.getpid()}-{secrets.token_hex(2)}"
        self.ns = {h: f"{self.tag}-{h}" for h in self.names}
        self.switch = f"{self.tag}-sw"
        self.addr = {h: f"{net}.{i + 1}" for i, h in enumerate(self.names)}
        self.state: Path | None = None
        #: Per host, (source, target) folders bound in every process entering it (bind()).
        self.binds: dict = {h: [] for h in self.names}

    # -- set-up / teardown ------------------------------------------------------------------------
    def __enter__(self) -> NsHosts:
        sweep_stale()
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _create(self) -> None:
        self.state = Path(tempfile.mkdtemp(prefix="fsmeter-nshosts-"))
        (self.state / "creator").write_text(str(os.getpid()))
        hosts = ["127.0.0.1 localhost"] + [f"{self.addr[h]} {h}" for h in self.names]
        (self.state / "hosts").write_text("\n".join(hosts) + "\n")
        (self.state / "hostfile").write_text("".join(f"{h} slots={self.slots}\n" for h in self.names))
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for h in self.names:
            ns = self.ns[h]
            _ip("netns", "add", ns)
            # The veth is made in the switch namespace with its host end moved straight into the
            # host: neither end ever exists in the machine's own namespace.
            _ip("-n", self.switch, "link", "add", h, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", self.switch, "link", "set", h, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.addr[h]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            run = self.state / h / "run"  # the host's own /run, its lock folder inside
            (run / "lock").mkdir(parents=True)
            (run / "netns").mkdir()
            os.chmod(run / "lock", 0o1777)
            self._write_enter(h)
        agent = self.state / "agent"
        # Open MPI calls AGENT HOST ARGS..., its orted arguments quoted for a shell, as for ssh.
        known = "|".join(self.names)
        agent.write_text(
            '#!/bin/sh\nh="$1"; shift\n'
            f'case "$h" in {known}) ;; *) echo "agent: unknown host $h" >&2; exit 2;; esac\n'
            f'exec {shlex.quote(str(self.state))}/enter-"$h" sh -c "$*"\n'
        )
        agent.chmod(0o755)

    def _write_enter(self, h: str) -> None:
        run = self.state / h / "run"
        script = self.state / f"enter-{h}"
        # ip netns exec gives the command a mount namespace of its own (mounts made there stay
        # there); unshare --uts a host name of its own.
        binds = "".join(
            f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(dst))} && " for src, dst in self.binds[h]
        )
        # The machine's /run/netns stays visible in the host's own /run: its processes (mpirun's
        # agent) enter the other hosts by it.
        inner = (
            f"hostname {shlex.quote(h)} && mount --rbind /run/netns {shlex.quote(str(run / 'netns'))} && "
            f"mount --rbind {shlex.quote(str(run))} /run && "
            f'mount --bind {shlex.quote(str(self.state / "hosts"))} /etc/hosts && {binds}exec "$@"'
        )
        script.write_text(
            "#!/bin/sh\n"
            f"exec ip netns exec {shlex.quote(self.ns[h])} unshare --uts sh -c {shlex.quote(inner)} "
            f'enter-{h} "$@"\n'
        )
        script.chmod(0o755)

    def close(self) -> None:
        for ns in [*self.ns.values(), self.switch]:
            if ns in namespaces():
                _remove_namespace(ns)
        if self.state is not None:
            # Anything still mounted in the state folder (a client mount left by its owner) is
            # detached first: the folder is removed without ever descending into a mount.
            for target in reversed(_mounts_under(str(self.state))):
                subprocess.run(["umount", "-l", target], capture_output=True)
            shutil.rmtree(self.state, ignore_errors=True)
            self.state = None

    # -- use ----------------------------------------------------------------------------------------
    @property
    def hostfile(self) -> str:
        return str(self.state / "hostfile")

    @property
    def agent(self) -> str:
        return str(self.state / "agent")

    def lock_dir(self, host: str) -> str:
        """The folder the host sees as /run/lock."""
        return str(self.state / host / "run" / "lock")

    def bind(self, host: str, source: str, target: str) -> None:
        """From now on, processes entering HOST see SOURCE at TARGET (an existing folder): e.g. each
        host's own client mount of a network filesystem at one common path, as on a cluster."""
        self.binds[host].append((source, target))
        self._write_enter(host)

    def enter(self, host: str, argv: Iterable) -> list:
        """The command line that runs ARGV on HOST."""
        return [str(self.state / f"enter-{host}"), *map(str, argv)]

    def run(self, host: str, argv: Iterable, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(self.enter(host, argv), **kw)

    def mpi_args(self) -> list:
        """The mpirun arguments that launch on the harness's hosts over its network only."""
        net = f"{self.net}.0/24"
        return [
            "--hostfile",
            self.hostfile,
            "--mca",
            "plm_rsh_agent",
            self.agent,
            "--mca",
            "oob_tcp_if_include",
            net,
            "--mca",
            "btl",
            "tcp,self",
            "--mca",
            "btl_tcp_if_include",
            net,
        ]

    def mpirun(self, n: int, argv: Iterable, mpirun: str = "mpirun", extra: Sequence = ()) -> list:
        """`mpirun -n N ARGV` launched from the first host onto all of them (by slot: the first
        host's slots fill first)."""
        return self.enter(self.names[0], [mpirun, "-n", str(n), *self.mpi_args(), *extra, *map(str, argv)])


__all__ = ["DEFAULT_NET", "NsHosts", "namespaces", "sweep_stale"]
