"""A user's own PyG model through the federation and the audit: PyG's GIN example
(``docs/examples/mutag_gin``) trained by 4 clients, every attack run or said not to apply, with
its reason; no error rows. MUTAG when FEDGRAPH_DATA_ROOT is set (CI), synthetic graphs otherwise."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.rows.store import read_rows
from fedgraph_sim.runtime.simulation import run

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "docs/examples/mutag_gin/gin.yaml"
DATA = [] if os.environ.get("FEDGRAPH_DATA_ROOT") else ["data.dataset=synthetic", "data.options={num_graphs: 40}"]


@pytest.mark.usefixtures("local_ray")
def test_pygs_gin_example_trains_and_every_attack_runs_or_says_why(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the example names its model file from the repository's root
    config = load_config(EXAMPLE, [*DATA, "attack.time_budget=5", f"output.dir={tmp_path}"])
    rows = read_rows(run(config).run_dir)
    by_attack = {}
    for r in rows:
        by_attack.setdefault(r["attack"], []).append(r)
    assert set(by_attack) == set(config.attack.names) and all(len(v) == 4 for v in by_attack.values())
    assert not [r for r in rows if r["status"] in ("error", "crashed")], [r["message"] for r in rows]
    for name in ("random", "dlg", "inverting_gradients", "majority_type"):
        assert any(r["status"] == "ok" for r in by_attack[name]), by_attack[name][0]["message"]
    assert all(r["status"] == "not_applicable" and "(BatchNorm) normalises node states" in r["message"]
               for r in by_attack["grain"])


@pytest.mark.parametrize("app", [[], ["federation.client_app=docs/examples/mutag_gin/client_app.py:app"]],
                         ids=["bench_clients", "users_client_app"])
def test_the_audit_of_pygs_gin_names_what_applied_and_why_the_rest_did_not(tmp_path, app):
    out = tmp_path / "audit"
    done = subprocess.run([sys.executable, "-m", "fedgraph_sim", "audit", "--config", EXAMPLE, "--out", str(out),
                           "--seconds", "5", "--jobs", "1", *DATA, *app], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    facts = json.loads((out / "audit.json").read_text())
    if app:  # the user's clients apply their own defenses: no what-if ladder, and the page says why
        assert "your own ClientApp" in facts["what_if_note"]
    attacks = facts["attacks"]
    assert attacks["dlg"]["applies"] and attacks["random"]["applies"]
    assert not attacks["grain@ext"]["applies"] and "BatchNorm" in attacks["grain@ext"]["reason"]
    assert not attacks["graphdlg"]["applies"] and "a user's model (Net)" in attacks["graphdlg"]["reason"]
    assert "grain@ext" in (out / "audit.html").read_text()


# the columns a run stamps on its rows (its name, its clock), which two runs of one federation do not share
STAMPS = ("run", "seconds")


def stable(rows: list[dict]) -> list[dict]:
    keep = [{k: v for k, v in r.items() if k not in STAMPS and not k.startswith("info_seconds")} for r in rows]
    return sorted(keep, key=lambda r: (r["round"], r["client"], r["attack"], r.get("batch_index") or 0))


def test_the_users_own_flower_app_and_fedgraph_sim_run_write_equal_rows(tmp_path, monkeypatch):
    """The example's ServerApp (FedAvg watched by curious()) and ClientApp (plain PyTorch) against
    fedgraph-sim run of the same config: the same rows, seed for seed."""
    import importlib
    import shutil

    import yaml
    from flwr.simulation import run_simulation

    from fedgraph_sim.runtime import ray_backend
    from fedgraph_sim.runtime.in_process_backend import ENGINE, IN_PROCESS, SECTION

    app = tmp_path / "app"
    shutil.copytree(ROOT / "docs" / "examples" / "mutag_gin", app)
    spec = yaml.safe_load((app / "gin.yaml").read_text())
    # a budget DLG finishes within (about 5 s here): a timed-out call's rows depend on the machine's load
    spec["attack"].update(names=["random", "dlg", "majority_type"], time_budget=120)
    spec["output"] = {"dir": str(tmp_path / "app_runs")}
    if DATA:
        spec["data"] = {"dataset": "synthetic", "options": {"num_graphs": 40}}
    (app / "gin.yaml").write_text(yaml.safe_dump(spec))
    monkeypatch.syspath_prepend(str(app))
    for name in ("gin", "server_app", "client_app"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    server_app, client_app = importlib.import_module("server_app"), importlib.import_module("client_app")

    ray_backend.install()
    run_simulation(server_app=server_app.app, client_app=client_app.app, num_supernodes=4,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, SECTION: {ENGINE: IN_PROCESS}})
    (app_run,) = (tmp_path / "app_runs").iterdir()
    assert {"results.parquet", "summary.csv", "config.yaml"} <= {p.name for p in app_run.iterdir()}

    config = load_config(app / "gin.yaml", [f"output.dir={tmp_path / 'bench_runs'}"])
    bench = run(config, engine=IN_PROCESS)
    ours, theirs = stable(read_rows(bench.run_dir)), stable(read_rows(app_run))
    assert len(ours) == 4 * 3 and [r["status"] for r in ours] == [r["status"] for r in theirs]
    distances = [r["info_gradient_distance"] for r in ours if r["attack"] == "dlg"]
    assert len(distances) == 4 and all(d > 0 for d in distances)  # DLG ran on each client's gradient
    assert ours == theirs


def test_fedgraph_sim_run_with_the_users_client_app_writes_the_bench_clients_rows(tmp_path):
    """``federation.client_app``: the user's ClientApp in place of the bench's clients, under the
    bench's server; it takes the run's config from the server (``Federation.for_message``)."""
    import sys

    from fedgraph_sim.runtime.in_process_backend import IN_PROCESS

    overrides = [*DATA, "attack.names=[random, dlg]", "attack.time_budget=120"]  # DLG ends first: equal rows
    bench = run(load_config(ROOT / EXAMPLE, [*overrides, f"output.dir={tmp_path / 'bench'}"]), engine=IN_PROCESS)
    client_app = ROOT / "docs/examples/mutag_gin/client_app.py"
    config = load_config(ROOT / EXAMPLE, [*overrides, f"output.dir={tmp_path / 'user'}",
                                          f"federation.client_app={client_app}:app"])
    user = run(config)
    (module,) = [m for name, m in sys.modules.items() if name.startswith("fedgraph_user_client_app_")]
    assert module.federation.cache_info().hits >= 7  # the user's train() ran every turn but the first
    assert stable(read_rows(user.run_dir)) == stable(read_rows(bench.run_dir))
