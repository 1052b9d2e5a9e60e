"""Node-feature schemas: which one-hot block sits where, what its columns mean, and how the
model sees them.

Attacks get the schema as part of their :class:`~fedgraph_sim.threat.AttackerKnowledge` (GRAIN
enumerates candidate nodes from the value sets, TabLeak-style attacks optimise one softmax per
block), metrics use it to decode node types. A schema may standardise every column with dataset
statistics, ``(onehot - mean) / std`` with columns of zero std mapped to 0, as GRAIN's
molecules are (Drencheva et al., ICLR 2025): the server fixes that representation, so the
attacker knows it. ``degree_block`` names the block holding each node's degree in the graph, when
there is one (GRAIN needs it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FeatureBlock:
    """One categorical feature, one-hot encoded over ``values`` (column i <-> ``values[i]``);
    ``names``, when the data says, are what the values stand for (MUTAG's node label 0 is C), for
    drawings and tables."""

    name: str
    values: tuple
    names: tuple | None = None

    @property
    def width(self) -> int:
        """The block's columns, one per value."""
        return len(self.values)


@dataclass(frozen=True)
class FeatureSchema:
    """An ordered list of one-hot blocks; ``type_block`` names the block that defines node type.

    ``continuous`` marks schemas whose columns are real-valued (random auxiliary graphs), where
    argmax-based node types are still defined but not meaningful. ``mean``/``std`` (one entry per
    column) standardise the one-hot encoding; ``degree_block`` names the block whose values are
    node degrees.
    """

    blocks: tuple[FeatureBlock, ...]
    type_block: str
    continuous: bool = False
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    degree_block: str | None = None

    @property
    def width(self) -> int:
        """The feature width ``F``: the blocks' columns together."""
        return sum(b.width for b in self.blocks)

    @property
    def standardized(self) -> bool:
        """Whether the model sees standardised columns (``mean`` and ``std`` set)."""
        return self.mean is not None

    def slices(self) -> dict[str, slice]:
        """Each block's name -> its columns in ``x``, in block order."""
        out, start = {}, 0
        for block in self.blocks:
            out[block.name] = slice(start, start + block.width)
            start += block.width
        return out

    def block(self, name: str) -> FeatureBlock:
        """The block called ``name`` (:class:`StopIteration` if there is none).

        Args:
            name (str): the block's name.
        """
        return next(b for b in self.blocks if b.name == name)

    @property
    def type_slice(self) -> slice:
        """The columns of the type block."""
        return self.slices()[self.type_block]

    def _stats(self, like: torch.Tensor, cols: slice | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        mean = torch.tensor(self.mean, dtype=like.dtype)
        std = torch.tensor(self.std, dtype=like.dtype)
        return (mean, std) if cols is None else (mean[cols], std[cols])

    def standardize(self, onehot: torch.Tensor, cols: slice | None = None) -> torch.Tensor:
        """The model's encoding of one-hot rows (of the columns ``cols``, default all):
        ``(onehot - mean) / std`` per column, 0 where ``std`` is 0; ``onehot`` itself when the
        schema does not standardise.

        Args:
            onehot (torch.Tensor): one-hot rows ``[..., width of cols]``.
            cols (slice, optional): which of the schema's columns they are; None for all.
                (default: :obj:`None`)
        """
        if not self.standardized:
            return onehot
        mean, std = self._stats(onehot, cols)
        safe = torch.where(std > 0, std, torch.ones_like(std))
        return torch.where(std > 0, (onehot - mean) / safe, torch.zeros_like(onehot))

    def destandardize(self, x: torch.Tensor) -> torch.Tensor:
        """Back to one-hot space; columns of zero std come back as their (constant) mean.

        Args:
            x (torch.Tensor): features in the model's encoding ``[..., F]``.
        """
        if not self.standardized:
            return x
        mean, std = self._stats(x)
        return x * std + mean

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        """Per node and block, the index of its value (argmax per block in one-hot space).

        Args:
            x (torch.Tensor): features in the model's encoding ``[..., F]``.

        Returns:
            ``[..., number of blocks]`` (long), column ``j`` indexing ``blocks[j].values``.
        """
        raw = self.destandardize(x)
        return torch.stack([raw[..., s].argmax(dim=-1) for s in self.slices().values()], dim=-1)

    def node_types(self, x: torch.Tensor) -> torch.Tensor:
        """Per-node index into the type block's values (argmax over its columns).

        Args:
            x (torch.Tensor): features in the model's encoding ``[..., F]``.
        """
        return self.destandardize(x)[..., self.type_slice].argmax(dim=-1)

    def onehot(self, categorical: torch.Tensor) -> torch.Tensor:
        """One-hot encode an integer matrix whose column j indexes ``blocks[j].values``.

        Args:
            categorical (torch.Tensor): ``[n, number of blocks]`` value indices (else
                :class:`ValueError`).

        Returns:
            ``[n, F]`` float one-hot rows (not standardised).
        """
        if categorical.dim() != 2 or categorical.size(1) != len(self.blocks):
            raise ValueError(
                f"expected [n, {len(self.blocks)}] categorical features, got {list(categorical.shape)}"
            )
        parts = [
            torch.nn.functional.one_hot(categorical[:, j].long(), block.width)
            for j, block in enumerate(self.blocks)
        ]
        return torch.cat(parts, dim=1).float()

    def encode(self, categorical: torch.Tensor) -> torch.Tensor:
        """The model's encoding (one-hot, standardised if the schema is) of categorical rows.

        Args:
            categorical (torch.Tensor): ``[n, number of blocks]`` value indices.
        """
        return self.standardize(self.onehot(categorical))

    def degrees(self, x: torch.Tensor) -> torch.Tensor:
        """Each node's degree as its degree block says (needs ``degree_block``, else
        :class:`ValueError`).

        Args:
            x (torch.Tensor): features in the model's encoding ``[..., F]``.

        Returns:
            ``[...]`` (long) degrees.
        """
        if self.degree_block is None:
            raise ValueError("the schema has no degree block")
        index = self.blocks.index(self.block(self.degree_block))
        values = torch.tensor([int(v) for v in self.blocks[index].values])
        return values[self.decode(x)[..., index]]

    def with_block(self, block: FeatureBlock, *, degree: bool = False) -> "FeatureSchema":
        """This schema with ``block`` appended (unstandardised: its columns get mean 0, std 1).

        Args:
            block (FeatureBlock): the new last block.
            degree (bool, optional): whether it becomes the degree block. (default: :obj:`False`)
        """
        mean = None if self.mean is None else self.mean + (0.0,) * block.width
        std = None if self.std is None else self.std + (1.0,) * block.width
        return FeatureSchema(self.blocks + (block,), self.type_block, self.continuous, mean, std,
                             block.name if degree else self.degree_block)

    def to_dict(self) -> dict:
        """A JSON-able description (for the run's metadata): the type and degree blocks, flags,
        width and each block's name, width and values (non-scalars as strings); no statistics."""
        return {
            "type_block": self.type_block,
            "degree_block": self.degree_block,
            "continuous": self.continuous,
            "standardized": self.standardized,
            "width": self.width,
            "blocks": [
                {"name": b.name, "width": b.width, "values": [_plain(v) for v in b.values]}
                for b in self.blocks
            ],
        }


def _plain(value):
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def single_block_schema(name: str, values, *, continuous: bool = False, names=None) -> FeatureSchema:
    """A schema of one block, which is also the type block.

    Args:
        name (str): the block's name.
        values (Iterable): its values, one column each.
        continuous (bool, optional): whether the columns are real-valued. (default: :obj:`False`)
        names (Iterable[str], optional): what each value stands for. (default: :obj:`None`)
    """
    block = FeatureBlock(name, tuple(values), tuple(names) if names is not None else None)
    return FeatureSchema((block,), type_block=name, continuous=continuous)
