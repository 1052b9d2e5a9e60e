"""Result rows as a Parquet file: the columnar store a finished run keeps (``results.parquet``).

A row is a flat dict whose keys differ between attacks (each scores its own metrics and reports
its own diagnostics), so the file holds the union of the keys as columns and, per row, which of
them the row has: rows read back are the dicts that were written, key order, ``None`` values and
Python types included, and a report drawn from either store is the same.

A column whose values share one type (bool, int, float or text) is stored as that Arrow type, the
form pandas and Arrow readers expect; any other column (lists, dicts, or mixed types such as a
label that is a class index in one dataset and a regression target in another) holds each value
as JSON text, and the file's metadata names those columns. Arrow dictionary-encodes repeated text
and zstd compresses each column, which is what makes a row of hundreds of mostly repeated numbers
small.

Read one in pandas with ``pandas.read_parquet("runs/<run>/results.parquet")``.
"""

from __future__ import annotations

import json
from pathlib import Path

from fedgraph_sim.atomic_files import replace_atomically

#: File metadata: the JSON-text columns, and the distinct key lists of the rows (``_keys`` indexes them).
JSON_COLUMNS = b"fedgraph_sim.json_columns"
KEY_SETS = b"fedgraph_sim.key_sets"
KEYS_COLUMN = "_keys"

_SCALARS = {bool: "bool_", int: "int64", float: "float64", str: "string"}
#: The one NaN object the JSON reader gives for every NaN: rows compare equal (``==``) whichever
#: store they were read from, as they did from JSON lines (two distinct NaN objects never do).
_NAN = json.loads("NaN")
_INT64 = (-(2**63), 2**63 - 1)


def write_parquet(rows: list[dict], path: str | Path) -> Path:
    """Write ``rows`` to ``path`` atomically (a temporary file renamed over it, so a reader never
    sees half a file, and removed again when the write fails) and return the path.

    Args:
        rows (list[dict]): flat result rows, each with its own keys; none may have the key
            ``_keys``, which the store uses itself (:class:`ValueError`).
        path (str or Path): the Parquet file to replace (or create).

    Returns:
        ``path``, as a :class:`~pathlib.Path`.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if any(KEYS_COLUMN in row for row in rows):
        raise ValueError(f"a row has the key {KEYS_COLUMN!r}, which the Parquet store uses itself")
    columns: dict[str, None] = {}
    key_sets: dict[tuple[str, ...], int] = {}
    key_ids = []
    for row in rows:
        keys = tuple(row)
        key_ids.append(key_sets.setdefault(keys, len(key_sets)))
        columns.update(dict.fromkeys(keys))
    arrays, json_columns = [], []
    for name in columns:
        values = [row.get(name) for row in rows]
        arrow_type = _scalar_type(values)
        if arrow_type is None:
            json_columns.append(name)
            arrays.append(pa.array([None if v is None else json.dumps(v, allow_nan=True) for v in values],
                                   type=pa.string()))
        else:
            arrays.append(pa.array(values, type=getattr(pa, arrow_type)()))
    names = list(columns)
    table = pa.Table.from_arrays([*arrays, pa.array(key_ids, type=pa.int32())], names=[*names, KEYS_COLUMN])
    table = table.replace_schema_metadata({
        JSON_COLUMNS: json.dumps(json_columns).encode(),
        KEY_SETS: json.dumps([[names.index(k) for k in keys] for keys in key_sets]).encode()})
    return replace_atomically(path, lambda partial: pq.write_table(table, partial, compression="zstd"))


def read_parquet(path: str | Path) -> list[dict]:
    """The rows :func:`write_parquet` wrote to ``path``, as it was given them; a file another
    tool wrote (no ``_keys`` column) gives every column in every row.

    Args:
        path (str or Path): the Parquet file.
    """
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    json_columns = set(json.loads(meta.get(JSON_COLUMNS, b"[]")))
    names = [n for n in table.column_names if n != KEYS_COLUMN]
    values = {}
    for name in names:
        column = table.column(name).to_pylist()
        if name in json_columns:
            column = [None if v is None else json.loads(v) for v in column]
        elif str(table.column(name).type) == "double":
            column = [_NAN if v != v else v for v in column]
        values[name] = column
    if KEYS_COLUMN not in table.column_names:  # written by another tool: every column in every row
        return [{name: values[name][i] for name in names} for i in range(table.num_rows)]
    key_sets = [[names[i] for i in keys] for keys in json.loads(meta[KEY_SETS])]
    return [{name: values[name][i] for name in key_sets[k]}
            for i, k in enumerate(table.column(KEYS_COLUMN).to_pylist())]


def _scalar_type(values: list) -> str | None:
    """The Arrow type of a column whose non-null values all have one scalar Python type (an int
    column only within int64), or None: the column is stored as JSON text."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) > 1:
        return None
    if not kinds:
        return "string"
    kind = kinds.pop()
    if kind is int and not all(_INT64[0] <= v <= _INT64[1] for v in values if v is not None):
        return None
    return _SCALARS.get(kind)
