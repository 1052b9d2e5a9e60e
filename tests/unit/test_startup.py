"""The command line's help and its file- and option-level errors load none of the heavy libraries
(their timing is ``benchmarks/bench_startup.py``'s; this checks the cause,
which does not vary)."""

import subprocess
import sys

import pytest

from fedgraph_sim.runtime.cli import subcommands

HEAVY = ("torch", "torch_geometric", "flwr", "ray", "matplotlib", "scipy", "opacus")
#: What a help does not load either: it reads no configuration and no table.
HELP_HEAVY = (*HEAVY, "pandas", "pyarrow", "fedgraph_sim.config")

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


def loaded(argv: list[str], heavy: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The output lines of ``main(argv)`` in a fresh process, and which of ``heavy`` it loaded."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=heavy)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return out, next(line for line in out if line.startswith("LOADED")).split()[1:]


@pytest.mark.parametrize("command", [[], *([name] for name in subcommands())], ids=lambda c: " ".join(c) or "-")
def test_help_loads_no_heavy_library_nor_the_config(command):
    out, modules = loaded([*command, "--help"], HELP_HEAVY)
    assert "CODE 0" in out
    assert modules == [], f"{command} --help loaded {modules}"


@pytest.mark.parametrize("argv, code", [
    (["run", "--config", "/nonexistent.yaml"], 2), (["run", "federation.rounds=x"], 2),
    (["sweep", "--config", "/nonexistent.yaml"], 2), (["reproduce", "--config", "/nonexistent.yaml"], 2),
    (["report", "/nonexistent"], 2), (["run", "attack.names=[nope]"], 2), (["run", "defenses=[{name: nope}]"], 2),
])
def test_early_errors_load_no_heavy_library(argv, code):
    out, modules = loaded(argv, HEAVY)
    assert f"CODE {code}" in out
    assert modules == [], f"{argv} loaded {modules}"
