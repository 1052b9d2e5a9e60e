"""Tables and figures from result rows.

``print_summary`` prints the terminal tables of a run or sweep; ``write_report(directory)``
writes ``report.md`` and ``figures/*.png`` for a run or sweep directory
(``fedgraph-sim report DIR``).

Modules: ``inputs`` (reading a directory), ``groups`` (the numbers per attack x defense setting),
``tables`` (one table model of summary entries, and markdown), ``terminal`` (rich tables that fit
the terminal), ``figures`` (strength curves, heatmaps, frontiers), ``pareto`` (one point per
setting), ``stopping`` (the cheapest defense setting that stops the exact attack),
``drawings`` (true vs reconstructed graphs), ``artifacts`` (saved or skipped figures),
``document`` (report.md).
"""

from fedgraph_sim.exports import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {"render": "document", "write_report": "document",
                                                "print_summary": "terminal"})
