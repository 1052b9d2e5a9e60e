"""The JSON-lines files a run streams (``results.jsonl``, ``utility.jsonl``): the one writer and
the one reader, each with one failure policy.

Writing: each object is appended as one line, whole or not at all. A killed run loses no line it
finished, and when the disk fills the part of a line that fitted is cut off again and
:class:`~fedgraph_sim.errors.DiskFull` raised, so every line before it stays readable.

Reading: a line that is not a JSON object (the half-written last line of a run that was killed, or of a
disk that filled) is skipped and counted, never fatal: every complete line before and after it is
a result. The count goes where the caller says (the report's notes; by default a warning in the
log), so a broken line is never silent either.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable

from fedgraph_sim.errors import DiskFull

log = logging.getLogger(__name__)


class JsonlWriter:
    """Appends JSON objects to ``path``, one line each, written whole or not at all (threads may
    share a writer). ``rows`` counts the lines this writer has appended."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.rows = 0

    def write(self, row: dict) -> None:
        """Append ``row`` as one JSON line, whole or not at all. A NumPy or torch scalar is written
        as its Python number, any other value JSON cannot hold as its text, and a NaN or infinity
        as ``NaN``/``Infinity``. When the write fails (a full disk) the part of the line that was
        written is cut off again and :class:`~fedgraph_sim.errors.DiskFull` is raised.

        Args:
            row (dict): the object to append; its keys become the line's keys.
        """
        data = (json.dumps(row, default=_jsonable, allow_nan=True) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                before = os.fstat(fd).st_size
                try:
                    written = 0
                    while written < len(data):
                        written += os.write(fd, data[written:])
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, before)
                    whole = f"the {self.rows} rows written before it are whole" if self.rows else \
                        "every line before it is whole"
                    raise DiskFull(f"{self.path}: {exc.strerror}; {whole} and the run stopped") from None
            finally:
                os.close(fd)
            self.rows += 1


def append_jsonl(path: str | Path, row: dict) -> None:
    """Append ``row`` to ``path`` as :class:`JsonlWriter` does, for a file written a line at a time.

    Args:
        path (str or Path): the JSON-lines file, created if absent.
        row (dict): the object to append as one line.
    """
    JsonlWriter(path).write(row)


def _jsonable(value):
    """A NumPy or torch scalar as its Python number; anything else JSON cannot hold as its text."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def read_jsonl(path: str | Path, on_broken: Callable[[str], None] | None = None) -> list[dict]:
    """The JSON objects of ``path``, one per line, in order (``[]`` for a missing file). Blank
    lines are ignored; other lines that are not a JSON object are skipped, and one line
    ``"<file name>: N unreadable line(s) ignored"`` goes to ``on_broken`` (default: the log).

    Args:
        path (str or Path): the JSON-lines file; undecodable bytes are read as U+FFFD.
        on_broken (Callable[[str], None], optional): takes the line counting the unreadable
            lines, called only when there are some. (default: :obj:`None`: a warning in the log)
    """
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
