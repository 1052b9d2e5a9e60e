"""Probes a reviewer of the sandbox would try: with an earlier run's ground truth left in the
checkout and in the home directory, symbolic and hard links to it from a code folder, a plugin
module beside a ``runs/`` folder, the server started from the home directory, code inside the
worker looks for the truth by every route it knows (a walk of its whole filesystem, the paths it
guesses, ``/proc/self/mountinfo``'s mounts, ``/proc/1``, its own descriptors). The positive
control runs the same probe outside the sandbox, where the walk and the guesses find the truth:
a zero inside is the sandbox's doing, not a broken probe."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from server import sandbox

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(bool(sandbox.namespaces_available()),
                                reason=f"no namespaces here: {sandbox.namespaces_available()}")

PROBE = r"""
import glob, importlib, json, os, sys
layout, secret, guesses = json.loads(sys.argv[1]), sys.argv[2].encode(), json.loads(sys.argv[3])
if sys.argv[4] == "inside":
    sys.path.insert(0, sys.argv[5])
    from server.sandbox import _reap_as_init, enter
    enter(layout)
    layout["conn_fd"], layout["lifeline_fd"] = os.pipe()
    _reap_as_init(layout)  # as a worker runs: the child of the namespace's process 1
    sys.path[:] = layout["sys_path"]
if sys.argv[7] == "wait":  # the server writes a later run now, while this worker lives
    print("ready", flush=True)
    sys.stdin.readline()
top = sys.argv[6]  # "/" inside; outside, the folder that holds the world (the whole disk is slow)
skip_walk = ("/proc", "/sys", "/dev", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64")

def holds(path):
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            return secret in file.read(1 << 20)
    except OSError:
        return False

def walk(start):
    # files below start (links not followed below it) named like truth that hold the secret
    found = set()
    for folder, dirs, files in os.walk(start):
        inner = "/" + os.path.relpath(folder, start)
        dirs[:] = [d for d in dirs if not os.path.normpath(os.path.join(inner, d)).startswith(skip_walk)]
        for name in files:
            path = os.path.join(folder, name)
            if (name.endswith((".pt", ".txt", ".parquet")) or "audit" in path or "leak" in name) and holds(path):
                try:
                    st = os.stat(path)
                    found.add((st.st_dev, st.st_ino))
                except OSError:
                    pass
    return len(found)

reached = {}
reached["fswalk"] = walk(top)
reached["guesses"] = sum(holds(p) for p in guesses) + sum(walk(p) for p in guesses if os.path.isdir(p))
mounts = []
try:
    with open("/proc/self/mountinfo") as file:
        mounts = [line.split()[3:5] for line in file]
except OSError:
    pass
installed = tuple(layout.get("read_only", []))  # the Python installation: walked once, by fswalk
reached["mountinfo"] = sum(walk(p) for pair in mounts for p in set(pair)
                           if p != "/" and not p.startswith(skip_walk + installed))
reached["proc_one"] = sum(walk(f"/proc/1/{p}") for p in ("root", "cwd")) + sum(
    holds(f) or (os.path.isdir(f) and walk(f) > 0) for f in glob.glob("/proc/1/fd/*"))
reached["own_fds"] = sum(os.path.isdir(f) and walk(f) > 0 for f in glob.glob("/proc/self/fd/*"))
imports = []
for name in ("probe_pkg.sub.mod", "plugin_mod"):
    try:
        imports.append(importlib.import_module(name).VALUE)
    except Exception as exc:
        imports.append(repr(exc))
print(json.dumps({"reached": reached, "imports": imports}))
"""


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A checkout with an earlier run's audit files, a cache and data in it, links from a code
    folder into the run; a home directory with runs and a plugin module beside them; the server
    started from the home directory, the checkout on ``sys.path`` (an editable install)."""
    secret = uuid.uuid4().hex
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    truth = [checkout / "runs" / "20260101-000000-default" / "audit" / "round_1" / "client_0.pt",
             home / "runs" / "20260101-000000-default" / "audit" / "round_1" / "client_1.pt",
             checkout / ".cache" / "tu" / "MUTAG" / "processed" / "data.pt",
             checkout / "datasets" / "tu" / "MUTAG" / "raw" / "MUTAG_A.txt",
             home / "results.parquet"]
    for path in truth:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"ground truth {secret}")
    package = checkout / "probe_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "mod.py").write_text("VALUE = 'probe_pkg'\n")
    (package / "runs_link").symlink_to(truth[0].parents[1])
    (package / "leak_link.py").symlink_to(truth[0])
    os.link(truth[0], package / "leak.pt")
    os.link(truth[0], package / "leak_hard.py")
    (package / "sub" / "earlier").mkdir()  # a run directory inside a package, left by mistake
    os.link(truth[0], package / "sub" / "earlier" / "client_0.pt")
    (home / "plugin_mod.py").write_text("VALUE = 'plugin_mod'\n")
    monkeypatch.chdir(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sys, "path", ["", str(checkout), *sys.path])
    guesses = [str(p) for p in truth] + [str(package / n) for n in ("leak.pt", "leak_hard.py", "leak_link.py")]
    guesses += [str(checkout), str(home), str(package / "runs_link")]
    return {"secret": secret, "guesses": guesses, "checkout": checkout, "home": home, "top": tmp_path,
            "truth": truth}


