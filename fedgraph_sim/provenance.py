"""What code produced a run: the library versions, the project's own commit and whether the tree
had uncommitted changes, recorded in a run directory's ``config.yaml`` and named under a table."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path


def library_versions() -> dict[str, str]:
    """The installed version of each library a run's numbers depend on (``fedgraph_sim``,
    ``torch``, ``torch_geometric``, ``flwr``, ``opacus``, ``numpy``), ``"not installed"`` for
    one that is missing."""
    out = {}
    for name in ("fedgraph_sim", "torch", "torch_geometric", "flwr", "opacus", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@functools.lru_cache(maxsize=1)
def project_version() -> dict:
    """The code that is running: ``{"commit": <git HEAD or "unknown">, "dirty": <uncommitted
    changes to tracked or untracked, not ignored, files; None when unknown>}``, read once per
    process from the checkout the package was imported from (an installed copy outside a checkout
    says ``unknown``). A table is only as traceable as the commit its rows record."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": "unknown", "dirty": None}
    status = git("status", "--porcelain")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance(config_sha256: str | None = None) -> dict:
    """What a run directory records besides its config: library versions, the project's version
    (``project_version``) and, given, the resolved config's hash (``config.config_hash``).

    Args:
        config_sha256 (str, optional): the resolved config's SHA-256 hex digest; left out of the
            record when not given. (default: :obj:`None`)

    Returns:
        ``{"versions": ..., "project": ...}``, plus ``"config_sha256"`` when given.
    """
    return {"versions": library_versions(), "project": project_version(),
            **({"config_sha256": config_sha256} if config_sha256 else {})}


def provenance_line() -> str:
    """One line naming the code behind a table: ``commit <sha> (clean|with uncommitted changes)``."""
    version = project_version()
    state = {True: "with uncommitted changes", False: "clean", None: "state unknown"}[version["dirty"]]
    return f"commit {version['commit'][:12]} ({state})"
