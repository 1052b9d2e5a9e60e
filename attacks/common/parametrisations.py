r"""How an optimisation attack parametrises its unknowns: each :class:`Parametrisation` owns the
free variables of one dummy tensor, maps them to the tensor the model sees (:meth:`value`) and,
for projected gradient descent, projects them back onto their feasible set after every step
(:meth:`project`).

Features ``[n, F]``:

- :class:`FreeFeatures`: the variables themselves (DLG, Zhu et al. 2019).
- :class:`BoxedFeatures`: free, projected onto a box (Inverting Gradients, Geiping et al. 2020).
- :class:`SchemaSoftmaxFeatures`: one softmax per one-hot block of the feature schema, in the
  model's standardised encoding (TabLeak's relaxation, Vero et al. 2023, as GRAIN's baselines
  adapt it).

Adjacency ``[n, n]``, symmetric with a zero diagonal, one variable per unordered node pair:

- :class:`SigmoidAdjacency`: :math:`\sigma(S)` on the strict upper triangle (GRAIN's and
  GraphDLG's graph adaptation of DLG).
- :class:`ProjectedAdjacency`: the upper triangle itself, clamped to [0, 1] after every step
  (GLG, Sinha et al., arXiv:2411.19440, Eq. 15), with :meth:`ProjectedAdjacency.sample` for the
  paper's Bernoulli output; :class:`FullAdjacency` is the plain projected matrix, as GLG's paper
  states it, scored by its symmetrisation.

Labels ``[B, C]``: :class:`SoftLabels` (DLG's jointly optimised ``softmax(l)``). Anything the
attacker knows (a granted X or A, an inferred label) is :class:`Known`: a value, no variables.

A *factory* ``(n, i, gen) -> Parametrisation`` builds the one of graph ``i`` with ``n`` nodes;
:func:`free`, :func:`boxed`, :func:`schema_softmax_features`, :func:`sigmoid_adjacency`,
:func:`projected_adjacency` and :func:`known` make them for :class:`~attacks.common.dummy.DummyGraphs`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor

from fedgraph_sim.data.schema import FeatureSchema

FEATURE_INITS = ("randn", "rand", "uniform_pm1")


def schema_softmax(z: Tensor, schema: FeatureSchema) -> Tensor:
    """A softmax per one-hot block of ``z [.., F]``, then the schema's standardisation."""
    soft = torch.cat([torch.softmax(z[..., s], dim=-1) for s in schema.slices().values()], dim=-1)
    return schema.standardize(soft)


def mirrored(upper: Tensor, n: int) -> Tensor:
    """Strict-upper-triangle values ``[n(n-1)/2]`` as a symmetric ``[n, n]`` with a zero diagonal."""
    iu = torch.triu_indices(n, n, offset=1)
    half = upper.new_zeros(n, n).index_put((iu[0], iu[1]), upper)
    return half + half.t()


def symmetric_adjacency(edge_logits: Tensor, n: int) -> Tensor:
    """``sigmoid(S)`` on the strict upper triangle, mirrored, zero diagonal."""
    return mirrored(torch.sigmoid(edge_logits), n)


def project_unit_interval(values: Tensor) -> None:
    """Projected gradient descent's projection onto [0, 1] (GLG, Eq. 15), in place."""
    with torch.no_grad():
        values.clamp_(0.0, 1.0)


def draw(shape, how: str | Tensor, gen: torch.Generator) -> Tensor:
    """Initial values: ``randn`` N(0, 1), ``rand`` U(0, 1), ``uniform_pm1`` U(-1, 1), or a given
    starting point (a tensor of ``shape``, copied)."""
    if isinstance(how, Tensor):
        return how.detach().clone().reshape(shape)
    if how == "randn":
        return torch.randn(shape, generator=gen)
    if how == "rand":
        return torch.rand(shape, generator=gen)
    if how == "uniform_pm1":
        return torch.rand(shape, generator=gen) * 2 - 1
    raise ValueError(f"unknown init '{how}'; valid: {', '.join(FEATURE_INITS)}")


class Parametrisation:
    """A dummy tensor: its free ``variables`` and the :meth:`value` they stand for."""

    variables: list[Tensor] = []

    def value(self) -> Tensor:
        raise NotImplementedError

    def project(self) -> None:
        """Back onto the feasible set after a step (nothing, unless constrained)."""

    def edge_scores(self) -> Tensor:
        """For an adjacency: the undirected edge scores it stands for (its value, unless it is not
        symmetric)."""
        return self.value()


class Known(Parametrisation):
    """A value the attacker has (a granted X or A, an inferred label): no variables."""

    def __init__(self, value: Tensor) -> None:
        self._value = value
        self.variables = []

    def value(self) -> Tensor:
        return self._value


class FreeFeatures(Parametrisation):
    def __init__(self, shape, init: str | Tensor, gen: torch.Generator) -> None:
        self.z = draw(shape, init, gen).requires_grad_()
        self.variables = [self.z]

    def value(self) -> Tensor:
        return self.z


class BoxedFeatures(FreeFeatures):
    """Free features kept in ``[low, high]``, projected at the start and after every step."""

    def __init__(self, shape, init: str | Tensor, gen: torch.Generator, low: float = 0.0, high: float = 1.0) -> None:
        super().__init__(shape, init, gen)
        self.low, self.high = low, high
        self.project()

    def project(self) -> None:
        with torch.no_grad():
            self.z.clamp_(self.low, self.high)


