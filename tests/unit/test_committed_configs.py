"""Every committed config, and every command line the README and the configs' headers show, is
accepted by the command that runs it.

Configs rot unseen when nothing loads them: once the reproduction configs listed their table
columns (``metrics``), the two sweep specs among them made ``fedgraph-sim sweep`` exit 2, the
README's own example included. So every YAML under ``experiments/configs/`` (found by glob: a new
file is covered without touching this test) and the packaged ``default.yaml`` go through the
``main`` of the command that runs them, with ``--dry-run``: the command's own validation (config,
data, partitions, attacks, defenses, every case, federation and cell), nothing run, nothing written.

Which command: the file's shape, as the commands define it: ``axes`` is a sweep spec's (no other
config has it), ``cases`` or ``extends`` a reproduction's (``load_reproduction`` needs cases), and
anything else is a run config. Every command line in the file's header comment that runs the file
must name that same command, so a header cannot send a reader to the wrong one.

Command lines (the README's code blocks, the configs' headers) are checked as written:
``run``, ``sweep`` and ``reproduce`` with ``--dry-run``; ``attacks`` and ``info`` run as they are
(they only read; ``info``'s per-graph rank count is stubbed, a statistic that takes 20 s on Tox21);
``report`` and ``datasets`` through the parser only (a report's directory is made by an earlier
run; ``datasets`` processes every dataset). Optional parts in brackets are checked left out and
given. A placeholder directory (``runs/<stamp>-NAME``) is left out of a dry run, and its NAME must
be one a committed config writes (a sweep's or run's ``name``, a reproduction's file stem).

Checks whose datasets are not all generated are marked ``realdata``. Without FEDGRAPH_DATA_ROOT
they still run, offline, up to loading the data (spec keys, attack names, defenses are checked
before it), and are skipped only when the data is what is missing.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
import torch
import yaml

from fedgraph_sim.config import DEFAULT_CONFIG, default_tree, load_config, merge_tree, parse_overrides, set_dotted
from fedgraph_sim.data import store
from fedgraph_sim.data.moleculenet import MOLECULENET_NAMES
from fedgraph_sim.data.tu import TU_NAMES
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.runtime import cli
from fedgraph_sim.runtime.reproduction import load_reproduction

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "experiments" / "configs"
README = REPO / "README.md"

#: Where a command line starts: the installed entry point, ``python -m fedgraph_sim``, or a wrapper.
PROGRAM = re.compile(r"(?:\S*/)?fedgraph-sim(?=\s|$)|python\s+-m\s+fedgraph_sim\s|python\s+experiments/\w+\.py")
SCRIPTS = {"run_round.py": "run", "sweep.py": "sweep", "reproduce.py": "reproduce"}
DRY_RUN = ("run", "sweep", "reproduce", "audit")  # validated by the command itself, with --dry-run
RUN_CONFIG_COMMANDS = ("run", "deploy", "audit")  # the commands that take a run config
PARSE_ONLY = ("report", "datasets")      # see the module docstring for why
PLACEHOLDER = re.compile(r"<[^>]+>")
REAL_DATASETS = {*TU_NAMES, *MOLECULENET_NAMES.values()}


def configs() -> list[Path]:
    """Every committed config, once each (``experiments/configs/default.yaml`` links the packaged one)."""
    unique: dict[Path, Path] = {}
    for path in [*sorted(CONFIGS.rglob("*.yaml")), DEFAULT_CONFIG]:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def shown(path: Path) -> str:
    """``path`` as the commands are given it: from the checkout."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def shape(spec: dict) -> str:
    """The command a config's keys call for (see the module docstring)."""
    if "axes" in spec:
        return "sweep"
    if "cases" in spec or "extends" in spec:
        return "reproduce"
    return "run"


