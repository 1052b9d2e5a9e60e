"""Result rows, one per attacked graph: the typed record (``record``), the store a run streams
them to and seals, with the run's utility rows beside them (``store``), the statistics every
table and summary draws from them (``statistics``) and the run's ``summary.csv``
(``summary_csv``).

Nothing is re-exported here: import the module that does the job, so that reading rows loads
neither the metrics nor anything heavier.
"""
