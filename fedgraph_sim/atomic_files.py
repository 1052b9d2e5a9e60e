"""Writing a file whole or not at all: the one way the bench writes a result file that a reader
may open at any moment, or that a full disk could leave half-written.

The content goes to ``<name>.partial`` beside the file, which is renamed over it once complete
(a rename within a folder is atomic on POSIX file systems). If writing fails (``ENOSPC``, a
signal), the partial file is removed and the error raised: the old file, if any, stays as it was.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable


def replace_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write`` on a partial path beside ``path``, then rename it over ``path``.

    Args:
        path (str or Path): the file to replace (or create).
        write (Callable[[Path], None]): writes the whole content to the path it is given.

    Returns:
        ``path``, as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        write(partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path: str | Path, text: str) -> Path:
    """``Path.write_text``, whole or not at all; returns ``path`` as a :class:`~pathlib.Path`.

    Args:
        path (str or Path): the file to replace (or create).
        text (str): its new content, written with the locale's default encoding.
    """
    return replace_atomically(path, lambda partial: partial.write_text(text))