@dataclass(frozen=True)
class Command:
    """One command line as documented: ``fedgraph-sim <name> <args>`` and where it is written."""

    name: str
    args: tuple[str, ...]
    where: str

    @classmethod
    def parse(cls, text: str, where: str) -> Command:
        tokens = shlex.split(text, comments=True)
        if tokens[0].endswith("fedgraph-sim"):
            return cls(tokens[1], tuple(tokens[2:]), where)
        if tokens[:3] == ["python", "-m", "fedgraph_sim"]:
            return cls(tokens[3], tuple(tokens[4:]), where)
        script = Path(tokens[1]).name
        assert script in SCRIPTS, f"{where}: no command behind {tokens[1]}"
        return cls(SCRIPTS[script], tuple(tokens[2:]), where)

    def option(self, name: str) -> str | None:
        """The value of option ``name``, given or optional."""
        args = self.variants()[-1]
        return args[args.index(name) + 1] if name in args[:-1] else None

    def variants(self) -> list[tuple[str, ...]]:
        """The arguments with the optional ``[...]`` parts left out, and with all of them given."""
        bare, full, inside = [], [], False
        for token in self.args:
            if token.startswith("["):
                inside, token = True, token[1:]
            closes = inside and token.endswith("]")
            token = token[:-1] if closes else token
            full.append(token)
            if not inside:
                bare.append(token)
            inside = inside and not closes
        return list(dict.fromkeys([tuple(bare), tuple(full)]))


def header_commands(path: Path) -> list[Command]:
    """The command lines in a config's leading comment (a trailing backslash continues a line)."""
    lines: list[tuple[int, str]] = []  # (line number, text) of each logical line
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if lines and lines[-1][1].endswith("\\"):
            lines[-1] = (lines[-1][0], f"{lines[-1][1][:-1]} {text}")
        else:
            lines.append((number, text))
    return [Command.parse(text[start.start():], f"{shown(path)}:{number}")
            for number, text in lines if (start := PROGRAM.search(text))]


def readme_commands() -> list[Command]:
    """The README's code-block lines that start with a command (not Python, not ``make``)."""
    commands, fence = [], None  # the open block's language
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = line.strip()[3:] if fence is None else None
        elif fence in ("", "bash", "sh", "console") and PROGRAM.match(line.strip()):
            commands.append(Command.parse(line.strip(), f"README.md:{number}"))
    return commands


def runs(command: Command, path: Path) -> bool:
    """Whether ``command`` runs the config file ``path``."""
    given = command.option("--config")
    if given is None:
        return command.name in ("run", "deploy") and path.resolve() == DEFAULT_CONFIG.resolve()
    return (REPO / given).resolve() == path.resolve()


@functools.cache
def written_names() -> frozenset[str]:
    """The NAMEs of the ``runs/<stamp>-NAME`` directories the committed configs' commands write."""
    names = set()
    for path in configs():
        spec = yaml.safe_load(path.read_text()) or {}
        kind = shape(spec)
        default = "sweep" if kind == "sweep" else default_tree()["name"]  # build_sweep's, default.yaml's
        names.add(path.stem if kind == "reproduce" else spec.get("name", default))
    return frozenset(names)


def datasets(name: str, args: tuple[str, ...]) -> set[str]:
    """The datasets validating a command loads, read from its configs as validated without data
    (``aux.scenario: dataset:NAME`` included); empty when that validation fails, so the check
    itself runs and shows why."""
    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    config = REPO / args[args.index("--config") + 1] if "--config" in args else None
    try:
        if name in ("run", "audit"):
            trees = [load_config(config, overrides).model_dump()]
        elif name == "reproduce":
            only = args[args.index("--cases") + 1] if "--cases" in args else None
            trees = [c.config.model_dump() for c in load_reproduction(config, overrides, only)[1]]
        elif name == "sweep" and config:
            spec = yaml.safe_load(config.read_text()) or {}
            base = set_dotted(merge_tree(default_tree(), spec.get("base") or {}), parse_overrides(overrides))
            axis = (spec.get("axes") or {}).get("datasets") or [base["data"]["dataset"]]
            trees = [{**base, "data": {"dataset": d if isinstance(d, str) else d.get("dataset")}} for d in axis]
        elif name == "info":
            return {args[0]}
        else:
            return set()
    except (ConfigError, KeyError, TypeError, ValueError, OSError):
        return set()
    scenarios = {str(t.get("aux", {}).get("scenario", "")) for t in trees}
    aux = {s.split(":", 1)[1] for s in scenarios if s.startswith("dataset:")}
    return {t["data"]["dataset"] for t in trees} | aux


def needs_real_data(name: str, args: tuple[str, ...]) -> bool:
    """Whether a dataset the check loads is a file-backed one (TU, MoleculeNet), not generated."""
    return any(d in REAL_DATASETS or str(d).lower().startswith("tu:") for d in datasets(name, args))


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


