"""Tables and figures from result rows.

``summary_table`` is the terminal table of a run or sweep; ``write_report(directory)`` writes
``report.md`` and ``figures/*.png`` for a run or sweep directory
(``python -m fedgraph_sim report DIR``).

Modules: ``inputs`` (reading a directory), ``groups`` (the numbers per attack x defense setting),
``tables`` (terminal and markdown tables), ``figures`` (strength curves, heatmaps, frontiers),
``drawings`` (true vs reconstructed graphs), ``artifacts`` (saved or skipped figures),
``document`` (report.md).
"""

from fedgraph_sim.report.document import render, write_report
from fedgraph_sim.report.tables import summary_table

__all__ = ["render", "summary_table", "write_report"]
