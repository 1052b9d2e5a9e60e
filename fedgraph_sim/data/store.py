"""Where raw data comes from and where processed data goes.

``FEDGRAPH_DATA_ROOT`` holds read-only raw files laid out as ``<root>/tu/<NAME>/raw/`` and
``<root>/moleculenet/<name>/raw/``. They are copied into a writable cache (``FEDGRAPH_CACHE``,
default ``~/.cache/fedgraph_sim``) before PyG processes them, so nothing is ever written into the
data root. Without a data root, PyG downloads into the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
from pathlib import Path

from fedgraph_sim.errors import ConfigError

LAYOUT = "<root>/tu/<NAME>/raw/ and <root>/moleculenet/<name>/raw/"


def data_root() -> Path | None:
    value = os.environ.get("FEDGRAPH_DATA_ROOT")
    return Path(value).expanduser().resolve() if value else None


def cache_root() -> Path:
    value = os.environ.get("FEDGRAPH_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "fedgraph_sim"


def raw_source(family: str, folder: str) -> Path | None:
    """The data-root folder holding ``raw/`` for one dataset, or None if absent."""
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


def prepare(family: str, folder: str) -> Path:
    """Return the PyG ``root`` for a dataset, copying its raw files into the cache first.

    If the raw files in the data root changed since the last copy, the stale ``processed/``
    folder is removed so PyG rebuilds it.
    """
    target = cache_root() / family / folder
    source = raw_source(family, folder)
    try:
        if source is not None:
            marker = target / ".source"
            fingerprint = f"{source}\n{_fingerprint(source)}"
            if not marker.is_file() or marker.read_text() != fingerprint:
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target / "raw")
                marker.write_text(fingerprint)
        target.mkdir(parents=True, exist_ok=True)
    except (OSError, shutil.Error) as exc:  # a read-only, missing or full place for the cache
        key = "FEDGRAPH_CACHE" if os.environ.get("FEDGRAPH_CACHE") else "the dataset cache (FEDGRAPH_CACHE unset)"
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{key}: cannot write {cache_root()} ({why}); "
                          "set FEDGRAPH_CACHE to a writable folder") from None
    return cache_root() / family


@contextlib.contextmanager
def quiet_processing(name: str):
    """PyG prints ``Processing...`` and ``Done!`` when it first processes raw files; its dataset
    classes give no switch for it, so those lines go to our log (debug) instead of the terminal."""
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        yield
    if buffer.getvalue().strip():
        logging.getLogger("fedgraph_sim").debug("%s: %s", name, " ".join(buffer.getvalue().split()))


def missing_data_error(name: str, family: str, folder: str, cause: BaseException) -> ConfigError:
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
