"""The Parquet store gives back the rows it was given: keys, order, nulls and types."""

import json
import math

import pyarrow.parquet as pq
import pytest

from fedgraph_sim.parquet_rows import JSON_COLUMNS, read_parquet, write_parquet

ROWS = [
    {"attack": "grain", "status": "ok", "graph_id": 3, "seconds": 0.25, "hint_label": True,
     "identity_gsm_full": 1.0, "defense_stack": [{"name": "prune", "p": 0.9}], "label_true": 1,
     "info_trace": {"steps": [1, 2]}, "huge": 2**70},
    {"status": "client_failed", "attack": "grain", "graph_id": None, "seconds": float("nan"),
     "hint_label": False, "defense_stack": [], "label_true": 0.75, "message": "died"},
    {"attack": "glg", "status": "timeout", "seconds": float("inf"), "identity_gsm_full": -0.0},
]


def _same(a: list[dict], b: list[dict]) -> bool:
    """Equal as JSON text (NaN included) and key for key of the same Python type."""
    return (json.dumps(a, allow_nan=True) == json.dumps(b, allow_nan=True)
            and all([type(v) for v in x.values()] == [type(v) for v in y.values()] for x, y in zip(a, b)))


def test_rows_come_back_as_written(tmp_path):
    back = read_parquet(write_parquet(ROWS, tmp_path / "results.parquet"))
    assert _same(back, ROWS)
    assert list(back[1]) == list(ROWS[1])  # each row's own key order
    assert "graph_id" in back[1] and back[1]["graph_id"] is None  # a null is kept, not dropped
    assert "graph_id" not in back[2] and "message" not in back[0]  # a key a row never had stays absent
    assert math.isinf(back[2]["seconds"]) and math.copysign(1, back[2]["identity_gsm_full"]) == -1
    assert back == json.loads(json.dumps(ROWS, allow_nan=True))  # == holds with NaN, as for JSON-read rows


def test_single_typed_columns_are_arrow_types_and_the_rest_json(tmp_path):
    path = write_parquet(ROWS, tmp_path / "results.parquet")
    schema = pq.read_schema(path)
    assert str(schema.field("seconds").type) == "double"
    assert str(schema.field("graph_id").type) == "int64"
    assert str(schema.field("hint_label").type) == "bool"
    assert str(schema.field("attack").type) == "string"
    # lists, dicts, an int and a float in one column, an int beyond int64
    assert set(json.loads(schema.metadata[JSON_COLUMNS])) == {"defense_stack", "label_true", "info_trace", "huge"}


def test_pandas_reads_it_in_one_line(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(write_parquet(ROWS, tmp_path / "results.parquet"))
    assert len(frame) == 3 and list(frame["attack"]) == ["grain", "grain", "glg"]
    assert frame["seconds"].iloc[0] == 0.25 and frame["identity_gsm_full"].isna().iloc[1]


def test_the_file_appears_whole_or_not_at_all(tmp_path):
    write_parquet(ROWS, tmp_path / "results.parquet")
    assert [p.name for p in tmp_path.iterdir()] == ["results.parquet"]  # no partial file left behind
    assert read_parquet(write_parquet([], tmp_path / "results.parquet")) == []


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def full_disk(table, where, **kwargs):
        open(where, "w").write("part")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_parquet(ROWS, tmp_path / "results.parquet")
    assert list(tmp_path.iterdir()) == []


def test_a_row_may_not_use_the_stores_own_column(tmp_path):
    with pytest.raises(ValueError, match="_keys"):
        write_parquet([{"_keys": 1}], tmp_path / "results.parquet")
