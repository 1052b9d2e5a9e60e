"""The attack workers' sandbox: a root filesystem built from what they need to run, in namespaces
of their own, so that attack code (a plugin included) cannot reach the ground truth.

An attack worker is started by ``unshare --user --map-root-user --mount --pid --net --ipc --fork``
(util-linux; unprivileged user namespaces, which Linux allows by default) running this file. Before
anything but the standard library is imported, it builds a new root filesystem on a fresh tmpfs:

- read-only bind mounts of the system directories (``/usr``, ``/lib``, ``/etc``, ...), the Python
  installation and every ``sys.path`` entry of the server (the project's code, plugins);
- an empty tmpfs over each hidden path that falls inside them: the data root, the dataset cache,
  the output base (every run directory, audit records included) and a replayed federation;
- a fresh ``/tmp``, ``/dev/shm`` and a ``/dev`` holding only ``null``, ``zero``, ``random`` and
  ``urandom``; a ``/proc`` of its own PID namespace, where no process of the server exists;

then ``pivot_root``\\ s into it, detaches the old root and enters a second user and mount
namespace, which locks those mounts (Linux refuses to unmount or remount a mount inherited from a
more privileged namespace, so neither the tmpfs covers nor the read-only flags can be lifted).
The network namespace has only a loopback interface that is down (no Ray, no Flower, no Internet).
Process 1 of the PID namespace is a small reaper; the worker is its child, so a worker killed by a
signal is reported as such (exit code ``128 + signal``) and dies with the namespace.

The server's end of a *lifeline* pipe stays open while the server lives; the worker exits when it
reads end-of-file there, so a killed server leaves no worker computing on.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from functools import lru_cache

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
DEVICES = ("null", "zero", "random", "urandom")
UNSHARE = ("--user", "--map-root-user", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child")

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH, PR_SET_DUMPABLE = 2, 4
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


class BoundaryError(Exception):
    """The sandbox cannot be built as asked (a hidden path would hide what the worker needs)."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths) -> list[str]:
    """The paths not inside another of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return sorted(kept)


def _script_folder() -> str | None:
    """``sys.path[0]`` when it is the server's working directory or its script's folder (not a
    folder the server needs: the project and plugins are found through ``code``)."""
    first = sys.path[0] if sys.path else None
    if first is None:
        return None
    where = os.path.realpath(first or os.getcwd())
    script = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else None
    return where if where in (os.path.realpath(os.getcwd()), script) else None


def plan(hidden: list[str], code: list[str], conn_fd: int, lifeline_fd: int, isolate: bool = True) -> dict:
    """What the worker's root holds: ``read_only`` binds and ``hidden`` covers (real paths), and the
    ``sys_path`` to import from. ``code``: folders the worker must see (the project's packages,
    plugins). Bound: Python, ``code`` and the server's ``sys.path``, less its working directory or
    script folder (a user's home, a folder of runs), less entries inside a hidden path, and never a
    folder that holds ``/tmp``, ``/dev`` or ``/proc`` (the sandbox's own are fresh). Python or code
    inside a hidden path (``over_hidden``) is bound again on top of its cover, alone. Raises
    :class:`BoundaryError` when a hidden path is Python's or ``code``'s folder itself."""
    hidden = _outermost(os.path.realpath(h) for h in hidden if h)
    python = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))}
    code = {os.path.realpath(c) for c in code}
    fresh = ("/tmp", "/dev", "/proc")
    for path in sorted(python | code):
        for cover in hidden:
            if cover == path:  # inside each other, the cover goes over the bind or the bind over the cover
                raise BoundaryError(f"{cover} is hidden from the attack workers (it holds data, a cache or runs) "
                                    f"but is also {path}, which they need to run")
        if any(_inside(f, path) for f in fresh):
            raise BoundaryError(f"{path} holds {', '.join(fresh)}, which the attack workers get fresh; "
                                "put the code it holds (a plugin) in a folder of its own")
    skipped = _script_folder()
    sys_path = [p for p in (os.path.realpath(e or os.getcwd()) for e in sys.path)
                if (not any(_inside(p, cover) for cover in hidden) or p in code)
                and not any(_inside(f, p) for f in fresh) and (p != skipped or p in code)]
    needed = python | code | {p for p in sys_path if os.path.exists(p)}
    # code inside a hidden folder (Flower's deployment installs the app under the run directory)
    # is bound again on top of the cover, alone
    over = {p for p in needed if any(_inside(p, cover) for cover in hidden)}
    system = [d for d in SYSTEM_DIRS if os.path.lexists(d)]
    return {"system": system, "read_only": _outermost(needed - over - set(system)), "hidden": hidden,
            "over_hidden": _outermost(over), "sys_path": sys_path + sorted(over - set(sys_path)),
            "conn_fd": conn_fd, "lifeline_fd": lifeline_fd, "isolate": isolate}


@lru_cache(maxsize=1)
def namespaces_available() -> str:
    """'' when this machine can start sandboxed workers, else why not (cached per process)."""
    unshare = shutil.which("unshare")
    if sys.platform != "linux" or unshare is None:
        return "needs Linux with util-linux's unshare"
    if os.uname().machine not in SYS_PIVOT_ROOT:
        return f"pivot_root's system call number is not known for {os.uname().machine}"
    done = subprocess.run([unshare, *UNSHARE, "--", "true"], capture_output=True, text=True, timeout=60)
    if done.returncode:
        return f"unshare failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
    return ""


def command(layout: dict) -> list[str]:
    """The command line that starts a worker with this layout (in the sandbox if it isolates)."""
    worker = [sys.executable, "-I", os.path.abspath(__file__), json.dumps(layout)]
    return [shutil.which("unshare") or "unshare", *UNSHARE, "--", *worker] if layout["isolate"] else worker


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def enter(layout: dict) -> None:
    """Build the root described in ``layout`` and move into it (in a fresh user, mount and PID
    namespace, single-threaded, before anything outside the standard library is imported)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

    def mount(source, target, fstype, flags, data=None):
        _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                          data and data.encode()), f"mount {source} on {target}")

    def bind(source_fd: int, target: str, read_only: bool) -> None:
        source = f"/proc/self/fd/{source_fd}"
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        mount(source, target, None, MS_BIND | MS_REC)
        if read_only:  # keep the flags Linux locks on a mount from a more privileged namespace
            flags = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)

    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the server's view
    # Open every source first: the new root is mounted over /tmp, which may hold some of them.
    sources = {p: os.open(p, os.O_PATH) for p in layout["system"] + layout["read_only"] if not os.path.islink(p)}
    over = {p: os.open(p, os.O_PATH) for p in layout["over_hidden"]}
    root = "/tmp"
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for sub in ("tmp", "dev", "proc"):
        os.makedirs(root + "/" + sub)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID, "mode=0755")
    for device in DEVICES:
        bind(os.open("/dev/" + device, os.O_PATH), f"{root}/dev/{device}", read_only=False)
    os.makedirs(root + "/dev/shm")
    mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for path in layout["system"]:
        if os.path.islink(path):  # a merged /usr: /lib -> usr/lib
            os.symlink(os.readlink(path), root + path)
    for path, fd in sources.items():
        bind(fd, root + path, read_only=True)
        os.close(fd)
    for path in layout["hidden"]:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m")
    for path, fd in over.items():
        bind(fd, root + path, read_only=True)
        os.close(fd)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/.old")
    _check(libc.syscall(SYS_PIVOT_ROOT[os.uname().machine], root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # A second user namespace: the mounts above become locked for everything that runs from here.
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as file:
            file.write(text)
    os.chdir("/tmp")
    os.environ["HOME"] = "/tmp"


def _reap_as_init(layout: dict) -> None:
    """Process 1 of the PID namespace: run the worker as a child (signals reach it as they would
    outside a namespace) and leave with its status, a signal as ``128 + signal``."""
    child = os.fork()
    if child == 0:
        return
    os.close(layout["conn_fd"])  # the server sees the worker's end close when the worker dies
    os.close(layout["lifeline_fd"])
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0)  # the worker, in a child user namespace, cannot read it
    while True:
        pid, status = os.wait()
        if pid == child:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _watch_lifeline(fd: int) -> None:
    """Exit when the server's end of the lifeline closes (the server died)."""
    def watch() -> None:
        while os.read(fd, 1):
            pass
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def main(layout: dict) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when a worker ends
    if layout["isolate"]:
        enter(layout)
        _reap_as_init(layout)
    sys.path[:] = layout["sys_path"]
    _watch_lifeline(layout["lifeline_fd"])
    # The program to run inside is named by the caller (the attack workers' ``ENTRY``), so the
    # sandbox knows nothing above it and is imported by them, never the other way round.
    module, _, function = layout["entry"].partition(":")
    getattr(importlib.import_module(module), function)(layout["conn_fd"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
