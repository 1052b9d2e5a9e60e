"""The attacker's auxiliary graphs: a cache key, and models trained on them once per run."""

from __future__ import annotations

from typing import Callable, Iterator, TypeVar

import torch
from torch import Tensor
from torch_geometric.data import Batch

from attacks.base import AttackContext, AttackFailed, AttackTimeout
from fedgraph_sim.models import to_dense

T = TypeVar("T")


def aux_fingerprint(graphs) -> tuple:
    """Which auxiliary set a model was trained on, by content: every call gets its own copy of
    the attacker's knowledge, so object identity says nothing."""
    return tuple((int(g.graph_id), int(g.num_nodes), int(g.edge_index.size(1))) for g in graphs)


def aux_batches(graphs, epochs: int, batch: int, gen: torch.Generator,
                check: Callable[[], None]) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """Mini-batches ``(x, adj, mask)`` (dense, as ``to_dense``) of ``graphs``, reshuffled by ``gen``
    every epoch, for the models the attacks train on their auxiliary graphs; ``check`` (the
    attack's time budget) is called before every batch."""
    graphs = list(graphs)
    for _ in range(epochs):
        order = torch.randperm(len(graphs), generator=gen).tolist()
        for start in range(0, len(graphs), batch):
            check()
            yield to_dense(Batch.from_data_list([graphs[i] for i in order[start:start + batch]]))


def trained_once(ctx: AttackContext, key: tuple, train: Callable[[], T]) -> T:
    """``ctx.shared[key]``, trained by ``train()`` in the run's first call that needs it. A training
    stopped by the time budget is remembered, so the later calls fail at once instead of each
    training again until its own budget runs out."""
    if key in ctx.shared:
        if ctx.shared[key] is None:
            raise AttackFailed("its training on the auxiliary graphs ran out of time in an earlier call; "
                               "give it a larger attack.time_budgets entry")
        return ctx.shared[key]
    try:
        ctx.shared[key] = train()
    except AttackTimeout:
        ctx.shared[key] = None
        raise
    return ctx.shared[key]
