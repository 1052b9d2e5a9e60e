"""Reading a JSON-lines file the bench wrote (``results.jsonl`` of a run still going or killed,
``utility.jsonl``): the one reader, with one policy for a broken line.

A line that is not a JSON object (the half-written last line of a run that was killed, or of a
disk that filled) is skipped and counted, never fatal: every complete line before and after it is
a result. The count goes where the caller says (the report's notes; by default a warning in the
log), so a broken line is never silent either.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)


def read_jsonl(path: str | Path, on_broken: Callable[[str], None] | None = None) -> list[dict]:
    """The JSON objects of ``path``, one per line, in order (``[]`` for a missing file). Blank
    lines are ignored; other lines that are not a JSON object are skipped, and one line
    ``"<file name>: N unreadable line(s) ignored"`` goes to ``on_broken`` (default: the log)."""
    path = Path(path)
    if not path.is_file():
        return []
    rows, broken = [], 0
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            broken += 1
    if broken:
        (on_broken or log.warning)(f"{path.name}: {broken} unreadable line(s) ignored")
    return rows
