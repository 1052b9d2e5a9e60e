"""Where raw data comes from and where processed data goes.

``FEDGRAPH_DATA_ROOT`` holds read-only raw files laid out as ``<root>/tu/<NAME>/raw/`` and
``<root>/moleculenet/<name>/raw/``. They are copied into a writable cache (``FEDGRAPH_CACHE``,
default ``~/.cache/fedgraph_sim``) before PyG processes them, so nothing is ever written into the
data root. Without a data root, PyG downloads into the cache.

The cache is shared by every process on the machine (runs, sweep jobs, each run's clients), so a
dataset is prepared and loaded under an exclusive lock of its own (``flock`` on
``<cache>/<family>/.<name>.lock``): one process copies the raw files and lets PyG process them
while the others wait, then finds them ready. A stale copy (the raw files changed) is replaced
whole: the fresh one is written beside it and renamed into place, so a process killed half-way
leaves the old copy or the new, never a mixture.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import logging
import os
import shutil
from pathlib import Path
from typing import Iterator

from fedgraph_sim.errors import ConfigError

LAYOUT = "<root>/tu/<NAME>/raw/ and <root>/moleculenet/<name>/raw/"


def data_root() -> Path | None:
    """``FEDGRAPH_DATA_ROOT``, resolved, or None when unset."""
    value = os.environ.get("FEDGRAPH_DATA_ROOT")
    return Path(value).expanduser().resolve() if value else None


def cache_root() -> Path:
    """``FEDGRAPH_CACHE``, else ``~/.cache/fedgraph_sim``."""
    value = os.environ.get("FEDGRAPH_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "fedgraph_sim"


def raw_source(family: str, folder: str) -> Path | None:
    """The dataset's non-empty ``raw/`` folder under the data root, or None if absent.

    Args:
        family (str): ``tu`` or ``moleculenet``.
        folder (str): the dataset's folder (a TU name, or MoleculeNet's lower-case key).
    """
    root = data_root()
    if root is None:
        return None
    candidate = root / family / folder / "raw"
    return candidate if candidate.is_dir() and any(candidate.iterdir()) else None


def _fingerprint(raw: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(raw.iterdir()):
        if path.is_file():
            digest.update(f"{path.name}:{path.stat().st_size}:{path.stat().st_mtime_ns}".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def prepared(family: str, folder: str) -> Iterator[Path]:
    """The PyG ``root`` for a dataset, its raw files copied into the cache first, held under the
    dataset's lock until the block ends (load it inside the block: PyG processes it there).

    If the raw files in the data root changed since the last copy, the copy (with its stale
    ``processed/`` folder) is replaced, so PyG rebuilds it.

    Args:
        family (str): ``tu`` or ``moleculenet``.
        folder (str): the dataset's folder (a TU name, or MoleculeNet's lower-case key).

    Yields:
        ``<cache>/<family>``, the ``root`` PyG takes (it reads ``<root>/<folder>``).

    Raises:
        ConfigError: when the cache is not writable.
    """
    family_dir = cache_root() / family
    target = family_dir / folder
    source = raw_source(family, folder)
    try:
        family_dir.mkdir(parents=True, exist_ok=True)
        lock = open(family_dir / f".{folder}.lock", "a")
    except OSError as exc:
        raise _unwritable(exc) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        try:
            if source is not None:
                fingerprint = f"{source}\n{_fingerprint(source)}"
                marker = target / ".source"
                if not marker.is_file() or marker.read_text() != fingerprint:
                    _replace(target, source, fingerprint)
            target.mkdir(parents=True, exist_ok=True)
        except (OSError, shutil.Error) as exc:  # a read-only, missing or full place for the cache
            raise _unwritable(exc) from None
        yield family_dir


def _replace(target: Path, source: Path, fingerprint: str) -> None:
    """Put a fresh copy of ``source`` at ``target/raw`` (and nothing else under ``target``),
    written beside it and renamed into place. The old copy is moved aside first and moved back if
    the fresh one cannot take its place, so a failed refresh leaves the old copy, not none."""
    fresh = target.with_name(f".{target.name}.{os.getpid()}.new")
    stale = target.with_name(f".{target.name}.{os.getpid()}.old")
    for leftover in (fresh, stale):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        shutil.copytree(source, fresh / "raw")
        (fresh / ".source").write_text(fingerprint)
        if target.exists():
            target.rename(stale)
        try:
            fresh.rename(target)
        except BaseException:
            if stale.exists():
                stale.rename(target)
            raise
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(stale, ignore_errors=True)  # only once the fresh copy is in place


def _unwritable(exc: BaseException) -> ConfigError:
    key = "FEDGRAPH_CACHE" if os.environ.get("FEDGRAPH_CACHE") else "the dataset cache (FEDGRAPH_CACHE unset)"
    why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
    return ConfigError(f"{key}: cannot write {cache_root()} ({why}); set FEDGRAPH_CACHE to a writable folder")


@contextlib.contextmanager
def quiet_processing(name: str):
    """PyG prints ``Processing...`` and ``Done!`` when it first processes raw files; its dataset
    classes give no switch for it, so those lines go to our log (debug) instead of the terminal.

    Args:
        name (str): the dataset's name, to prefix the log line.
    """
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        yield
    if buffer.getvalue().strip():
        logging.getLogger("fedgraph_sim").debug("%s: %s", name, " ".join(buffer.getvalue().split()))


def missing_data_error(name: str, family: str, folder: str, cause: BaseException) -> ConfigError:
    """The error for a dataset neither under the data root nor downloadable: where it was looked
    for and the layout expected.

    Args:
        name (str): the dataset's name.
        family (str): ``tu`` or ``moleculenet``.
        folder (str): the dataset's folder under the family.
        cause (BaseException): what PyG raised (its type is named).
    """
    root = data_root()
    where = (
        f"FEDGRAPH_DATA_ROOT={root} has no {family}/{folder}/raw/"
        if root
        else "FEDGRAPH_DATA_ROOT is not set"
    )
    return ConfigError(
        f"dataset {name}: not available offline ({where}) and the download failed "
        f"({type(cause).__name__}); point FEDGRAPH_DATA_ROOT at a folder laid out as {LAYOUT}"
    )