class SchemaSoftmaxFeatures(FreeFeatures):
    def __init__(self, shape, init: str | Tensor, gen: torch.Generator, schema: FeatureSchema) -> None:
        super().__init__(shape, init, gen)
        self.schema = schema

    def value(self) -> Tensor:
        return schema_softmax(self.z, self.schema)


class SigmoidAdjacency(Parametrisation):
    def __init__(self, n: int, gen: torch.Generator) -> None:
        self.n = n
        self.logits = torch.randn(n * (n - 1) // 2, generator=gen).requires_grad_()
        self.variables = [self.logits]

    def value(self) -> Tensor:
        return symmetric_adjacency(self.logits, self.n)


class ProjectedAdjacency(Parametrisation):
    """``init``: ``bernoulli`` (every pair drawn Bernoulli(0.5), GLG's default), a constant in
    [0, 1] (its App. F) or a starting matrix ``[n, n]``."""

    def __init__(self, n: int, gen: torch.Generator, init: str | float | Tensor = "bernoulli") -> None:
        self.n = n
        pairs = n * (n - 1) // 2
        if isinstance(init, Tensor):  # a starting matrix [n, n]: its upper triangle
            iu = torch.triu_indices(n, n, offset=1)
            self.upper = init.detach().float()[iu[0], iu[1]].clone()
        elif init == "bernoulli":
            self.upper = torch.bernoulli(torch.full((pairs,), 0.5), generator=gen)
        else:
            self.upper = torch.full((pairs,), float(init))
        self.upper.requires_grad_()
        self.variables = [self.upper]

    def value(self) -> Tensor:
        return mirrored(self.upper, self.n)

    def project(self) -> None:
        project_unit_interval(self.upper)

    def sample(self, gen: torch.Generator) -> Tensor:
        """A Bernoulli draw of every pair (GLG's discrete output)."""
        with torch.no_grad():
            return mirrored(torch.bernoulli(self.upper.detach().clamp(0, 1), generator=gen), self.n)


class FullAdjacency(Parametrisation):
    """A plain ``[n, n]`` matrix, every entry a variable clamped to [0, 1] after every step (GLG as
    its paper states it: no symmetry, no zero diagonal). :meth:`value` is the matrix the model
    sees; :meth:`edge_scores` the undirected edge scores ``(A + A^T) / 2`` with a zero diagonal."""

    def __init__(self, n: int, gen: torch.Generator, init: str | float | Tensor = "bernoulli") -> None:
        self.n = n
        if isinstance(init, Tensor):
            self.matrix = init.detach().float().clone()
        elif init == "bernoulli":
            self.matrix = torch.bernoulli(torch.full((n, n), 0.5), generator=gen)
        else:
            self.matrix = torch.full((n, n), float(init))
        self.matrix.requires_grad_()
        self.variables = [self.matrix]

    def value(self) -> Tensor:
        return self.matrix

    def project(self) -> None:
        project_unit_interval(self.matrix)

    def edge_scores(self) -> Tensor:
        a = (self.matrix + self.matrix.t()) / 2
        return a - torch.diag_embed(a.diagonal())

    def sample(self, gen: torch.Generator) -> Tensor:
        """A Bernoulli draw of every unordered pair from its symmetrised score."""
        with torch.no_grad():
            iu = torch.triu_indices(self.n, self.n, offset=1)
            return mirrored(torch.bernoulli(self.edge_scores()[iu[0], iu[1]].clamp(0, 1), generator=gen), self.n)


class SoftLabels(Parametrisation):
    """DLG's label variable: logits ``[B, C]``, the target distribution ``softmax(l)``."""

    def __init__(self, batch: int, num_classes: int, gen: torch.Generator) -> None:
        self.logits = torch.randn(batch, num_classes, generator=gen).requires_grad_()
        self.variables = [self.logits]

    def value(self) -> Tensor:
        return torch.softmax(self.logits, dim=-1)

    def guesses(self) -> list[int]:
        return self.logits.argmax(-1).tolist()


class RegressionTargets(Parametrisation):
    """DLG's label variable for a one-output regression model: a free real target per graph,
    starting at 0 (FedGIG, Xiao et al., arXiv:2412.18513, optimises FreeSolv's label jointly)."""

    def __init__(self, batch: int) -> None:
        self.target = torch.zeros(batch).requires_grad_()
        self.variables = [self.target]

    def value(self) -> Tensor:
        return self.target

    def guesses(self) -> list[float]:
        return self.target.detach().tolist()


Factory = Callable[[int, int, torch.Generator], Parametrisation]


def free(num_features: int, init: str | Tensor = "randn") -> Factory:
    return lambda n, i, gen: FreeFeatures((n, num_features), init, gen)


def boxed(num_features: int, init: str | Tensor = "randn", low: float = 0.0, high: float = 1.0) -> Factory:
    return lambda n, i, gen: BoxedFeatures((n, num_features), init, gen, low, high)


def schema_softmax_features(num_features: int, schema: FeatureSchema, init: str | Tensor = "randn") -> Factory:
    return lambda n, i, gen: SchemaSoftmaxFeatures((n, num_features), init, gen, schema)


def sigmoid_adjacency() -> Factory:
    return lambda n, i, gen: SigmoidAdjacency(n, gen)


def projected_adjacency(init: str | float | Tensor = "bernoulli") -> Factory:
    return lambda n, i, gen: ProjectedAdjacency(n, gen, init)


def full_adjacency(init: str | float | Tensor = "bernoulli") -> Factory:
    return lambda n, i, gen: FullAdjacency(n, gen, init)


def known(values: Sequence[Tensor]) -> Factory:
    """Graph ``i``'s granted value ``values[i]``."""
    return lambda n, i, gen: Known(values[i].float())
