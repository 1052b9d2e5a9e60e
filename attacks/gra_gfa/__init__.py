"""GRA-GFA (Chen, Ma, Ma, Zheng, Zhang, "An Empirical Evaluation of the Data Leakage in Federated
Graph Learning", IEEE TNSE 2024): the aux-trained feature generator (``generator``) and the
``gra_gfa`` attack (``attack``)."""

from attacks.gra_gfa import attack  # noqa: F401  (registers gra_gfa)
