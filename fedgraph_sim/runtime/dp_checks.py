"""The audit's check of every DP claim it meets: for the federation as configured and each what-if
setting whose defense claims an epsilon, one more federation of the same config with canaries
(``fedgraph_sim.dp_audit``), whose one-run lower bound the page shows beside the claim.

Which canaries: a claim against the server (``dp_sgd``, ``dp_gradients``' Gaussian mechanism,
``flwr_local_dp``) is checked with gradient canaries in the clients' data, Steinke, Nasr and
Jagielski's white-box canaries, which test the defense's clipping, noise and accountant; the
client-level claim of Flower's central DP for the released model with canary clients (Andrew et
al., ICLR 2024). Adding canaries changes the clients' data (the canary federation's own claim,
which it is tested against, is in its ``canaries.json``), never the federation as configured.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from fedgraph_sim.dp_audit.canaries import canary_kind
from fedgraph_sim.errors import ConfigError

COUNT = 1000  # canaries per check (the one-run bound's ceiling at delta 1e-5: about 4.9)


def _canary_tree(tree: dict, kind: str) -> dict:
    """``tree`` with as many canaries as the check takes (gradient canaries: at most one per weight
    of the model's largest weight tensor) and no attacks."""
    from fedgraph_sim.dp_audit.canaries import largest_weight
    from fedgraph_sim.models import build_model
    from fedgraph_sim.runtime.session import resolve

    count = COUNT
    if kind == "gradient":
        config, scenario = resolve(tree)
        ds = scenario.dataset
        model = build_model(config.model, ds.num_features, ds.num_classes)
        count = min(COUNT, largest_weight([(n, tuple(p.shape)) for n, p in model.named_parameters()])[1])
    return {**tree, "attack": {"names": []}, "canaries": {"count": count, "kind": kind}}


def check_claims(settings: dict[str, dict], out_dir: Path, deadline: float) -> dict[str, dict]:
    """For each ``label -> config tree`` whose defense claims an epsilon, the canary federation's
    ``canaries.json`` (kept in ``out_dir/<n>/`` and reused on resume), or ``{"not_measured": why}``."""
    from fedgraph_sim.runtime.session import Session, resolve
    from fedgraph_sim.runtime.simulation import run

    results = {}
    for number, (label, tree) in enumerate(settings.items()):
        kind = canary_kind(tree)
        if kind is None:
            continue
        run_dir = Path(out_dir) / str(number)
        if (run_dir / "canaries.json").is_file():
            results[label] = json.loads((run_dir / "canaries.json").read_text())
            continue
        if time.time() > deadline:
            results[label] = {"not_measured": "the wall budget ended first"}
            continue
        try:
            config, scenario = resolve(_canary_tree(tree, kind))
            run(config, session=Session(config, scenario=scenario), run_dir=run_dir, engine="in_process")
            results[label] = json.loads((run_dir / "canaries.json").read_text())
        except ConfigError as exc:
            results[label] = {"not_measured": str(exc)}
        except Exception as exc:  # a failed check is not evidence either way: said, not raised
            results[label] = {"not_measured": f"the canary federation failed: {type(exc).__name__}: {exc}"}
    return results
