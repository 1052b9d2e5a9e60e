"""The error types users see.

Anything a user can get wrong (a name, a number, a missing data folder) raises
:class:`ConfigError` with a single line that names the key, says why, and lists the valid choices.
Entry points print that line and exit with code 2; they never show a traceback for it. A run whose
results would mean nothing (no client turn of a round succeeded) raises :class:`RunFailed`: one
line, exit code 1, the rows written so far kept. A run stopped by Ctrl-C raises :class:`Stopped`:
one line, exit code 130 (the shell's for SIGINT).
"""


class ConfigError(ValueError):
    """Bad input, reported as one line and exit code 2 by every entry point."""

    exit_code = 2


class RunFailed(RuntimeError):
    """A run that cannot stand as a result, reported as one line and exit code 1."""

    exit_code = 1


def require(condition: bool, key: str, reason: str) -> None:
    """Raise ``ConfigError("<key>: <reason>")`` unless ``condition`` holds.

    Args:
        condition (bool): what must hold.
        key (str): the config key (or option) at fault, e.g. ``federation.num_clients``.
        reason (str): why the value is refused.
    """
    if not condition:
        raise ConfigError(f"{key}: {reason}")


class DiskFull(RunFailed):
    """A result row could not be written (the disk is full): the run stops, the rows before it kept
    whole; one line, exit code 1."""


class Stopped(RuntimeError):
    """A run stopped on request (Ctrl-C, SIGTERM), its rows so far kept: one line, exit code 130."""

    exit_code = 130
