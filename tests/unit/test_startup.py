"""The command line's help and its file- and option-level errors load none of the heavy libraries
(their timing is ``benchmarks/bench_startup.py``'s; this checks the cause, which does not vary)."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "torch_geometric", "flwr", "ray", "matplotlib", "scipy", "opacus")

PROBE = """
import sys
from fedgraph_sim.runtime.cli import main
try:
    code = main({argv!r})
except SystemExit as exc:
    code = exc.code
print("CODE", code)
print("LOADED", " ".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("argv, code", [
    (["--help"], 0), (["run", "--help"], 0), (["sweep", "--help"], 0), (["reproduce", "--help"], 0),
    (["deploy", "--help"], 0), (["attacks", "--help"], 0), (["report", "--help"], 0),
    (["run", "--config", "/nonexistent.yaml"], 2), (["run", "federation.rounds=x"], 2),
    (["sweep", "--config", "/nonexistent.yaml"], 2), (["reproduce", "--config", "/nonexistent.yaml"], 2),
    (["report", "/nonexistent"], 2), (["run", "attack.names=[nope]"], 2), (["run", "defenses=[{name: nope}]"], 2),
])
def test_help_and_early_errors_load_no_heavy_library(argv, code):
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert f"CODE {code}" in out
    loaded = next(line for line in out if line.startswith("LOADED")).split()[1:]
    assert loaded == [], f"{argv} loaded {loaded}"
