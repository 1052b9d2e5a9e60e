"""The server side of one run, built and validated before anything is written: the attacks, the
defenses (checked against every client's turn), the scenario, the attacker's knowledge, and, once
a run directory is open, the attack runner that observes each round."""

from __future__ import annotations

import logging
from pathlib import Path

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import RunConfig, defense_label, to_yaml
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.results import library_versions, read_rows, summarize, write_summary
from fedgraph_sim.scenario import attacker_knowledge, build_scenario
from fedgraph_sim.utility import evaluate, final_utility, with_utility, write_utility

log = logging.getLogger("fedgraph_sim")


class Session:
    """Everything the server side needs, built and validated before anything is written."""

    def __init__(self, config: RunConfig, run_dir: Path | None = None, progress=None,
                 capture: bool = False) -> None:
        import attacks  # noqa: F401  (registers the attacks)
        from attacks.base import build_attack
        from clients.defenses import ClientTurn, build_defenses

        load_plugins(config.plugins)  # a sweep worker may never have validated this config

        self.config, self.progress, self.capture = config, progress, capture
        self.defenses = build_defenses(config.defenses)
        self.attacks = {name: build_attack(name.split("@")[0], config.attack.params.get(name))
                        for name in config.attack.names}
        for name in config.attack.params:
            if name not in config.attack.names:
                raise ConfigError(f"attack.params.{name}: '{name}' is not in attack.names")
        self.scenario = build_scenario(config)
        train, rounds = config.train, config.federation.rounds
        self.defenses.validate([ClientTurn(len(c), train.batch_size, train.local_steps, rounds)
                                for c in self.scenario.clients])
        self.knowledge = attacker_knowledge(config, self.scenario)
        self.run_dir = None
        self.runner = None
        self.rounds_task = None
        self.strategy = None  # the CuriousFedAvg the ServerApp runs (its timings)
        if run_dir is not None:
            self.open(run_dir)

    def open(self, run_dir: Path) -> None:
        from server.attack_runner import AttackRunner

        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        versions = {"versions": library_versions()}
        (self.run_dir / "config.yaml").write_text(to_yaml(self.config, versions))
        variances = {k: v for k, v in self.defenses.report().items() if "variance" in k}
        if variances:  # the effective noise (DESIGN.md: log the variance)
            log.info("defenses %s: %s", defense_label(self.config.defenses), variances)
        self.runner = AttackRunner(self.config, self.run_dir, self.knowledge, self.attacks, self.progress)
        if self.progress is not None:
            self.rounds_task = self.progress.add_task("rounds", total=self.config.federation.rounds)

    def observer(self, updates) -> None:
        if self.capture and updates:
            from server.attack_runner import is_selected

            CaptureStore(self.run_dir).write(updates[0].round,
                                             [u for u in updates if is_selected(self.config, u)])
        self.runner(updates)
        if self.rounds_task is not None:
            self.progress.advance(self.rounds_task)

    def evaluate(self, server_round: int, arrays):
        """Flower's ``evaluate_fn``: the global model on the held-out test split."""
        from flwr.app import MetricRecord

        from fedgraph_sim.models import GraphClassifier

        test = self.scenario.test
        if len(test) == 0:
            return None
        ds = self.scenario.dataset
        model = GraphClassifier(ds.num_features, ds.num_classes, **self.config.model.model_dump())
        model.load_state_dict(arrays.to_torch_state_dict())
        metrics = evaluate(model, [ds.graphs[i] for i in test], self.config.train.loss)
        write_utility(self.run_dir, server_round, metrics)
        return MetricRecord(metrics)

    def finish(self) -> list[dict]:
        summary = summarize(with_utility(read_rows(self.run_dir), final_utility(self.run_dir)))
        write_summary(self.run_dir, summary)
        return summary
