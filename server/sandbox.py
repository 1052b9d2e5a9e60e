"""The attack workers' sandbox: a root filesystem built from what they need to run, in namespaces
of their own, so that attack code (a plugin included) cannot reach the ground truth.

An attack worker is started by ``unshare --user --map-root-user --mount --pid --net --ipc --fork``
(util-linux; unprivileged user namespaces, which Linux allows by default) running this file. Before
anything but the standard library is imported, it builds a new root filesystem on a fresh tmpfs:

- read-only bind mounts of the system directories (``/usr``, ``/lib``, ``/etc``, ...) and of the
  Python installation by its parts (:func:`python_installation`);
- a *code view* of each package the worker imports (:func:`code_locations`): a copy of the code
  files alone of the package's own folder (or the module's own file), staged on a tmpfs and bound
  read-only at the package's real path. A checkout's root, a home directory or a working
  directory is never bound, so whatever else lies there (earlier or later runs, caches, data,
  results, links into them) does not exist in the worker;
- an empty tmpfs over each hidden path that falls inside what is bound: the data root, the dataset
  cache, the output base (every run directory, audit records included) and a replayed federation;
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
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from functools import lru_cache

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
DEVICES = ("null", "zero", "random", "urandom")
UNSHARE = ("--user", "--map-root-user", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child")
#: The parts of a Python prefix the worker runs from; never the prefix itself, which may be a
#: checkout (a ``.venv`` in it is ``<checkout>/.venv``, but a venv made in the checkout's root is
#: the checkout) or a home directory.
PREFIX_PARTS = ("bin", "lib", "lib64", "pyvenv.cfg")
#: What a code view holds: Python sources, stubs, bytecode and extension modules, nothing else.
CODE_SUFFIXES = (".py", ".pyi", ".pyc", ".so")
#: Folders the worker gets fresh, never from the server's machine.
FRESH = ("/tmp", "/dev", "/proc")

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


def python_installation() -> list[str]:
    """The running Python's own folders (real paths): each prefix's ``bin``, ``lib``, ``lib64`` and
    ``pyvenv.cfg``, and every site directory on ``sys.path`` (``site-packages``, ``dist-packages``:
    a user site, a ``--target`` install), less what the system directories hold already."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix,
                os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    parts = {os.path.realpath(os.path.join(p, part)) for p in prefixes for part in PREFIX_PARTS}
    parts |= {os.path.realpath(e) for e in sys.path
              if e and os.path.basename(os.path.normpath(e)) in ("site-packages", "dist-packages")}
    return _outermost(p for p in parts if os.path.exists(p)
                      and not any(_inside(p, d) for d in SYSTEM_DIRS if not os.path.islink(d)))


def code_locations(modules: list[str], visible: list[str]) -> list[str]:
    """Where the code the worker imports lives, outside the ``visible`` folders: the folder of each
    top-level package (every folder of a namespace package) and the file of each top-level module
    named in ``modules`` (a dotted name counts by its top level; a name ending in ``.py`` is a
    file of code, e.g. a user's model) or already imported by this
    process (the pickled attack classes are imported by the worker from where the server did)."""
    found: set[str] = set()

    def add(origin: str | None, search: list[str] | None) -> None:
        for place in (search if search is not None else [origin] if origin else []):
            place = os.path.realpath(place)
            if os.path.exists(place) and not any(_inside(place, v) for v in visible):
                found.add(place)

    for name in {m.split(".")[0] for m in modules if not m.endswith(".py")}:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin not in ("built-in", "frozen"):
            add(spec.origin, list(spec.submodule_search_locations or []) or None)
    for file in (m for m in modules if m.endswith(".py")):  # a module given by its file (a user's model)
        add(file, None)
    for name, module in list(sys.modules.items()):
        if "." not in name and name not in ("__main__", "__mp_main__") and module is not None:
            path = getattr(module, "__path__", None)
            add(getattr(module, "__file__", None), list(path) if path is not None else None)
    return sorted(found)


def plan(hidden: list[str], modules: list[str], conn_fd: int, lifeline_fd: int, isolate: bool = True) -> dict:
    """What the worker's root holds, as real paths: the ``system`` directories and the Python
    installation (``read_only`` binds), an empty cover over each ``hidden`` path inside them, the
    Python folders inside a cover bound again on top (``over_hidden``), and a *code view* of each
    of ``code`` (:func:`code_locations` of ``modules``): a copy of its code files alone, so that
    nothing else in a checkout (runs, caches, data, results) is there at all. ``sys_path``: the
    server's entries that hold Python or code (a checkout's root holds only its code views there).
    Raises :class:`BoundaryError` when a hidden path is a folder the worker needs."""
    hidden = _outermost(os.path.realpath(h) for h in hidden if h)
    if not isolate:  # a plain process: what the server has
        return {"isolate": False, "conn_fd": conn_fd, "lifeline_fd": lifeline_fd,
                "sys_path": [os.path.realpath(e or os.getcwd()) for e in sys.path]}
    system = [d for d in SYSTEM_DIRS if os.path.lexists(d)]
    python = python_installation()
    code = code_locations(modules, [*system, *python])
    for path in python + code:
        for cover in hidden:
            if cover == path:
                raise BoundaryError(f"{cover} is hidden from the attack workers (it holds data, a cache or runs) "
                                    "but is the folder of code they run; keep runs and data out of a package "
                                    "and out of Python's folders")
        if any(_inside(path, f) for f in FRESH[1:]):
            raise BoundaryError(f"{path} is in {', '.join(FRESH[1:])}, which the attack workers get fresh")
    visible = [*system, *python]
    covers = [h for h in hidden if any(_inside(h, v) and h != v for v in visible)]
    parents = {os.path.dirname(c) for c in code}
    sys_path = []
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if not os.path.exists(real):
            sys_path.append(entry)  # a path hook's name (an editable install's finder), not a folder
        elif real in parents or (any(_inside(real, v) for v in visible) and not any(_inside(real, c) for c in covers)):
            sys_path.append(real)
    sys_path += sorted(parents - set(sys_path))
    return {"system": system, "read_only": [p for p in python if not any(_inside(p, c) for c in covers)],
            "hidden": covers, "over_hidden": [p for p in python if any(_inside(p, c) for c in covers)],
            "code": code, "skip": hidden, "sys_path": sys_path,
            "conn_fd": conn_fd, "lifeline_fd": lifeline_fd, "isolate": True}


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


