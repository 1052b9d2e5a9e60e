"""The case under audit, kept apart from the attack (as breaching does): which graphs each client
holds, what the attacker's auxiliary set is, and what is held out for testing the global model.

Every process (client actors, the server) rebuilds the same scenario from the config and seed,
so no private data ever travels in a Flower message.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from fedgraph_sim.config import RunConfig
from fedgraph_sim.data import GraphDataset, auxiliary_graphs, dirichlet_partition, dirichlet_sample, load_dataset, store
from fedgraph_sim.data.node_labels import with_random_node_labels
from fedgraph_sim.data.order import reorder
from fedgraph_sim.dp_audit.canaries import Canaries, included, largest_weight, make_canaries
from fedgraph_sim.errors import ConfigError, require
from fedgraph_sim.threat import AttackerKnowledge


@dataclass
class Scenario:
    """The case under audit: the dataset and, as indices into it, who holds which graphs.

    Args:
        dataset (GraphDataset): the loaded dataset (reordered, labelled, canaries appended).
        clients (list[np.ndarray]): the dataset indices each client holds, in partition-id order.
        aux (np.ndarray): the dataset indices of the held-out auxiliary split (may be empty).
        test (np.ndarray): the dataset indices held out to test the global model (may be empty).
        canaries (Canaries, optional): the DP audit's canaries, whose graphs end the dataset.
            (default: :obj:`None`)
    """

    dataset: GraphDataset
    clients: list[np.ndarray]  # dataset indices per client (partition-id order)
    aux: np.ndarray  # dataset indices of the holdout auxiliary split (may be empty)
    test: np.ndarray  # dataset indices held out to test the global model (may be empty)
    canaries: Canaries | None = None  # the DP audit's canaries (their graphs end the dataset)


def _stratified_take(labels: np.ndarray, pool: np.ndarray, fraction: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Split ``pool`` into (taken, rest) with about ``fraction`` of each class taken."""
    taken = []
    for c in np.unique(labels[pool]):
        members = rng.permutation(pool[labels[pool] == c])
        taken.extend(members[: int(round(fraction * len(members)))].tolist())
    taken = np.sort(np.array(taken, dtype=np.int64))
    return taken, np.setdiff1d(pool, taken)


def load_config_dataset(config: RunConfig) -> GraphDataset:
    """The dataset of ``config.data``: loaded (or the one this process loaded last for the same
    data section), given random node labels if ``data.node_labels`` asks, and its graphs' nodes
    put in ``data.node_order``, seeded by ``config.seed``.

    Args:
        config (RunConfig): the run's config.
    """
    data = config.data
    keywords = {}
    if data.task is not None:
        keywords["task"] = data.task
    if data.features is not None:
        keywords["features"] = data.features
    if data.task_type == "regression":
        keywords["task_type"] = data.task_type
    dataset = _loaded(json.dumps({"name": data.dataset, "max_nodes": data.max_nodes,
                                  "degree_feature": data.degree_feature, "options": dict(data.options),
                                  "keywords": keywords, "root": str(store.data_root()),
                                  "cache": os.environ.get("FEDGRAPH_CACHE", "")}, sort_keys=True))
    if data.node_labels is not None:
        dataset = with_random_node_labels(dataset, data.node_labels, config.seed)
    return replace(dataset, graphs=reorder(dataset.graphs, config.data.node_order, config.seed))


@lru_cache(maxsize=1)
def _loaded(arguments: str) -> GraphDataset:
    """The dataset last loaded in this process, for the next config with the same data section
    (a reproduction's cases and a sweep's cells share it; featurising Tox21 for GRAIN takes
    seconds). Safe to share: every later step (ordering, node labels, splits) builds new graphs
    and leaves these as they are."""
    given = json.loads(arguments)
    return load_dataset(given["name"], max_nodes=given["max_nodes"], degree_feature=given["degree_feature"],
                        options=given["options"], **given["keywords"])


