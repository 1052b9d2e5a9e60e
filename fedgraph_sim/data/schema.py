"""Node-feature schemas: which one-hot block sits where, and what its columns mean.

Attacks get the schema as part of their :class:`~fedgraph_sim.threat.AttackerKnowledge` (GRAIN and
TabLeak-style attacks optimise one softmax per block), metrics use it to find the node-type block.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FeatureBlock:
    """One categorical feature, one-hot encoded over ``values`` (column i <-> ``values[i]``)."""

    name: str
    values: tuple

    @property
    def width(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class FeatureSchema:
    """An ordered list of one-hot blocks; ``type_block`` names the block that defines node type.

    ``continuous`` marks schemas whose columns are real-valued (random auxiliary graphs), where
    argmax-based node types are still defined but not meaningful.
    """

    blocks: tuple[FeatureBlock, ...]
    type_block: str
    continuous: bool = False

    @property
    def width(self) -> int:
        return sum(b.width for b in self.blocks)

    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for block in self.blocks:
            out[block.name] = slice(start, start + block.width)
            start += block.width
        return out

    @property
    def type_slice(self) -> slice:
        return self.slices()[self.type_block]

    def node_types(self, x: torch.Tensor) -> torch.Tensor:
        """Per-node index into the type block's values (argmax over its columns)."""
        return x[..., self.type_slice].argmax(dim=-1)

    def encode(self, categorical: torch.Tensor) -> torch.Tensor:
        """One-hot encode an integer matrix whose column j indexes ``blocks[j].values``."""
        if categorical.dim() != 2 or categorical.size(1) != len(self.blocks):
            raise ValueError(
                f"expected [n, {len(self.blocks)}] categorical features, got {list(categorical.shape)}"
            )
        parts = [
            torch.nn.functional.one_hot(categorical[:, j].long(), block.width)
            for j, block in enumerate(self.blocks)
        ]
        return torch.cat(parts, dim=1).float()

    def to_dict(self) -> dict:
        return {
            "type_block": self.type_block,
            "continuous": self.continuous,
            "width": self.width,
            "blocks": [
                {"name": b.name, "width": b.width, "values": [_plain(v) for v in b.values]}
                for b in self.blocks
            ],
        }


def _plain(value):
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def single_block_schema(name: str, values, *, continuous: bool = False) -> FeatureSchema:
    return FeatureSchema((FeatureBlock(name, tuple(values)),), type_block=name, continuous=continuous)