def _probe(world, where: str, hidden=(), meanwhile=None) -> dict:
    """The probe's findings; ``meanwhile()`` runs once the worker is in its root, before it looks."""
    layout = sandbox.plan([str(h) for h in hidden], ["probe_pkg", "plugin_mod", "server"], -1, -1)
    command = [sys.executable, "-I", "-c", PROBE, json.dumps(layout), world["secret"],
               json.dumps(world["guesses"]), where, str(ROOT), "/" if where == "inside" else str(world["top"]),
               "wait" if meanwhile else "go"]
    if where == "inside":
        command = [sandbox.shutil.which("unshare"), *sandbox.UNSHARE, "--", *command]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=world["home"], env={**os.environ, "PYTHONPATH": ""})
    if meanwhile:
        assert process.stdout.readline().strip() == "ready", process.stderr.read()[-3000:]
        meanwhile()
    out, err = process.communicate("go\n", timeout=300)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_no_route_reaches_an_earlier_runs_truth_and_the_code_still_imports(world):
    inside = _probe(world, "inside")
    assert inside["reached"] == {route: 0 for route in inside["reached"]}, inside
    assert inside["imports"] == ["probe_pkg", "plugin_mod"]  # the code views hold the code
    outside = _probe(world, "outside")  # the positive control
    assert outside["reached"]["fswalk"] >= 3 and outside["reached"]["guesses"] >= 5, outside


def test_the_current_output_base_in_the_checkout_is_not_there_either(world):
    output = world["checkout"] / "runs"  # make run's output base: runs/ in the checkout
    inside = _probe(world, "inside", hidden=[output])
    assert inside["reached"] == {route: 0 for route in inside["reached"]}, inside
    assert inside["imports"] == ["probe_pkg", "plugin_mod"]


def test_a_run_written_while_the_worker_lives_is_not_there(world):
    later = world["checkout"] / "runs" / "20260102-000000-default" / "audit" / "round_1" / "client_0.pt"
    in_package = world["checkout"] / "probe_pkg" / "later_client_0.py"  # even named as code

    def write_later_run():
        later.parent.mkdir(parents=True, exist_ok=True)
        later.write_text(f"ground truth {world['secret']}")
        in_package.write_text(f"ground truth {world['secret']}")

    for path in world["truth"]:
        path.unlink()  # only the later run holds the truth now
    for name in ("leak.pt", "leak_hard.py", "sub/earlier/client_0.pt"):
        (world["checkout"] / "probe_pkg" / name).unlink()
    world["guesses"] += [str(later), str(in_package)]
    inside = _probe(world, "inside", meanwhile=write_later_run)
    assert inside["reached"] == {route: 0 for route in inside["reached"]}, inside
    later.unlink()
    in_package.unlink()
    outside = _probe(world, "outside", meanwhile=write_later_run)  # the positive control
    assert outside["reached"]["guesses"] >= 2, outside
