"""Defense-vs-attack sweeps: a spec expanded into federations and attack cells (``spec``), run
in worker processes with resume (``runner``)."""

from fedgraph_sim.runtime.sweep.runner import SweepResult, SweepRunner
from fedgraph_sim.runtime.sweep.spec import Cell, DefenseSetting, Federation, Sweep, build_sweep, load_sweep

__all__ = ["Cell", "DefenseSetting", "Federation", "Sweep", "SweepResult", "SweepRunner",
           "build_sweep", "load_sweep"]
