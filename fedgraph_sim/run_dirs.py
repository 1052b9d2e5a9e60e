"""Where a run writes: a run directory of its own under ``output.dir``, never one another run
already wrote into.

``runs/<timestamp>-<name>/``: ``config.yaml`` (resolved, with its provenance:
:mod:`fedgraph_sim.provenance`), the result rows (:mod:`fedgraph_sim.rows.store`), ``summary.csv``
(:mod:`fedgraph_sim.rows.summary_csv`), ``utility.parquet`` (:mod:`fedgraph_sim.utility`),
``audit/``, ``log.txt``.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from fedgraph_sim.errors import ConfigError


def claim_run_dir(path: str | Path) -> Path:
    """``path`` as a run directory of its own: created if absent, refused unless empty, so a run
    never appends its rows to another's.

    Args:
        path (str or Path): the directory given for the run.

    Returns:
        ``path``, as a :class:`~pathlib.Path`.

    Raises:
        ConfigError: ``path`` is a file, already holds files, or cannot be created, or
            :func:`check_output_base` refuses it.
    """
    path = check_output_base(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        what = "is a file" if not path.is_dir() else "already holds files (a run never writes into another's directory)"
        raise ConfigError(f"output.dir: {path} {what}; give a new or empty directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"output.dir: cannot create {path} ({exc.strerror})") from None
    return path


def check_output_base(base: str | Path) -> Path:
    """``output.dir`` as a folder runs can be created under: a symbolic link that loops or points
    nowhere, or a file in the way, is one line naming it (``mkdir`` would say "File exists").

    Args:
        base (str or Path): the configured ``output.dir``; it need not exist yet.

    Returns:
        ``base``, as a :class:`~pathlib.Path`.

    Raises:
        ConfigError: ``base`` or a folder above it is a file or a broken symbolic link.
    """
    base = Path(base)
    for part in (base, *base.parents):
        if part.is_symlink() and not part.exists():
            try:
                os.stat(part)
            except OSError as exc:
                why = "loops" if exc.errno == errno.ELOOP else f"points to {os.readlink(part)}, which does not exist"
                raise ConfigError(f"output.dir: {part} is a symbolic link that {why}") from None
        if part.exists() and not part.is_dir():
            raise ConfigError(f"output.dir: {part} is a file, not a directory")
    return base


def new_run_dir(base: str | Path, name: str) -> Path:
    """A new ``<stamp>-<name>[-k]`` directory under ``base``, created atomically: runs started in
    the same second by separate processes each get their own (``mkdir`` fails for all but one,
    and the others take the next suffix).

    Args:
        base (str or Path): the configured ``output.dir``, created if absent.
        name (str): the run's name (``config.name``).

    Returns:
        The new directory, ``<base>/<YYYYmmdd-HHMMSS>-<name>`` in local time, with ``-2``,
        ``-3``, ... when that is taken.

    Raises:
        ConfigError: ``base`` is unusable (:func:`check_output_base`), cannot be created or
            written to, or already holds 10,000 runs of that name and second.
    """
    base = check_output_base(base)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # no permission, read-only disk
        raise ConfigError(f"output.dir: cannot create a run directory under {base} ({exc.strerror})") from None
    for suffix in range(1, 10_000):
        path = base / (f"{stamp}-{name}" if suffix == 1 else f"{stamp}-{name}-{suffix}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"output.dir: cannot create a run directory under {base} ({exc.strerror})") from None
    raise ConfigError(f"output.dir: {base} already holds 10,000 runs named {stamp}-{name}")
