"""Every registered defense keeps the interface's contract. The list comes from the registry and
each defense's own declarations: it is built from its ``contract_params``, for every model task it
serves (``tasks``), on a FedSGD turn (a FedAvg turn for those that need weight replies), where it
must plan, build its server half, and return an update of the undefended one's tensors and shapes,
finite, the same again from the same generator. So a new defense is checked without editing this
file."""

from __future__ import annotations

import inspect
import math
from functools import lru_cache

import pytest
import torch

from clients.defenses import build_defenses
from clients.defenses.base import ClientTurn, Defense
from clients.training import defended_update
from fedgraph_sim import registry
from fedgraph_sim.data import load_dataset, make_synthetic
from fedgraph_sim.models import build_model

NAMES = registry.defenses.names()
CASES = [pytest.param(name, task, id=f"{name}-{task}") for name in NAMES for task in registry.defenses.get(name).tasks]


@lru_cache(maxsize=2)
def victim_data(task: str):
    if task == "node":
        return load_dataset("random_graph_balls", num_subgraphs=4, graph_nodes=120, subgraph_nodes=6, features=8,
                            labelled="all", seed=0)
    return make_synthetic(num_graphs=8, min_nodes=6, max_nodes=8, seed=2)


def turn_of(name: str, task: str, seed: int = 0) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], object]:
    """One client's turn under the defense alone: the defended update, the undefended one, the stack."""
    cls = registry.defenses.get(name)
    data = victim_data(task)
    steps = 2 if (cls.reply_mod or cls.weight_replies) else 1  # those act on FedAvg's replied weights
    batches = [list(data.graphs[2 * i:2 * i + 2]) for i in range(steps)]
    turn = ClientTurn(partition_size=len(data.graphs), batch_size=2, local_steps=steps, rounds=2, round=1)

    def update(entries):
        stack = build_defenses(entries, task=task)
        stack.validate([turn])
        stack.begin(turn, {})
        torch.manual_seed(0)
        model = build_model({"task": task}, data.schema.width, 2)
        out, _ = defended_update(model, batches, stack, torch.Generator().manual_seed(seed), lr=0.1)
        return out, stack

    defended, stack = update([{"name": name, **cls.contract_params}])
    plain, _ = update([])
    return defended, plain, stack


@pytest.mark.parametrize("name", NAMES)
def test_the_defense_declares_its_paper_and_rules(name):
    cls = registry.defenses.get(name)
    assert issubclass(cls, Defense) and cls.name == name
    assert (inspect.getmodule(cls).__doc__ or "").strip(), f"{name}: its module docstring names its paper"
    assert cls.tasks and set(cls.tasks) <= {"graph", "node"}


@pytest.mark.parametrize("name, task", CASES)
def test_a_turn_under_the_defense_keeps_the_updates_shapes_and_is_reproducible(name, task):
    defended, plain, stack = turn_of(name, task)
    assert set(defended) == set(plain) and all(defended[k].shape == plain[k].shape for k in plain)
    assert all(torch.isfinite(v).all() for v in defended.values())
    again, _, _ = turn_of(name, task)
    assert all(torch.equal(again[k], defended[k]) for k in defended), f"{name}: another update from the same seed"
    report = stack.report()
    assert all(isinstance(k, str) and isinstance(v, (int, float)) and not math.isinf(v) for k, v in report.items())
    stack.check_server(2)  # its server half (if any) builds around a Flower strategy
    assert len(stack.mods()) == int(registry.defenses.get(name).reply_mod)
