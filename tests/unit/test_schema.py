import pytest
import torch

from fedgraph_sim.data.schema import FeatureBlock, FeatureSchema

BLOCKS = (FeatureBlock("element", ("C", "N", "O")), FeatureBlock("degree", (0, 1, 2, 3)))
CATS = torch.tensor([[0, 2], [1, 1], [0, 3], [2, 1]])


def standardized_schema() -> FeatureSchema:
    onehot = FeatureSchema(BLOCKS, "element").onehot(CATS)
    mean, std = onehot.mean(0), onehot.std(0)
    return FeatureSchema(BLOCKS, "element", mean=tuple(mean.tolist()), std=tuple(std.tolist()),
                         degree_block="degree")


def test_plain_schema_encodes_one_hot_and_decodes_back():
    schema = FeatureSchema(BLOCKS, "element", degree_block="degree")
    x = schema.encode(CATS)
    assert x.shape == (4, 7) and torch.all(x.sum(1) == 2)
    assert torch.equal(schema.decode(x), CATS)
    assert schema.node_types(x).tolist() == [0, 1, 0, 2]
    assert schema.degrees(x).tolist() == [2, 1, 3, 1]


def test_standardized_schema_round_trips_and_zeroes_constant_columns():
    schema = standardized_schema()
    x = schema.encode(CATS)
    assert torch.allclose(x.mean(0), torch.zeros(7), atol=1e-6)  # standardised with its own statistics
    assert torch.all(x[:, 3] == 0)  # degree 0 never occurs: std 0 -> column 0
    assert torch.equal(schema.decode(x), CATS)
    assert schema.degrees(x).tolist() == [2, 1, 3, 1]
    assert torch.allclose(schema.destandardize(x)[:, :3], schema.onehot(CATS)[:, :3], atol=1e-6)
    # a column slice standardises with the same slice of the statistics
    assert torch.allclose(schema.standardize(schema.onehot(CATS)[:, 3:], slice(3, None)), x[:, 3:])


def test_appended_block_is_unstandardized_and_can_be_the_degree_block():
    schema = FeatureSchema(BLOCKS[:1], "element").with_block(BLOCKS[1], degree=True)
    assert schema.degree_block == "degree" and schema.width == 7 and not schema.standardized
    std = standardized_schema().with_block(FeatureBlock("ring", (0, 1)))
    assert std.mean[-2:] == (0.0, 0.0) and std.std[-2:] == (1.0, 1.0)
    assert std.degree_block == "degree"


def test_degrees_need_a_degree_block():
    with pytest.raises(ValueError, match="degree block"):
        FeatureSchema(BLOCKS, "element").degrees(torch.zeros(1, 7))
