"""The README's attack table and its defense and metric lists are what the registries and the
metric catalogue say (``fedgraph-sim attacks --markdown`` prints them), and a plugin's attack,
defense and metric join them and the listings without any edit elsewhere."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path


README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"<!-- (\w+): fedgraph-sim attacks --markdown -->\n(.*?)\n<!-- /\1 -->", re.S)

PLUGIN = '''
from dataclasses import dataclass

from attacks import Attack, register
from clients.defenses.base import Defense
from fedgraph_sim import registry
from fedgraph_sim.metrics import Metric, register_metric


@register
class Throwaway(Attack):
    name = "throwaway_attack"
    paper = "nobody, never"
    cited_as = "a test's plugin"
    threat_model = "whatever the server sees"
    recovers = "nothing"

    @dataclass
    class Params:
        steps: int = 3

    def reconstruct(self, update, knowledge, ctx):
        raise NotImplementedError


@registry.defenses.register
class ThrowawayDefense(Defense):
    name = "throwaway_defense"


register_metric(Metric("throwaway_metric", "throwaway", "higher", "nodes", lambda pair: 0.5, shown=("report",)))
'''


def test_the_readme_shows_what_the_registries_hold():
    # in a fresh process: plugins other tests registered in this one are not the package's
    markdown = subprocess.run([sys.executable, "-m", "fedgraph_sim", "attacks", "--markdown"], cwd=README.parent,
                              capture_output=True, text=True, check=True).stdout
    shown = dict(BLOCK.findall(README.read_text()))
    generated = dict(BLOCK.findall(markdown))
    assert set(shown) == set(generated) == {"attacks", "defenses", "metrics"}
    for name, text in generated.items():
        assert shown[name] == text, f"README's {name} differ from the registry: paste `fedgraph-sim attacks --markdown`"


def test_a_plugins_attack_defense_and_metric_join_the_listings(tmp_path):
    # in a process of its own: the plugin's pieces stay out of this one's registries. One process
    # runs every listing through the CLI's entry point (one start-up of torch, not six).
    (tmp_path / "throwaway_plugin.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(README.parent)]), "COLUMNS": "200"}
    listings = [["attacks", "--markdown"], ["attacks"], ["attacks", "--json"], ["metrics"], ["metrics", "--json"]]
    script = ("import contextlib, io, json, sys\n"
              "from fedgraph_sim.runtime.cli import main\n"
              "printed = []\n"
              "for args in json.loads(sys.argv[1]):\n"
              "    out = io.StringIO()\n"
              "    with contextlib.redirect_stdout(out):\n"
              "        assert main([args[0], '--plugin', 'throwaway_plugin', *args[1:]]) == 0\n"
              "    printed.append(out.getvalue())\n"
              "print(json.dumps(printed))\n")
    done = subprocess.run([sys.executable, "-c", script, json.dumps(listings)], env=env, capture_output=True,
                          text=True, check=True)
    shown = dict(zip((" ".join(args) for args in listings), json.loads(done.stdout.splitlines()[-1])))

    def listing(command: str, *flags: str) -> str:
        return shown[" ".join([command, *flags])]

    markdown = listing("attacks", "--markdown")
    assert "| `throwaway_attack` | a test's plugin | whatever the server sees | nothing | - |" in markdown
    assert "`throwaway_defense`" in markdown and "| `grain` |" in markdown
    assert "`adj_mse` (adj MSE), " in markdown and ", `throwaway_metric` (throwaway)." in markdown  # last
    assert "throwaway_attack" in listing("attacks") and '"name": "throwaway_attack"' in listing("attacks", "--json")
    assert "throwaway_metric" in listing("metrics") and '"name": "throwaway_metric"' in listing("metrics", "--json")