def build_scenario(config: RunConfig) -> Scenario:
    """The scenario ``config`` describes: the dataset, the test split (stratified), the held-out
    auxiliary split (stratified), the clients' Dirichlet partitions of the rest and, with
    ``canaries.count``, the DP audit's canaries (:func:`with_canaries`), all seeded by
    ``config.seed``.

    With ``data.subset`` the federation holds the first ``subset`` graphs of a seeded shuffle
    (GRAIN's experiments: seed 42, 100 graphs) and a held-out auxiliary split comes from the
    graphs outside it, so every subset graph is a victim and none is also the attacker's.

    Args:
        config (RunConfig): the run's config.

    Raises:
        ConfigError: when fewer graphs than clients remain for a partition without replacement.
    """
    dataset = load_config_dataset(config)
    labels = dataset.labels
    rng = np.random.default_rng(config.seed)
    pool, outside = np.arange(len(dataset)), np.array([], dtype=np.int64)
    if config.data.subset is not None:
        order = np.random.default_rng(config.data.subset_seed).permutation(len(dataset))
        pool, outside = np.sort(order[:config.data.subset]), np.sort(order[config.data.subset:])
    test = np.array([], dtype=np.int64)
    if config.data.test_fraction > 0:
        test, pool = _stratified_take(labels, pool, config.data.test_fraction, rng)
    aux = np.array([], dtype=np.int64)
    if config.aux.scenario == "same" and config.aux.source == "holdout":
        if len(outside):
            aux, _ = _stratified_take(labels, outside, config.aux.fraction, rng)
        else:
            aux, pool = _stratified_take(labels, pool, config.aux.fraction, rng)
    k, part = config.federation.num_clients, config.partition
    if part.with_replacement:
        size = part.size or max(1, len(pool) // k)
        parts = dirichlet_sample(labels[pool], k, part.alpha, size, seed=config.seed)
    else:
        require(len(pool) >= k, "federation.num_clients",
                f"{k} clients but only {len(pool)} graphs remain after the test and auxiliary splits "
                "(partition.with_replacement: true lets clients share graphs)")
        parts = dirichlet_partition(labels[pool], k, part.alpha, min_partition_size=part.min_partition_size,
                                    seed=config.seed)
    clients = [pool[p] for p in parts]
    if config.canaries.count and config.canaries.kind != "client":  # canary clients hold no graphs
        return with_canaries(config, Scenario(dataset, clients, aux, test))
    return Scenario(dataset, clients, aux, test)


def with_canaries(config: RunConfig, scenario: Scenario) -> Scenario:
    """``scenario`` with the DP audit's canaries after its graphs, each included canary in its
    client's partition (``fedgraph_sim.dp_audit.canaries``).

    Args:
        config (RunConfig): the run's config; its ``canaries`` section says how many, of which
            kind, and their seed and norm.
        scenario (Scenario): the scenario without canaries.
    """
    from fedgraph_sim.models import build_model

    spec, ds = config.canaries, scenario.dataset
    shapes = [(n, tuple(p.shape)) for n, p in build_model(config.model, ds.num_features,
                                                           ds.num_classes).named_parameters()]
    offset, size = largest_weight(shapes)
    canaries = make_canaries(ds, spec.count, config.federation.num_clients, spec.seed, spec.kind,
                             num_weights=size, weight_offset=offset, dirac_norm=spec.norm)
    graphs = list(ds.graphs)
    if spec.kind == "gradient":  # every graph says whether it is one (a batch collates them together)
        graphs = [copy.copy(g) for g in graphs]
        for g in graphs:
            g.dirac, g.dirac_norm = -1, 0.0
        for g in canaries.graphs:
            g.dirac_norm = spec.norm
    first = len(graphs)
    dataset = replace(ds, graphs=graphs + list(canaries.graphs))
    inside = included(spec.count, spec.seed)
    clients = [np.sort(np.concatenate([part, [first + i for i in canaries.of_client(k) if inside[i]]]).astype(np.int64))
               for k, part in enumerate(scenario.clients)]
    return replace(scenario, dataset=dataset, clients=clients, canaries=canaries)


@lru_cache(maxsize=4)
def cached_scenario(config_json: str) -> Scenario:
    """:func:`build_scenario` of a config, cached per process (the last four): client actors are
    reused across rounds and clients.

    Args:
        config_json (str): the :class:`RunConfig` as JSON (``model_dump_json``), the cache key.
    """
    return build_scenario(RunConfig.model_validate_json(config_json))


def attacker_knowledge(config: RunConfig, scenario: Scenario) -> AttackerKnowledge:
    """What the configured threat model grants (hints are added per update): the model's
    architecture, the feature schema, the loss and the auxiliary graphs of ``config.aux``.

    Args:
        config (RunConfig): the run's config.
        scenario (Scenario): its scenario, whose held-out split (or, for ``aux.source:
            client:<k>``, client ``k``'s partition) the auxiliary graphs are drawn from.
    """
    ds = scenario.dataset
    aux_cfg = config.aux
    if aux_cfg.scenario == "same":
        if aux_cfg.source == "holdout":
            holdout = scenario.aux
        else:
            holdout = scenario.clients[int(aux_cfg.source.split(":")[1])]
    else:
        holdout = scenario.aux if len(scenario.aux) else None
    graphs = auxiliary_graphs(aux_cfg.scenario, ds, holdout=holdout, seed=config.seed, p=aux_cfg.p,
                              features=aux_cfg.features, num_graphs=aux_cfg.num_graphs,
                              max_nodes=config.data.max_nodes, node_order=config.data.node_order)
    scenario_name = aux_cfg.scenario if aux_cfg.scenario != "same" else f"same:{aux_cfg.source}"
    model = config.model.model_dump()
    if model["module"] is not None:  # the workers import it from elsewhere
        from fedgraph_sim.models.user import absolute
        model["module"] = absolute(model["module"])
    return AttackerKnowledge(model=model, num_features=ds.num_features,
                             num_classes=ds.num_classes, schema=ds.schema, loss=config.train.loss,
                             task_type=ds.task_type,
                             aux_graphs=tuple(graphs), aux_scenario=scenario_name)


def check_model_fits(config: RunConfig, scenario: Scenario) -> None:
    """The model learns the dataset's task, a user's model runs on the dataset's graphs, and the
    flatten readout's ``model.flatten_nodes`` rows hold every graph (a ConfigError before anything
    runs, not a failed client turn per round).

    Args:
        config (RunConfig): the run's config.
        scenario (Scenario): its scenario.

    Raises:
        ConfigError: naming the ``model.*`` key that does not fit.
    """
    task = scenario.dataset.task
    if config.model.task != task:
        raise ConfigError(f"model.task: {config.data.dataset} is a {task}-classification dataset, so model.task "
                          f"must be {task} (got {config.model.task})")
    if config.model.module is not None:  # a user's model: built and run on a batch as the clients will
        from fedgraph_sim.models import build_model
        from fedgraph_sim.models.user import check_forward_on
        ds = scenario.dataset
        check_forward_on(build_model(config.model, ds.num_features, ds.num_classes), list(ds.graphs[:2]),
                         ds.num_classes)
    rows = config.model.flatten_nodes
    if rows is not None and (largest := max(g.num_nodes for g in scenario.dataset.graphs)) > rows:
        raise ConfigError(f"model.flatten_nodes: {rows} rows cannot hold {config.data.dataset}'s largest graph "
                          f"({largest} nodes); raise it or cap the graphs with data.max_nodes")
