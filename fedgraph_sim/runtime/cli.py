"""``fedgraph-sim`` (or ``python -m fedgraph_sim``): run federations, sweeps and reproductions,
inspect datasets before running anything, report on results after.

    fedgraph-sim run [--config FILE] [--dry-run] [key=value ...]   one federation, its attacks scored
    fedgraph-sim sweep --config SPEC [--jobs N] | --resume DIR   defense-vs-attack sweeps
    fedgraph-sim reproduce --config FILE [--cases ...] [--reuse DIR ...] [--dry-run]   a paper table
    fedgraph-sim deploy [--config FILE] [key=value ...]   one federation on the Deployment Engine
    fedgraph-sim audit --config FILE [key=value ...]   does it leak, and what stops it: audit.html
    fedgraph-sim datasets [--json]      every dataset that loads here, with its stats
    fedgraph-sim info NAME [--json]     one dataset (``--task``, ``--max-nodes``)
    fedgraph-sim attacks [--plugin M] [--json | --markdown | --write README.md]   every attack: paper, needs, defaults
    fedgraph-sim report DIR [--html]    report.md and figures/ (and report.html) for a run or sweep
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import warnings
from pathlib import Path

from fedgraph_sim.errors import ConfigError, RunFailed
from fedgraph_sim.runtime.stopping import defer_startup_signals, startup_checkpoint

STAT_COLUMNS = ("name", "source", "graphs", "classes", "feature_width", "mean_nodes", "max_nodes")


def _print_table(rows: list[dict], title: str, columns: tuple[str, ...] = STAT_COLUMNS) -> None:
    from rich.console import Console
    from rich.table import Table

    def numeric(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    table = Table(title=title)
    for column in columns:  # numbers right-aligned, as the first row has them
        table.add_column(column, justify="right" if rows and numeric(rows[0].get(column)) else "left")
    for row in rows:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    Console().print(table)


def _load_quietly(name: str, **options):
    from fedgraph_sim.data import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RDKit/PyG warn per rejected SMILES while processing
        return load_dataset(name, **options)


def cmd_datasets(args) -> int:
    from rich.console import Console

    from fedgraph_sim.data import available_datasets

    rows = []
    console = Console(stderr=True)
    with console.status("") as status:
        for name in available_datasets():
            status.update(f"loading {name} (first load processes raw files)")
            rows.append(_load_quietly(name).stats())
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table(rows, "datasets available here")
    return 0


def cmd_info(args) -> int:
    options = {"max_nodes": args.max_nodes}
    if args.task is not None:
        options["task"] = args.task
    try:
        dataset = _load_quietly(args.name, **options)
    except ConfigError as exc:  # the option's name on this command line
        raise ConfigError(str(exc).replace("data.max_nodes:", "--max-nodes:")) from None
    info = {**dataset.stats(), "schema": dataset.schema.to_dict(),
            "glg_full_row_rank": _glg_full_row_rank(dataset)}
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_table([info], dataset.name)
        blocks = ", ".join(f"{b['name']}({b['width']})" for b in info["schema"]["blocks"])
        print(f"feature schema: {blocks}; node type block: {info['schema']['type_block']}")
        print(f"GLG's closed forms (Props. 3, 5, 6) need X of full row rank: {info['glg_full_row_rank']} of "
              f"{info['graphs']} graphs have it")
    return 0


def _glg_full_row_rank(dataset) -> int:
    """How many graphs' node features have full row rank (N <= D and independent rows), the
    condition under which GLG's Props. 3, 5 and 6 recover the adjacency exactly."""
    from attacks.glg.analytic import rank_conditions

    return sum(rank_conditions(g.x.double())["x_full_row_rank"] for g in dataset.graphs)


def _import_plugins(plugins: list[str]) -> None:
    from fedgraph_sim.plugins import load_plugins

    try:
        load_plugins(plugins)
    except ConfigError as exc:  # the option's name on this command line
        raise ConfigError(str(exc).replace("plugins:", "--plugin:", 1)) from None


def attack_catalogue(plugins: list[str]) -> list[dict]:
    """Every registered attack (the package's and the ``plugins``'): name, paper, what it needs
    from the threat model, its batch output, its parameters' defaults and its listing's words."""
    import dataclasses

    from fedgraph_sim import registry

    _import_plugins(plugins)
    out = []
    for name in registry.attacks:
        cls = registry.attacks.get(name)
        needs = [f.name for f in dataclasses.fields(cls.requires)
                 if f.name not in ("tasks", "model") and getattr(cls.requires, f.name)]
        params = {f.name: getattr(cls.Params(), f.name) for f in dataclasses.fields(cls.Params)}
        out.append({"name": name, "paper": cls.paper, "cited_as": cls.cited_as or cls.paper, "requires": needs,
                    "tasks": list(cls.requires.tasks), "model": cls.requires.model,
                    "batch_output": cls.batch_output, "params": params,
                    "threat_model": cls.threat_model, "recovers": cls.recovers, "defaults": cls.defaults_note})
    return out


def attack_table(rows: list[dict]) -> str:
    """The markdown table of ``rows`` (:func:`attack_catalogue`), as the README shows it."""
    lines = ["| name | paper | threat model | recovers | defaults |", "|---|---|---|---|---|"]
    lines += [f"| `{r['name']}` | {r['cited_as']} | {r['threat_model'] or '-'} | {r['recovers'] or '-'} | "
              f"{r['defaults']} |" for r in rows]
    return "\n".join(lines)