@functools.cache
def execute(name: str, args: tuple[str, ...]) -> Outcome:
    """``fedgraph-sim <name> <args>`` from the checkout, its exit code and output (memoised: a
    config's own check and its header's command are often the same command line)."""
    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    # Validation is many small tensor operations; on cores shared with other work, two threads
    # waiting on each other make it ten times slower than one (graphdlg_table3: 50 s against 5 s).
    torch.set_num_threads(1)
    with contextlib.chdir(REPO), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch.object(cli, "_glg_full_row_rank", lambda dataset: 0):
        try:
            code = cli.main([name, *args])
        except SystemExit as exc:  # argparse: a bad argument
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            torch.set_num_threads(threads)
    return Outcome(code, out.getvalue(), err.getvalue())


def parse_only(name: str, args: tuple[str, ...]) -> None:
    """The CLI's own parser accepts ``fedgraph-sim <name> <args>``."""
    try:
        cli.build_parser().parse_args([name, *args])
    except SystemExit as exc:
        pytest.fail(f"`fedgraph-sim {name} {' '.join(args)}` does not parse (exit {exc.code})")


def without_placeholders(args: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """``args`` without placeholder directories (and an option left with no value), and those."""
    kept, dropped = [], []
    for token in args:
        if PLACEHOLDER.search(token):
            dropped.append(token)
            if kept and kept[-1].startswith("--"):
                kept.pop()
        else:
            kept.append(token)
    return tuple(kept), dropped


def check(name: str, args: tuple[str, ...], real_data: bool, request: pytest.FixtureRequest) -> None:
    """Validate one command line the way its command does (see the module docstring)."""
    if name in DRY_RUN:
        args, placeholders = without_placeholders(args)
    else:
        placeholders = [a for a in args if PLACEHOLDER.search(a)]
    for placeholder in placeholders:
        made = re.fullmatch(r"(?:.*/)?<stamp>-(\S+)", placeholder)
        assert made and made.group(1) in written_names(), (
            f"{placeholder}: names no directory a committed config's command writes ({sorted(written_names())})")
    if name in PARSE_ONLY:
        parse_only(name, args)
        return
    assert name in (*DRY_RUN, "info", "attacks", "metrics"), \
        f"no check for `fedgraph-sim {name}` commands: add one here"
    if name in DRY_RUN and "--dry-run" not in args:
        args = (*args, "--dry-run")
    no_data = real_data and (store.data_root() is None or not (store.data_root() / "tu").is_dir())
    if no_data:
        request.getfixturevalue("offline")  # no download attempt: the missing data fails at once
    outcome = execute(name, args)
    if outcome.code != 0 and no_data and "FEDGRAPH_DATA_ROOT" in outcome.err:
        pytest.skip(f"needs FEDGRAPH_DATA_ROOT (checked up to loading the data: {outcome.err.split(';')[0]})")
    assert outcome.code == 0, f"`fedgraph-sim {name} {' '.join(args)}` exits {outcome.code}: {outcome.err.strip()}"


def _param(name: str, args: tuple[str, ...], label: str):
    real = needs_real_data(name, args)
    return pytest.param(name, args, real, marks=[pytest.mark.realdata] if real else [], id=label)


def _configs() -> list:
    params = []
    for path in configs():
        kind = shape(yaml.safe_load(path.read_text()) or {})
        params.append(_param(kind, ("--config", shown(path)), shown(path)))
    return params


@pytest.mark.parametrize("name, args, real", _configs())
def test_every_committed_config_is_accepted_by_its_command(name, args, real, request):
    path = REPO / args[1]
    for command in header_commands(path):
        if runs(command, path):
            takes = RUN_CONFIG_COMMANDS if name == "run" else (name,)
            assert command.name in takes, (f"{command.where}: the header runs this file with `{command.name}`, "
                                           f"but its keys make it a {name} config")
    check(name, args, real, request)


def _documented() -> list:
    commands = readme_commands() + [c for path in configs() for c in header_commands(path)]
    params = {}
    for command in commands:
        for args in command.variants():
            if (command.name, args) not in params:
                label = f"{command.where} {command.name} {' '.join(args)}".strip()
                params[command.name, args] = _param(command.name, args, label)
    return list(params.values())


def test_the_readme_shows_commands_to_check():
    names = {c.name for c in readme_commands()}
    assert {"run", "sweep", "report"} <= names, names  # the extraction still finds the README's commands


@pytest.mark.parametrize("name, args, real", _documented())
def test_every_documented_command_line_is_accepted(name, args, real, request):
    check(name, args, real, request)
