"""A hostile attack for the boundary test, loaded as a plugin (third-party code, the way users
extend the bench): it looks for the ground truth by every route it knows and reports in ``info``
how many things each route reached (files, readable processes, graphs). It is given the paths to
look in (``paths``: the output base, the data root, the cache), as an attacker who knows the
bench's layout would know them."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from attacks.base import Attack, Requirements, register
from attacks.random_guess import RandomGuess

ROUTES = ("proc_fd", "proc_environ", "proc_mem", "tmp_audit", "paths", "dataset", "home_cache", "fswalk", "mountinfo")
SKIPPED = ("/proc", "/sys", "/dev", "/usr", "/etc")  # no run is written there, and they are large


def _other_processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]


def _proc_fd() -> int:
    """Files of other processes reached through their open descriptors (the run's log.txt, and the
    audit folder beside it), plus this process's own (with ``attack.workers: 0`` it is the server)."""
    found = 0
    for pid in _other_processes() + ["self"]:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.endswith("log.txt"):
                found += len(glob.glob(os.path.join(os.path.dirname(target), "audit", "**", "*.pt"), recursive=True))
    return found


def _proc_environ() -> int:
    """Processes whose environment names the data root."""
    found = 0
    for pid in _other_processes() + ["self"]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                found += b"FEDGRAPH_DATA_ROOT=" in file.read()
        except OSError:
            continue
    return found


def _proc_mem() -> int:
    """Processes whose memory can be read (the first readable mapping of each)."""
    found = 0
    for pid in _other_processes():
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
                start = int(maps.readline().split("-")[0], 16)
                mem.seek(start)
                found += len(mem.read(16)) > 0
        except (OSError, ValueError):
            continue
    return found


def _fswalk(top: str = "/") -> int:
    """Audit records readable anywhere below ``top`` (an earlier run's in the checkout, in the
    home directory, the current run's), through any folder it can list."""
    found = 0
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not os.path.join(folder, d).startswith(SKIPPED)]
        if os.path.basename(os.path.dirname(folder)) == "audit":
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as file:
                        found += len(file.read(1)) > 0
                except OSError:
                    continue
    return found


def _mountinfo() -> int:
    """Audit records below the mount points and mount sources ``/proc/self/mountinfo`` names."""
    try:
        with open("/proc/self/mountinfo") as file:
            places = {p for line in file for p in line.split()[3:5]}
    except OSError:
        return 0
    return sum(_fswalk(p) for p in places if p != "/" and not p.startswith(SKIPPED) and os.path.isdir(p))


def _walk(root: str, pattern: str) -> int:
    return len(glob.glob(os.path.join(root, "**", pattern), recursive=True)) if root else 0


@register
class TruthProbe(Attack):
    name, paper = "truth_probe", "test double"
    requires = Requirements(node_count=True)

    @dataclass
    class Params:
        paths: str = ""  # where to look, os.pathsep-separated: output base, data root, cache
        dataset: str = ""  # a dataset to load through the package's own loader

    def reconstruct(self, update, knowledge, ctx):
        reached = {route: 0 for route in ROUTES}
        reached["proc_fd"] = _proc_fd()
        reached["proc_environ"] = _proc_environ()
        reached["proc_mem"] = _proc_mem()
        reached["tmp_audit"] = _walk("/tmp", "client_*.pt")
        paths = [p for p in self.params.paths.split(os.pathsep) if p]
        reached["paths"] = sum(_walk(p, "*") for p in paths)
        reached["home_cache"] = _walk(os.path.expanduser("~/.cache/fedgraph_sim"), "*")
        reached["fswalk"] = _fswalk()
        reached["mountinfo"] = _mountinfo()
        if self.params.dataset:
            for root in paths:  # as the data root, then the package's default cache
                os.environ["FEDGRAPH_DATA_ROOT"] = root
                try:
                    from fedgraph_sim.data import load_dataset

                    reached["dataset"] = max(reached["dataset"], len(load_dataset(self.params.dataset)))
                except Exception:  # noqa: BLE001  (any failure is a route that reached nothing)
                    pass
        rec = RandomGuess().reconstruct(update, knowledge, ctx)[0]
        rec.info.update(reached)
        return [rec]