def readme_lists(plugins: list[str]) -> dict[str, str]:
    """The README's generated parts, by the marker they stand between: the attack table and the
    defense and metric lists, from the registries and the metric catalogue (``plugins`` imported
    first). ``fedgraph-sim attacks --markdown`` prints them; ``tests/unit/test_readme.py`` keeps
    the README equal to them."""
    from fedgraph_sim import registry
    from fedgraph_sim.metrics import all_metrics

    attacks = attack_table(attack_catalogue(plugins))
    defenses = "Defenses (`defenses:` entries, stacked in order): " + ", ".join(
        f"`{name}`" for name in registry.defenses) + "; secure aggregation is `threat.secure_aggregation`."
    metrics = "Metrics (in every row, under each alignment, with the prior and the gain): " + ", ".join(
        f"`{m.name}` ({m.short})" for m in all_metrics()) + "."
    return {"attacks": attacks, "defenses": defenses, "metrics": metrics}


def write_generated(path: Path, parts: dict[str, str]) -> None:
    """Replace each generated part of the markdown file ``path`` (the text between
    ``<!-- name: fedgraph-sim attacks --markdown -->`` and ``<!-- /name -->``) with ``parts[name]``."""
    import re

    if not path.is_file():
        raise ConfigError(f"--write: {path} is not a file (the markdown file whose generated parts to fill)")
    text = path.read_text(encoding="utf-8")
    for name, part in parts.items():
        block = re.compile(rf"(<!-- {name}: fedgraph-sim attacks --markdown -->\n).*?(\n<!-- /{name} -->)", re.S)
        if not block.search(text):
            raise ConfigError(f"--write: {path} has no '<!-- {name}: fedgraph-sim attacks --markdown -->' ... "
                              f"'<!-- /{name} -->' block to fill")
        text = block.sub(lambda m: m.group(1) + part + m.group(2), text)
    path.write_text(text, encoding="utf-8")


def cmd_attacks(args) -> int:
    from rich.table import Table

    from fedgraph_sim.report.terminal import console

    rows = attack_catalogue(args.plugin)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if args.write:
        write_generated(Path(args.write), readme_lists(args.plugin))
        return 0
    if args.markdown:
        for name, text in readme_lists(args.plugin).items():
            print(f"<!-- {name}: fedgraph-sim attacks --markdown -->\n{text}\n<!-- /{name} -->\n")
        return 0
    table = Table(title="attacks (attack.names; variants as name@label)")
    for column in ("name", "paper", "requires", "parameters (defaults)"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["paper"], ", ".join(row["requires"]) or "-",
                      ", ".join(f"{k}={v}" for k, v in row["params"].items()) or "-")
    console().print(table)
    return 0


def metric_catalogue(plugins: list[str]) -> list[dict]:
    """Every metric (the package's, then the ``plugins'``): name, header, direction, the part of the
    graph it scores, whether failures count 0 in its summary, where it is shown by default."""
    from fedgraph_sim.metrics import all_metrics

    _import_plugins(plugins)
    return [{"name": m.name, "header": m.short, "better": m.better, "part": m.part,
             "counts_failures": m.counts_failures, "shown": list(m.shown)} for m in all_metrics()]


def cmd_metrics(args) -> int:
    rows = metric_catalogue(args.plugin)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table([{**r, "shown": ", ".join(r["shown"]) or "-"} for r in rows],
                     "metrics (columns <alignment>_<name>, each with prior_ and gain_)", tuple(rows[0]))
    return 0


def cmd_report(args) -> int:
    from fedgraph_sim.report import render

    report = render(args.directory)
    print(f"report: {report.path} ({len(report.figures)} figures"
          + (f", {len(report.skipped)} skipped: see the report" if report.skipped else "") + ")")
    if args.html:
        from fedgraph_sim.report.html import markdown_page

        page = report.path.with_suffix(".html")
        page.write_text(markdown_page(report.path.read_text(), report.path.parent).render())
        print(f"page: {page} (self-contained: figures inline)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedgraph-sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in COMMANDS.items():  # parsed by their own modules (main dispatches them)
        sub.add_parser(name, help=text, add_help=False)
    p = sub.add_parser("datasets", help="list every dataset that loads here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_datasets)
    p = sub.add_parser("info", help="stats and feature schema of one dataset")
    p.add_argument("name")
    p.add_argument("--task", help="MoleculeNet label task (index or column name)")
    p.add_argument("--max-nodes", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("attacks", help="every registered attack with its paper, needs and defaults")
    p.add_argument("--plugin", action="append", default=[], help="a plugin module to import first (repeatable)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true",
                   help="the README's generated parts: the attack table, the defense and metric lists")
    p.add_argument("--write", metavar="FILE", help="fill FILE's generated parts in place (make docs: README.md)")
    p.set_defaults(func=cmd_attacks)
    p = sub.add_parser("metrics", help="every metric with its header, direction and where it is shown")
    p.add_argument("--plugin", action="append", default=[], help="a plugin module to import first (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_metrics)
    p = sub.add_parser("report", help="tables and figures of a run or sweep directory")
    p.add_argument("directory", help="a run directory (runs/...) or a sweep directory")
    p.add_argument("--html", action="store_true", help="also report.html: one self-contained page, figures inline")
    p.set_defaults(func=cmd_report)
    return parser


def subcommands() -> list[str]:
    """Every subcommand's name, as the parser lists them (``--help`` shows them in this order)."""
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


COMMANDS = {"run": "run one federation and score its attacks",
            "sweep": "run a defense-vs-attack sweep (or resume one)",
            "reproduce": "run a paper table's cases and write ours beside the paper's",
            "deploy": "run one federation on Flower's Deployment Engine (SuperLink + SuperNodes)",
            "audit": "does my federation leak, and what stops it? one command, one page (audit.html)"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        defer_startup_signals()  # while the command imports; its own main takes over from there
        module = importlib.import_module(f"fedgraph_sim.runtime.commands.{argv[0]}")
        startup_checkpoint()
        return module.main(argv[1:])
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, RunFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
