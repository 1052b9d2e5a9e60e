r"""Dirichlet label partition over K clients (Hsu et al. 2019; the GraphDLG paper's split).

For each class c, proportions q_c ~ Dir(alpha * 1_K) cut the shuffled class-c indices at
floor(cumsum(q_c) * |c|): client k (from 1) gets the shuffled class-c indices at positions
cut_{c,k-1} (cut_{c,0} = 0) up to, not including, cut_{c,k} (the last client: up to the end), where

.. math::
    \mathbf{q}_c \sim \mathrm{Dir}(\alpha \mathbf{1}_K), \qquad
    \mathrm{cut}_{c,k} = \Big\lfloor |c| \sum_{j \le k} q_{c,j} \Big\rfloor.

Small alpha gives skewed label mixes per client; large alpha gives near-IID partitions. Draws
repeat until every partition holds ``min_partition_size`` graphs.

:func:`dirichlet_sample` is for more clients than graphs (a thousand clients on MUTAG's 188):
each client draws its own label mix q_k ~ Dir(alpha * 1_C) and ``size`` graphs with replacement,
each graph's class from q_k and then the graph uniformly within it; shares overlap.
"""

from __future__ import annotations

import numpy as np

from fedgraph_sim.errors import ConfigError, require


def dirichlet_partition(labels, num_partitions: int, alpha: float, *,
                        min_partition_size: int = 2, seed: int = 0,
                        max_attempts: int = 100) -> list[np.ndarray]:
    """Sorted, disjoint index arrays covering ``range(len(labels))``, one per partition.

    Args:
        labels (array_like): each graph's class ``[N]`` (the strata).
        num_partitions (int): the clients ``K``, at most ``N``.
        alpha (float): the Dirichlet concentration, > 0.
        min_partition_size (int, optional): the fewest graphs a partition may hold; a draw with a
            smaller one is redrawn. (default: ``2``)
        seed (int, optional): the generator's seed. (default: ``0``)
        max_attempts (int, optional): draws before giving up. (default: ``100``)

    Raises:
        ConfigError: for impossible arguments, or no draw within ``max_attempts``.
    """
    labels = np.asarray(labels)
    n = len(labels)
    require(alpha > 0, "partition.alpha", f"must be > 0 (got {alpha})")
    require(num_partitions >= 1, "federation.num_clients", f"must be >= 1 (got {num_partitions})")
    require(num_partitions <= n, "federation.num_clients",
            f"{num_partitions} clients but the dataset has only {n} graphs")
    require(min_partition_size >= 0, "partition.min_partition_size",
            f"must be >= 0 (got {min_partition_size})")
    require(min_partition_size * num_partitions <= n, "partition.min_partition_size",
            f"{num_partitions} clients x {min_partition_size} graphs exceeds the {n} graphs available")

    rng = np.random.default_rng(seed)
    for _ in range(max_attempts):
        parts: list[list[int]] = [[] for _ in range(num_partitions)]
        for c in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == c))
            q = rng.dirichlet(np.full(num_partitions, float(alpha)))
            cuts = np.floor(np.cumsum(q)[:-1] * len(members)).astype(int)
            for k, chunk in enumerate(np.split(members, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_partition_size:
            return [np.sort(np.array(p, dtype=np.int64)) for p in parts]
    raise ConfigError(
        f"partition.min_partition_size: no Dirichlet(alpha={alpha}) draw gave every one of "
        f"{num_partitions} clients >= {min_partition_size} graphs in {max_attempts} attempts; "
        "lower it, raise partition.alpha or use fewer clients")


def dirichlet_sample(labels, num_partitions: int, alpha: float, size: int, *, seed: int = 0) -> list[np.ndarray]:
    """Sorted index arrays (repeats allowed) of ``size`` graphs per client (module docstring).

    Args:
        labels (array_like): each graph's class ``[N]``, ``N >= 1``.
        num_partitions (int): the clients.
        alpha (float): the Dirichlet concentration over the classes, > 0.
        size (int): the graphs each client draws, with replacement.
        seed (int, optional): the generator's seed. (default: ``0``)
    """
    labels = np.asarray(labels)
    require(alpha > 0, "partition.alpha", f"must be > 0 (got {alpha})")
    require(len(labels) > 0, "federation.num_clients", "no graphs left to sample from")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    members = [np.flatnonzero(labels == c) for c in classes]
    parts = []
    for _ in range(num_partitions):
        drawn = rng.choice(len(classes), size=size, p=rng.dirichlet(np.full(len(classes), float(alpha))))
        parts.append(np.sort(np.array([rng.choice(members[c]) for c in drawn], dtype=np.int64)))
    return parts
