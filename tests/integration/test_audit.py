"""``fedgraph-sim audit`` end to end on MUTAG with GRAIN's architecture (real data: CI sets
FEDGRAPH_DATA_ROOT): the verdict reports exact reconstructions, at the malicious level too, and how
many crafted updates the clients flagged; the what-if with DP-SGD (noise multiplier 1) reports the
drop and its accuracy cost; the page opens in Chromium without errors;
a finished audit resumed re-renders at once, and ``--fail-on exact`` exits 1."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.browser import Browser

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
# the default round's federation (fedgraph_sim/default_round.yaml), with a test split and 2 rounds
CONFIG = {"name": "audited", "seed": 0,
          "data": {"dataset": "MUTAG", "degree_feature": True, "test_fraction": 0.2},
          "partition": {"alpha": 1.0},
          "federation": {"num_clients": 4, "rounds": 2},
          "train": {"lr": 0.01, "loss": "bce", "batch_size": 1, "local_steps": 1},
          "model": {"conv": "gcn", "layers": 2, "hidden": 300, "conv_bias": False, "last_activation": False,
                    "readout": "mlp", "readout_hidden": [300, 64], "readout_input": "concat_input",
                    "readout_placement": "per_node"}}
VISIBLE = """[...document.querySelectorAll('.verdict')].map(e => {
  const r = e.getBoundingClientRect(); return {text: e.innerText, shown: r.height > 0 && r.bottom <= innerHeight}; })"""


def audit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedgraph_sim", "audit", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


def test_an_audit_reports_exact_reconstructions_and_what_dp_sgd_costs_to_stop_them(tmp_path, data_root):
    (tmp_path / "federation.yaml").write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "audit"
    done = audit("--config", "federation.yaml", "--out", str(out), "--attacks", "grain", "random",
                 "--what-if", "dp_sgd_nm1", "--seconds", "20", "--clients", "4", "--seeds", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    facts = json.loads((out / "audit.json").read_text())
    rounds = facts["levels"]["hints"]["rounds"].values()  # 8 graphs: 4 clients in rounds 1 and 2
    assert any(c["outcome"] == "leaks" for c in rounds)
    assert {c["attack"] for c in rounds if c["outcome"] == "leaks"} <= {"grain", "grain@ext"}  # GRAIN's own setting
    assert facts["attacks"]["random"]["applies"] and facts["levels"]["hints"]["gains"]["grain"]
    own, dp = facts["what_if"]
    assert (own["setting"], dp["setting"]) == ("as configured", "dp_sgd_nm1")
    assert dp["best"]["outcome"] != "leaks" or dp["best"]["exact"] < own["best"]["exact"]  # the drop
    assert dp["accuracy_cost"] is not None and dp["epsilon"] is not None
    assert dp["stop"] in ("stops", "undecided", "leaks", "not measured")  # a stop needs its Fisher test
    malicious = facts["levels"]["malicious"]["rounds"].values()  # the fourth level: crafted weights
    assert any(c["outcome"] == "leaks" and c["attack"] == "grain" for c in malicious)
    caught = facts["caught"]  # 4 clients' updates in rounds 1 and 2, each flagged by its client
    assert caught["updates"] >= 2 and caught["flagged"] == caught["updates"]
    text = (out / "audit.html").read_text()
    assert "graphs rebuilt exactly by grain" in text and "dp_sgd_nm1" in text
    assert "Would the clients catch a malicious server?" in text
    if dp["stops"]:
        assert "stops the exact attacks (rounds 1, 2, 2 seeds) is dp_sgd_nm1: no leak found: 0 of" in text

    with Browser() as browser:
        seen = browser.open(out / "audit.html", VISIBLE)
    (out / "audit.png").write_bytes(seen.screenshot)
    assert seen.errors == [] and seen.images and all(complete and width for complete, width, _ in seen.images)
    assert any("rebuilt exactly" in v["text"] and v["shown"] for v in seen.value)

    again = audit("--resume", str(out), "--fail-on", "exact", cwd=tmp_path)  # nothing left to run
    assert again.returncode == 1, again.stderr[-2000:]
    assert "--fail-on exact: holds" in " ".join(again.stdout.split())


# PyG's TU example as users write it (one-hot atom types, no degree block; a 3-layer GIN with
# biases, ReLU after every layer, sum pooling and an MLP head), federated as above
PYG_GIN = {**CONFIG, "name": "pyg_gin", "data": {"dataset": "MUTAG", "test_fraction": 0.2},
           "train": {"lr": 0.01, "batch_size": 1, "local_steps": 1},
           "model": {"conv": "gin", "layers": 3, "hidden": 64, "pool": "sum", "readout": "mlp"}}


def test_an_audit_of_pyg_s_gin_runs_grain_beyond_its_paper_and_says_why_paper_mode_does_not_apply(tmp_path,
                                                                                               data_root):
    (tmp_path / "federation.yaml").write_text(yaml.safe_dump(PYG_GIN))
    out = tmp_path / "audit"
    done = audit("--config", "federation.yaml", "--out", str(out), "--attacks", "grain", "grain@ext",
                 "--no-what-if", "--seconds", "20", "--clients", "4", "--seeds", "1", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:] + done.stdout[-3000:]
    facts = json.loads((out / "audit.json").read_text())
    assert facts["attacks"]["grain@ext"]["applies"]
    assert not facts["attacks"]["grain"]["applies"] and "other_convs=true" in facts["attacks"]["grain"]["reason"]
    rounds = facts["levels"]["hints"]["rounds"].values()
    assert any(c["attack"] == "grain@ext" and c["outcome"] == "leaks" for c in rounds)
    assert "grain@ext" in (out / "audit.html").read_text()
    for cell in facts["levels"]["malicious"]["rounds"].values():  # the crafting needs GCN layers
        assert cell["outcome"] == "not measured" and "separated_clients needs GCN layers" in cell["reason"]
