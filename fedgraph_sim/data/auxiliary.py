"""The attacker's auxiliary graphs, as named scenarios registered in
``fedgraph_sim.registry.scenarios`` (``aux.scenario: <name>[:<argument>]``):

- ``same``: graphs from the victim's distribution the attacker holds (a held-out partition,
  e.g. the attacker's own client data in GraphDLG's Table 1).
- ``dataset:NAME``: another dataset's graphs, features zero-padded or truncated to the victim's
  width (GraphDLG Table 4 / Fig. 3).
- ``random:er``: Erdos-Renyi G(n, p) graphs with continuous N(0,1) (``normal``) or U[-1,1]
  (``uniform``) features (GraphDLG Table 3); n is uniform over the victim dataset's node-count
  range and the count matches the real auxiliary set (1000 if there is none).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import torch
from torch_geometric.data import Data
from torch_geometric.utils import dense_to_sparse

from fedgraph_sim import registry
from fedgraph_sim.data.dataset import GraphDataset
from fedgraph_sim.errors import ConfigError, require

ER_FEATURES = ("normal", "uniform")


def adapt_width(x: torch.Tensor, width: int) -> torch.Tensor:
    """Zero-pad or truncate feature columns to ``width``."""
    if x.size(1) >= width:
        return x[:, :width]
    return torch.cat([x, x.new_zeros(x.size(0), width - x.size(1))], dim=1)


def erdos_renyi_graphs(count: int, node_range: tuple[int, int], width: int, p: float,
                       features: str, seed: int) -> list[Data]:
    require(0 < p < 1, "aux.p", f"edge probability must be in (0, 1) (got {p})")
    require(features in ER_FEATURES, "aux.features",
            f"unknown feature distribution '{features}'; valid: {', '.join(ER_FEATURES)}")
    gen = torch.Generator().manual_seed(seed)
    low, high = node_range
    graphs = []
    for i in range(count):
        n = int(torch.randint(low, high + 1, (1,), generator=gen))
        upper = torch.triu(torch.rand(n, n, generator=gen) < p, diagonal=1).float()
        edge_index, _ = dense_to_sparse(upper + upper.t())
        if features == "normal":
            x = torch.randn(n, width, generator=gen)
        else:
            x = torch.rand(n, width, generator=gen) * 2 - 1
        graphs.append(Data(x=x, edge_index=edge_index, num_nodes=n, graph_id=i))
    return graphs


class AuxScenario:
    """A source of auxiliary graphs. ``usage`` is how ``aux.scenario`` names it; the part after
    ``:`` is the scenario's ``argument``. ``graphs`` returns them at the victim's feature width."""

    name: ClassVar[str]
    usage: ClassVar[str]

    def __init__(self, argument: str) -> None:
        self.argument = argument

    @classmethod
    def accepts(cls, argument: str) -> bool:
        return argument == ""  # no argument unless the scenario takes one

    def graphs(self, victim: GraphDataset, *, holdout: Sequence[int] | None, seed: int, p: float,
               features: str, num_graphs: int | None, max_nodes: int | None,
               node_order: str) -> list[Data]:
        raise NotImplementedError


@registry.scenarios.register
class SameDistribution(AuxScenario):
    name, usage = "same", "same"

    def graphs(self, victim, *, holdout, **_) -> list[Data]:
        require(holdout is not None, "aux.scenario", "'same' needs a held-out partition")
        return [victim.graphs[int(i)] for i in holdout]


@registry.scenarios.register
class OtherDataset(AuxScenario):
    name, usage = "dataset", "dataset:NAME"

    @classmethod
    def accepts(cls, argument: str) -> bool:
        return bool(argument.strip())

    def graphs(self, victim, *, seed, max_nodes, node_order, **_) -> list[Data]:
        from fedgraph_sim.data.loaders import load_dataset  # local: only this scenario loads a dataset
        from fedgraph_sim.data.order import reorder

        other = load_dataset(self.argument, max_nodes=max_nodes)
        width = victim.num_features
        return [Data(x=adapt_width(g.x, width), edge_index=g.edge_index, y=g.y,
                     num_nodes=g.num_nodes, graph_id=g.graph_id)
                for g in reorder(other.graphs, node_order, seed)]


@registry.scenarios.register
class RandomGraphs(AuxScenario):
    name, usage = "random", "random:er"

    @classmethod
    def accepts(cls, argument: str) -> bool:
        return argument == "er"  # Erdos-Renyi, the one generator so far

    def graphs(self, victim, *, holdout, seed, p, features, num_graphs, max_nodes, **_) -> list[Data]:
        sizes = [g.num_nodes for g in victim.graphs]
        count = num_graphs or (len(holdout) if holdout is not None else 1000)
        high = min(max(sizes), max_nodes) if max_nodes else max(sizes)
        return erdos_renyi_graphs(count, (min(sizes), high), victim.num_features, p, features, seed)


def parse_scenario(scenario: str) -> AuxScenario:
    """``aux.scenario`` -> its scenario object; one line naming the valid forms otherwise."""
    name, _, argument = str(scenario).partition(":")
    if name not in registry.scenarios or not registry.scenarios.get(name).accepts(argument):
        usages = ", ".join(registry.scenarios.get(n).usage for n in registry.scenarios)
        raise ConfigError(f"aux.scenario: unknown scenario '{scenario}'; valid: {usages}")
    return registry.scenarios.get(name)(argument)


def auxiliary_graphs(scenario: str, victim: GraphDataset, *,
                     holdout: Sequence[int] | None = None, seed: int = 0,
                     p: float = 0.1, features: str = "normal",
                     num_graphs: int | None = None, max_nodes: int | None = None,
                     node_order: str = "original") -> list[Data]:
    """The graphs the configured scenario grants the attacker (features at the victim's width)."""
    return parse_scenario(scenario).graphs(victim, holdout=holdout, seed=seed, p=p, features=features,
                                           num_graphs=num_graphs, max_nodes=max_nodes,
                                           node_order=node_order)