def _copy_code(fd: int, source: str, target: str, skip: list[str]) -> None:
    """Copy the code files of one code location (``fd``, opened at ``source``: a folder or a file)
    to ``target``: regular files with a code suffix and a single link (a hard link into a run
    directory is left out, whatever its name), never a symbolic link, a dot folder or a ``skip``
    folder (a run directory inside a package), with their times (so bytecode stays valid)."""
    def copy(file_fd: int, dest: str) -> None:
        st = os.fstat(file_fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            with open(dest, "wb") as out, os.fdopen(os.dup(file_fd), "rb") as data:
                shutil.copyfileobj(data, out)
            os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))

    def is_code(name: str) -> bool:
        return name.endswith(CODE_SUFFIXES) or name == "py.typed"

    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        if is_code(source):
            copy(fd, target)
        return
    skip = [s for s in skip if _inside(s, source)]  # a location inside a hidden folder is copied whole
    for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd):
        real = os.path.normpath(os.path.join(source, folder))
        dirs[:] = [d for d in dirs
                   if not d.startswith(".") and not any(_inside(os.path.join(real, d), s) for s in skip)]
        dest = os.path.normpath(os.path.join(target, folder))
        os.makedirs(dest, exist_ok=True)
        for name in files:
            if not is_code(name):
                continue
            try:
                file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError:  # a symbolic link, or gone since it was listed
                continue
            try:
                copy(file_fd, os.path.join(dest, name))
            finally:
                os.close(file_fd)


def enter(layout: dict) -> None:
    """Build the root described in ``layout`` and move into it (in a fresh user, mount and PID
    namespace, single-threaded, before anything outside the standard library is imported)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

    def mount(source, target, fstype, flags, data=None):
        _check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                          data and data.encode()), f"mount {source} on {target}")

    def bind(source: str, target: str, read_only: bool) -> None:
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        mount(source, target, None, MS_BIND | MS_REC)
        if read_only:  # keep the flags Linux locks on a mount from a more privileged namespace
            flags = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)

    def bind_fd(fd: int, target: str, read_only: bool) -> None:
        bind(f"/proc/self/fd/{fd}", target, read_only)
        os.close(fd)

    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the server's view
    # Open every source first: the new root is mounted over /tmp, which may hold some of them.
    sources = {p: os.open(p, os.O_PATH) for p in layout["system"] + layout["read_only"] if not os.path.islink(p)}
    over = {p: os.open(p, os.O_PATH) for p in layout["over_hidden"]}
    code = {p: os.open(p, os.O_RDONLY | os.O_NONBLOCK) for p in layout["code"]}
    devices = {d: os.open("/dev/" + d, os.O_PATH) for d in DEVICES}
    root = "/tmp"
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for sub in ("tmp", "dev", "proc", ".code"):
        os.makedirs(root + "/" + sub)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID, "mode=0755")
    for device, fd in devices.items():
        bind_fd(fd, f"{root}/dev/{device}", read_only=False)
    os.makedirs(root + "/dev/shm")
    mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    # The code views: copies on a tmpfs of their own, bound into place after the covers.
    mount("tmpfs", root + "/.code", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    staged = {}
    for index, (path, fd) in enumerate(code.items()):
        staged[path] = f"{root}/.code/{index}"
        _copy_code(fd, path, staged[path], layout["skip"])
        os.close(fd)
    for path in layout["system"]:
        if os.path.islink(path):  # a merged /usr: /lib -> usr/lib
            os.symlink(os.readlink(path), root + path)
    for path, fd in sources.items():
        bind_fd(fd, root + path, read_only=True)
    for path in layout["hidden"]:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m")
    for path, fd in over.items():
        bind_fd(fd, root + path, read_only=True)
    for path, copy in staged.items():
        if os.path.lexists(copy):  # a module file that is not code is not copied
            bind(copy, root + path, read_only=True)
    _check(libc.umount2((root + "/.code").encode(), MNT_DETACH), "umount the staged code")
    os.rmdir(root + "/.code")
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
