"""server.sandbox: what the attack workers' root holds, and that code inside cannot undo it."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from server import sandbox

ROOT = Path(__file__).resolve().parents[2]
needs_namespaces = pytest.mark.skipif(bool(sandbox.namespaces_available()),
                                      reason=f"no namespaces here: {sandbox.namespaces_available()}")


def test_the_layout_binds_python_and_views_of_the_packages_never_the_checkout(tmp_path):
    layout = sandbox.plan([str(tmp_path / "data"), str(tmp_path)], ["attacks", "server"], 5, 6)
    assert layout["skip"] == [os.path.realpath(tmp_path)]  # the outermost of nested hidden paths
    assert any(sandbox._inside(os.path.realpath(sys.base_prefix), p) or sandbox._inside(p, sys.base_prefix)
               for p in layout["read_only"] + layout["system"])
    assert {str(ROOT / "attacks"), str(ROOT / "server")} <= set(layout["code"])
    bound = layout["system"] + layout["read_only"] + layout["code"]
    assert not any(sandbox._inside(str(ROOT), p) for p in bound)  # no folder that holds the checkout
    assert not any(p in (str(ROOT), os.path.expanduser("~"), os.getcwd()) for p in bound)
    assert str(ROOT) in layout["sys_path"]  # it holds the code views alone in the worker's root
    assert not any(sandbox._inside(p, os.path.realpath(tmp_path)) for p in layout["sys_path"])
    assert (layout["conn_fd"], layout["lifeline_fd"], layout["isolate"]) == (5, 6, True)


def test_a_hidden_path_that_is_a_package_is_refused_and_code_inside_one_is_viewed(tmp_path):
    with pytest.raises(sandbox.BoundaryError, match=f"{ROOT / 'attacks'} is hidden from the attack workers"):
        sandbox.plan([str(ROOT / "attacks")], ["attacks"], 5, 6)
    app = tmp_path / "runs" / "deployment" / "apps" / "fab"  # Flower's deployment installs the app there
    (app / "fab_pkg").mkdir(parents=True)
    (app / "fab_pkg" / "__init__.py").write_text("")
    sys.path.insert(0, str(app))
    try:
        layout = sandbox.plan([str(tmp_path / "runs")], ["fab_pkg"], 5, 6)
    finally:
        sys.path.remove(str(app))
    assert os.path.realpath(app / "fab_pkg") in layout["code"] and os.path.realpath(app) in layout["sys_path"]


ESCAPES = r"""
import ctypes, json, os, socket, stat, sys
sys.path.insert(0, sys.argv[2])
from server.sandbox import enter
if sys.argv[5] == "inside":
    enter(json.loads(sys.argv[1]))
libc = ctypes.CDLL(None, use_errno=True)
tried = {}
def attempt(name, action):
    try:
        tried[name] = bool(action())
    except Exception:
        tried[name] = False
attempt("umount_tmp", lambda: libc.umount2(b"/tmp", 2) == 0)
attempt("umount_hidden", lambda: libc.umount2(sys.argv[3].encode(), 2) == 0)
attempt("remount_code_writable", lambda: libc.mount(None, sys.argv[6].encode(), None, 32 | 4096, None) == 0)
attempt("write_code", lambda: open(os.path.join(sys.argv[6], "escape.txt"), "w"))
attempt("see_hidden", lambda: os.listdir(sys.argv[3]))
attempt("see_server", lambda: [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())])
attempt("raw_disk", lambda: [open(path, "rb").read(1) for path in (os.path.join("/dev", d) for d in os.listdir("/dev"))
                               if stat.S_ISBLK(os.stat(path).st_mode)])
attempt("network", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[4])), timeout=2))
def chroot_out():  # the classic escape: chroot into a subfolder, climb above it, chroot there
    os.makedirs("/tmp/jail", exist_ok=True)
    libc.chroot(b"/tmp/jail")
    for _ in range(64):
        os.chdir("..")
    libc.chroot(b".")
    return os.path.exists(os.path.join(sys.argv[3], "graph.pt"))
attempt("chroot_out", chroot_out)
print(json.dumps(tried))
"""


def _escapes(tmp_path: Path, where: str) -> dict[str, bool]:
    hidden, code = tmp_path / "truth", tmp_path / "code"
    for folder in (hidden, code):
        folder.mkdir(exist_ok=True)
    (hidden / "graph.pt").write_text("the answer")
    layout = sandbox.plan([str(hidden)], ["server"], -1, -1)
    layout["read_only"] += [str(tmp_path)]  # the hidden folder inside a visible one, beside code
    layout["hidden"] += [str(hidden)]
    listening = socket.create_server(("127.0.0.1", 0))  # the server's side of the machine
    command = [sys.executable, "-I", "-c", ESCAPES, json.dumps(layout), str(ROOT), str(hidden),
               str(listening.getsockname()[1]), where, str(code)]
    if where == "inside":
        command = [sandbox.shutil.which("unshare"), *sandbox.UNSHARE, "--", *command]
    with listening:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_namespaces
def test_code_in_the_sandbox_cannot_undo_it(tmp_path):
    inside = _escapes(tmp_path, "inside")
    assert inside == {name: False for name in inside} and len(inside) == 9, inside
    assert not (tmp_path / "code" / "escape.txt").exists()
    # the positive control: the same attempts from an ordinary process reach what they aim at
    outside = _escapes(tmp_path, "outside")
    assert {name for name, reached in outside.items() if reached} >= {"see_hidden", "see_server", "network",
                                                                      "write_code", "chroot_out"}, outside


def test_the_working_directory_and_tmp_are_not_bound(tmp_path, monkeypatch):
    home = tmp_path / "home"  # a user's folder the server runs from: runs and data copies in it
    home.mkdir()
    monkeypatch.chdir(home)
    monkeypatch.setattr(sys, "path", ["", "/tmp", *sys.path])
    layout = sandbox.plan([], ["attacks"], 5, 6)
    bound = layout["system"] + layout["read_only"] + layout["code"]
    assert not any(sandbox._inside(str(home), p) for p in bound)
    assert not any(sandbox._inside("/tmp", p) for p in bound)  # the sandbox's /tmp is its own
    assert str(home) not in layout["sys_path"] and "/tmp" not in layout["sys_path"]
