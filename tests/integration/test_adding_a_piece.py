"""Adding a piece is one module: a throwaway attack, defense and metric, each one file dropped into
its package in a copy of the repository, with no other file edited, are found by the CLI's
listings, fill the README's generated tables (``fedgraph-sim attacks --write README.md``, which the
README test then accepts), are checked by the contract tests, and reach a run's rows and its
report's tables."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TREE = ("pyproject.toml", "README.md", "fedgraph_sim", "clients", "server", "attacks", "experiments", "tests")

ATTACK = '''"""``newcomer``: a test's attack. Paper: none. Threat model: the node-count hint. Recovers:
nothing from the update, a ring of the hinted size. Defaults: none."""

import torch

from attacks.base import Attack, Reconstruction, Requirements, register


@register
class Newcomer(Attack):
    name = "newcomer"
    paper = "nobody, a newcomer's"
    cited_as = "a newcomer's"
    threat_model = "node count"
    recovers = "a ring"
    requires = Requirements(node_count=True, model="none")

    def reconstruct(self, update, knowledge, ctx):
        out = []
        for n in knowledge.node_counts:
            idx = torch.arange(n)
            adj = torch.zeros(n, n)
            if n > 2:
                adj[idx, (idx + 1) % n] = adj[(idx + 1) % n, idx] = 1.0
            out.append(Reconstruction(x=torch.zeros(n, knowledge.num_features), adj=adj, num_nodes=n, label=0))
        return out
'''
DEFENSE = '''"""``newcomer_defense``: a test's defense (no paper): it halves the update."""

from clients.defenses.base import Defense
from fedgraph_sim import registry


@registry.defenses.register
class NewcomerDefense(Defense):
    name = "newcomer_defense"

    def apply(self, update, rng):
        return {k: v / 2 for k, v in update.items()}
'''
METRIC = '''"""``newcomer_metric``: a test's metric, one minus the error of the edge density."""

from fedgraph_sim.metrics.catalogue import Metric, register_metric


def density_match(pair) -> float:
    return 1.0 - abs(float((pair.adj_hat >= 0.5).mean()) - float(pair.adj.mean()))


register_metric(Metric("newcomer_metric", "newcomer", "higher", "structure", density_match, shown=("report",)))
'''


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The repository's code and tests with the three modules added, nothing else touched."""
    root = tmp_path_factory.mktemp("repo")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in TREE:
        src = ROOT / name
        shutil.copytree(src, root / name, ignore=skip) if src.is_dir() else shutil.copy2(src, root / name)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    (root / "attacks" / "newcomer.py").write_text(ATTACK)
    (root / "clients" / "defenses" / "newcomer_defense.py").write_text(DEFENSE)
    (root / "fedgraph_sim" / "metrics" / "newcomer_metric.py").write_text(METRIC)
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert {p for p in after if before.get(p) != after[p]} == {
        Path("attacks/newcomer.py"), Path("clients/defenses/newcomer_defense.py"),
        Path("fedgraph_sim/metrics/newcomer_metric.py")}
    return root


def in_copy(copy: Path, *args: str, timeout: float = 900) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def test_the_listings_and_the_generated_readme_tables_find_them(copy):
    assert "newcomer" in in_copy(copy, "-m", "fedgraph_sim", "attacks")
    assert '"name": "newcomer_metric"' in in_copy(copy, "-m", "fedgraph_sim", "metrics", "--json")
    in_copy(copy, "-m", "fedgraph_sim", "attacks", "--write", "README.md")
    readme = (copy / "README.md").read_text()
    assert "| `newcomer` | a newcomer's | node count | a ring | - |" in readme
    assert "`newcomer_defense`" in readme and "`newcomer_metric` (newcomer)" in readme
    out = in_copy(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_readme.py")
    assert " passed" in out and "failed" not in out


def test_the_contract_tests_check_them(copy):
    out = in_copy(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "newcomer", "-rA",
                  "tests/unit/test_attack_contract.py", "tests/unit/test_defense_contract.py")
    ran = [line for line in out.splitlines() if line.startswith("PASSED")]
    assert any("test_attack_contract.py" in line and "[newcomer-graph]" in line for line in ran), out[-2000:]
    assert any("test_defense_contract.py" in line and "[newcomer_defense-graph]" in line for line in ran), out[-2000:]
    assert any("test_defense_contract.py" in line and "[newcomer_defense-node]" in line for line in ran), out[-2000:]


def test_a_run_scores_them_and_the_report_tables_show_them(copy, tmp_path):
    script = ("import json, sys\n"
              "from fedgraph_sim.config import load_config\n"
              "from fedgraph_sim.runtime.simulation import run\n"
              "from fedgraph_sim.runtime.in_process_backend import IN_PROCESS\n"
              "config = load_config(None, sys.argv[1:])\n"
              "print(json.dumps({'run_dir': str(run(config, engine=IN_PROCESS).run_dir)}))\n")
    out = in_copy(copy, "-c", script, "data.dataset=synthetic", "federation.num_clients=2", "federation.rounds=1",
                  "attack.names=[newcomer, random]", "defenses=[{name: newcomer_defense}]",
                  f"output.dir={tmp_path}")
    run_dir = Path(json.loads(out.splitlines()[-1])["run_dir"])
    in_copy(copy, "-m", "fedgraph_sim", "report", str(run_dir))
    report = (run_dir / "report.md").read_text()
    table = report[report.index("| attack | defense | graphs |"):]
    header = table.splitlines()[0]
    assert header.rstrip(" |").endswith("| newcomer"), header  # the metric's column, after the package's
    assert "| newcomer | newcomer_defense | 2 |" in table, table[:2000]  # the attack's row, under the defense
