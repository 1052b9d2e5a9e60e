"""Graph datasets, feature schemas, Dirichlet partitions and auxiliary-set scenarios.

Every dataset is registered by name in :data:`fedgraph_sim.registry.datasets`
(:mod:`fedgraph_sim.data.loaders`); any TU dataset not listed loads as ``tu:NAME``.

Importing the package loads nothing: each name below comes from its module on first use. So
importing one module of the package (the attacks import :mod:`fedgraph_sim.data.schema`, the type
of the schema their knowledge carries) does not import every loader with it
(``tests/unit/test_threat_boundary.py`` checks that the attacks load none).
"""

from __future__ import annotations

from fedgraph_sim.exports import lazy_exports

_HOMES = {
    "schema": ("FeatureBlock", "FeatureSchema", "single_block_schema"),
    "dataset": ("GraphDataset", "drop_large_graphs"),
    "auxiliary": ("adapt_width", "auxiliary_graphs", "erdos_renyi_graphs"),
    "degree": ("with_degree_block",),
    "partition": ("dirichlet_partition", "dirichlet_sample"),
    "synthetic": ("make_synthetic",),
    "random_graphs": ("make_random_graph_balls", "make_random_graphs", "make_sbm_communities"),
    "moleculenet": ("MOLECULENET_NAMES", "load_moleculenet"),
    "tu": ("TU_NAMES", "load_tu"),
    "loaders": ("available_datasets", "load_dataset"),
}
__getattr__, _ = lazy_exports(__name__, {name: module for module, names in _HOMES.items() for name in names})

__all__ = [
    "FeatureBlock", "FeatureSchema", "GraphDataset", "adapt_width", "auxiliary_graphs",
    "available_datasets", "dirichlet_partition", "dirichlet_sample", "drop_large_graphs", "erdos_renyi_graphs",
    "load_dataset", "make_synthetic", "single_block_schema",
]
