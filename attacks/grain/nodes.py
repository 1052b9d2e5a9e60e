"""T0, the candidate node feature vectors, filtered feature by feature (GRAIN, Drencheva et al.,
ICLR 2025, Alg. 6).

The cross product of all value sets is far too large (about 3e7 rows for molecules), so partial
rows are grown over groups of blocks, from the last block to the first as the official code does,
and each partial row is span-checked against the matching column slice of the first layer's
weight gradient (whose rows span the true input rows restricted to any column subset). A group
takes blocks until ``survivors x new values`` reaches ``group_size``; above ``abort_size`` the
attack gives up. The result is the set of distinct node rows of the client graph plus a few false
positives: duplicate nodes collapse, and so do candidates the model's input encoding cannot tell
apart.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import Tensor

from attacks.grain.spancheck import RowSpace
from fedgraph_sim.data.schema import FeatureSchema


@dataclass
class NodeProposal:
    """``categories [T, blocks]`` (value indices) and their model encoding ``x [T, F]``, plus the
    number of partial rows span-checked."""

    categories: Tensor
    x: Tensor
    checked: int


class NodeSearchAborted(RuntimeError):
    pass


def _block_columns(schema: FeatureSchema) -> list[slice]:
    return list(schema.slices().values())


def propose_nodes(schema: FeatureSchema, grad_w1: Tensor, *, tol: float, tau: float,
                  group_size: int, abort_size: int, noise: float = 0.0) -> NodeProposal:
    """Grow partial rows from the last block backwards; keep those within ``tau`` (L1 residual)
    of the row space of ``grad_w1`` restricted to their columns (``noise``: the per-entry noise
    of ``grad_w1``, see ``RowSpace``)."""
    cols = _block_columns(schema)
    widths = [b.width for b in schema.blocks]
    survivors = torch.zeros(1, 0, dtype=torch.long)  # partial rows: value indices of a block suffix
    idx, checked = len(widths) - 1, 0
    while idx >= 0:
        potential, group = survivors.size(0), []
        for j in range(idx, -1, -1):
            potential *= widths[j]
            group.append(j)
            if potential >= group_size or j == 0:
                break
        if potential > abort_size:
            raise NodeSearchAborted(f"{potential} partial rows to check (abort above {abort_size})")
        group = group[::-1]  # ascending block order, as the columns lie
        new = torch.tensor(list(itertools.product(*[range(widths[j]) for j in group])), dtype=torch.long)
        rows = torch.cat([new.repeat_interleave(survivors.size(0), 0), survivors.repeat(new.size(0), 1)], 1)
        first = cols[group[0]].start
        onehot = torch.cat([torch.nn.functional.one_hot(rows[:, k], widths[j])
                            for k, j in enumerate(range(group[0], len(widths)))], 1).to(torch.float64)
        z = schema.standardize(onehot, slice(first, None)) if schema.standardized else onehot
        space = RowSpace(grad_w1[:, first:], tol, noise)
        keep, _ = space.passing(z, tau)
        checked += rows.size(0)
        survivors = rows[keep]
        idx = group[0] - 1
        if survivors.numel() == 0:
            break
    if survivors.numel():
        # Values the standardisation cannot tell apart (a block constant over the dataset) give
        # identical model inputs: keep one row per input, the values the schema decodes it to.
        survivors = torch.unique(schema.decode(schema.encode(survivors)), dim=0)
    x = schema.encode(survivors).to(torch.float64) if survivors.numel() else torch.zeros(0, schema.width)
    return NodeProposal(survivors, x, checked)
