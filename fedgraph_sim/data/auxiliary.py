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
    """Zero-pad or truncate feature columns to ``width``.

    Args:
        x (torch.Tensor): node features ``[n, F]``.
        width (int): the columns wanted; the first ``width`` are kept, or zeros appended.

    Returns:
        ``[n, width]`` (``x`` itself sliced when it is wide enough).
    """
    if x.size(1) >= width:
        return x[:, :width]
    return torch.cat([x, x.new_zeros(x.size(0), width - x.size(1))], dim=1)


def erdos_renyi_graphs(count: int, node_range: tuple[int, int], width: int, p: float,
                       features: str, seed: int) -> list[Data]:
    """``count`` Erdos-Renyi G(n, p) graphs with continuous features and no label, ``n`` uniform
    over ``node_range``, drawn from a torch generator seeded with ``seed``.

    Args:
        count (int): how many graphs.
        node_range (tuple[int, int]): the smallest and largest node count, both included.
        width (int): the feature width ``F`` (the victim's).
        p (float): the edge probability, in (0, 1).
        features (str): ``normal`` (N(0, 1)) or ``uniform`` (U[-1, 1]).
        seed (int): the generator's seed.
    """
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
        """Whether the scenario takes ``argument``: by default only none.

        Args:
            argument (str): what follows ``:`` in ``aux.scenario`` (empty without a colon).
        """
        return argument == ""  # no argument unless the scenario takes one

    def graphs(self, victim: GraphDataset, *, holdout: Sequence[int] | None, seed: int, p: float,
               features: str, num_graphs: int | None, max_nodes: int | None,
               node_order: str) -> list[Data]:
        """The auxiliary graphs, with features at the victim's width.

        Args:
            victim (GraphDataset): the federation's dataset.
            holdout (Sequence[int], optional): dataset indices the attacker holds (the held-out
                split, or an attacker-controlled client's partition); None if there are none.
            seed (int): the run's seed.
            p (float): the edge probability of random graphs (``aux.p``).
            features (str): the feature distribution of random graphs (``aux.features``).
            num_graphs (int, optional): how many graphs a generator makes (``aux.num_graphs``).
            max_nodes (int, optional): the largest node count (``data.max_nodes``).
            node_order (str): the node order of loaded graphs (``data.node_order``).
        """
        raise NotImplementedError


@registry.scenarios.register
class SameDistribution(AuxScenario):
    """The victim dataset's graphs at ``holdout``."""

    name, usage = "same", "same"

    def graphs(self, victim, *, holdout, **_) -> list[Data]:
        """The graphs of ``victim`` at the indices ``holdout``, as they are.

        Args:
            victim (GraphDataset): the federation's dataset.
            holdout (Sequence[int]): the indices; None raises a :class:`ConfigError`.
            **_: the other scenarios' arguments, unused.
        """
        require(holdout is not None, "aux.scenario", "'same' needs a held-out partition")
        return [victim.graphs[int(i)] for i in holdout]


@registry.scenarios.register
class OtherDataset(AuxScenario):
    """Another dataset's graphs (``dataset:NAME``), features zero-padded or truncated."""

    name, usage = "dataset", "dataset:NAME"

    @classmethod
    def accepts(cls, argument: str) -> bool:
        """Whether ``argument`` names a dataset (is not blank).

        Args:
            argument (str): the dataset's name.
        """
        return bool(argument.strip())

    def graphs(self, victim, *, seed, max_nodes, node_order, **_) -> list[Data]:
        """The graphs of the dataset ``argument`` (loaded with its defaults), capped at
        ``max_nodes``, reordered like the victim's and cut or padded to its width.

        Args:
            victim (GraphDataset): the federation's dataset, for its feature width.
            seed (int): the run's seed, for a shuffled node order.
            max_nodes (int, optional): the largest node count kept.
            node_order (str): the node order (``data.node_order``).
            **_: the other scenarios' arguments, unused.
        """
        from fedgraph_sim.data.loaders import load_dataset  # local: only this scenario loads a dataset
        from fedgraph_sim.data.order import reorder

        other = load_dataset(self.argument, max_nodes=max_nodes)
        width = victim.num_features
        return [Data(x=adapt_width(g.x, width), edge_index=g.edge_index, y=g.y,
                     num_nodes=g.num_nodes, graph_id=g.graph_id)
                for g in reorder(other.graphs, node_order, seed)]


@registry.scenarios.register
class RandomGraphs(AuxScenario):
    """Random graphs (``random:er``): :func:`erdos_renyi_graphs`."""

    name, usage = "random", "random:er"

    @classmethod
    def accepts(cls, argument: str) -> bool:
        """Whether ``argument`` names a known generator (``er`` only).

        Args:
            argument (str): the generator's name.
        """
        return argument == "er"  # Erdos-Renyi, the one generator so far

    def graphs(self, victim, *, holdout, seed, p, features, num_graphs, max_nodes, **_) -> list[Data]:
        """Erdos-Renyi graphs at the victim's width, node counts over the victim's range (capped at
        ``max_nodes``).

        Args:
            victim (GraphDataset): the federation's dataset, for its width and node counts.
            holdout (Sequence[int], optional): the real auxiliary split, whose size is the count
                when ``num_graphs`` is None (1000 without one).
            seed (int): the generator's seed.
            p (float): the edge probability.
            features (str): ``normal`` or ``uniform``.
            num_graphs (int, optional): how many graphs.
            max_nodes (int, optional): the largest node count.
            **_: the other scenarios' arguments, unused.
        """
        sizes = [g.num_nodes for g in victim.graphs]
        count = num_graphs or (len(holdout) if holdout is not None else 1000)
        high = min(max(sizes), max_nodes) if max_nodes else max(sizes)
        return erdos_renyi_graphs(count, (min(sizes), high), victim.num_features, p, features, seed)


def parse_scenario(scenario: str) -> AuxScenario:
    """``aux.scenario`` -> its scenario object; one line naming the valid forms otherwise.

    Args:
        scenario (str): ``<name>`` or ``<name>:<argument>`` of a registered scenario.

    Raises:
        ConfigError: for an unknown name or an argument the scenario does not take.
    """
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
    """The graphs the configured scenario grants the attacker (features at the victim's width).

    Args:
        scenario (str): ``aux.scenario`` (``same``, ``dataset:NAME``, ``random:er``, ...).
        victim (GraphDataset): the federation's dataset.
        holdout (Sequence[int], optional): dataset indices the attacker holds. (default: :obj:`None`)
        seed (int, optional): the run's seed. (default: ``0``)
        p (float, optional): the edge probability of random graphs. (default: ``0.1``)
        features (str, optional): the feature distribution of random graphs. (default: ``"normal"``)
        num_graphs (int, optional): how many random graphs. (default: :obj:`None`)
        max_nodes (int, optional): the largest node count. (default: :obj:`None`)
        node_order (str, optional): the node order of another dataset's graphs.
            (default: ``"original"``)
    """
    return parse_scenario(scenario).graphs(victim, holdout=holdout, seed=seed, p=p, features=features,
                                           num_graphs=num_graphs, max_nodes=max_nodes,
                                           node_order=node_order)
