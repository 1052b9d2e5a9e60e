"""Reading a YAML file a user named (a run config, a sweep spec, a reproduction config): the one
reader, so each way the file can be wrong is one line naming the option and the cause.

A config is a few kilobytes; the reader refuses files above :data:`MAX_BYTES` before reading
them, so a mistyped path to a large file costs nothing (PyYAML holds several times a file's size
in memory while it parses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fedgraph_sim.errors import ConfigError

MAX_BYTES = 1 << 20  # 1 MiB: the largest config in the repository is under 10 KB


def read_yaml(path: str | Path, key: str = "--config") -> Any:
    """The parsed content of ``path`` (``None`` for an empty file). Raises :class:`ConfigError`
    ``"<key>: <path> <why>"`` for a missing path, a directory, a file that cannot be read, one
    larger than :data:`MAX_BYTES`, one that is not UTF-8 text, and one that is not valid YAML.

    Args:
        path (str or Path): the YAML file.
        key (str, optional): the option or config key that named the file, first in an error.
            (default: ``"--config"``)
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ConfigError(f"{key}: no such file {path}") from None
    except OSError as exc:  # a symlink loop, a path through a file, a permission
        raise ConfigError(f"{key}: cannot read {path} ({exc.strerror or exc})") from None
    if path.is_dir():
        raise ConfigError(f"{key}: {path} is a directory; give a YAML file")
    if size > MAX_BYTES:
        raise ConfigError(f"{key}: {path} is {size:,} bytes; a config is a YAML file under {MAX_BYTES:,} bytes")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not a text file (not UTF-8); give a YAML file") from None
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path} ({exc.strerror or exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{key}: {path} is not valid YAML ({str(exc).splitlines()[0]})") from None
