"""The server side of one run, built and validated before anything is written.

:func:`resolve` and :class:`Session` are the one validation path of runs, sweeps and
reproductions. ``resolve`` checks a config tree (schema, cross-field rules, plugins), builds the
scenario (data, partition, splits) and, for the one-victim-graph-per-round reproductions, derives
``federation.rounds`` from the victim's partition by validating the tree again with it: a
validated config is never changed afterwards. ``Session`` then builds what the server needs, each
piece checked: the attacks and their parameters, the defenses (planned against every client's
turn), the attacker's knowledge, and, once a run directory is open, the attack pipeline: the
server's :class:`~server.attack_runner.AttackRunner` feeding the
:class:`~fedgraph_sim.evaluation.Evaluator`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from pathlib import Path

from fedgraph_sim.capture import CaptureStore
from fedgraph_sim.config import RunConfig, config_hash, defense_label, merge_tree, to_yaml, validate_config
from fedgraph_sim.errors import ConfigError, DiskFull, RunFailed
from fedgraph_sim.evaluation import Evaluator, Prior, ThreatGrants
from fedgraph_sim.metrics import PRIORS
from fedgraph_sim.models import evaluate
from fedgraph_sim.plugins import load_plugins
from fedgraph_sim.provenance import provenance
from fedgraph_sim.rows.statistics import summarize
from fedgraph_sim.rows.store import RESULTS_JSONL, read_rows, seal
from fedgraph_sim.rows.summary_csv import write_summary
from fedgraph_sim.runtime.stopping import StopRequest
from fedgraph_sim.scenario import Scenario, attacker_knowledge, build_scenario, check_model_fits
from fedgraph_sim.threat import AttackerKnowledge
from fedgraph_sim.utility import final_utility, with_utility, write_utility

log = logging.getLogger("fedgraph_sim")


def resolve(tree: dict, *, victim_graphs: int | None = None,
            scenario: Scenario | None = None) -> tuple[RunConfig, Scenario]:
    """Validate a config tree and build its scenario. With ``victim_graphs``, ``federation.rounds``
    becomes ``min(victim_graphs, client 0's partition size)`` (one victim graph per FedSGD round)
    and the tree is validated again with it. ``scenario`` reuses one built for the same data and
    seed."""
    config = validate_config(copy.deepcopy(tree))
    scenario = scenario or build_scenario(config)
    check_model_fits(config, scenario)
    if victim_graphs is not None:
        rounds = min(int(victim_graphs), len(scenario.clients[0]))
        config = validate_config(merge_tree(copy.deepcopy(tree), {"federation": {"rounds": rounds}}))
    return config, scenario


def build_attacks(config: RunConfig) -> dict:
    """Every attack of ``attack.names`` built with its ``attack.params`` (by row name)."""
    from attacks.base import build_attack

    for name in config.attack.params:
        if name not in config.attack.names:
            raise ConfigError(f"attack.params.{name}: '{name}' is not in attack.names")
    return {name: build_attack(name, config.attack.params.get(name))
            for name in config.attack.names}


def build_priors(config: RunConfig) -> dict[str, Prior]:
    """The gradient-free priors the metric catalogue compares with, as the evaluator calls them."""
    from attacks.base import AttackContext, Budget, build_attack

    def prior(attack) -> Prior:
        return lambda update, knowledge, seed: attack.reconstruct(
            update, knowledge, AttackContext(seed=seed, budget=Budget(config.attack.time_budget)))

    return {name: prior(build_attack(name)) for name in PRIORS}


def attack_pipeline(config: RunConfig, attacks: dict, knowledge: AttackerKnowledge, run_dir: Path,
                    progress=None, audit_dir: Path | None = None, extra_columns: dict | None = None,
                    boundary=None):
    """The server's attack runner, handing every outcome to an evaluator writing ``run_dir``; its
    workers behind ``boundary`` (default ``attack.boundary``'s), which hides both directories too."""
    from server.attack_runner import AttackRunner
    from server.boundary import boundary_for

    evaluator = Evaluator(config, run_dir, knowledge, build_priors(config), audit_dir, extra_columns)
    if not config.threat.aux_graphs:  # the priors keep them: a prior gets every advantage
        knowledge = dataclasses.replace(knowledge, aux_graphs=(), aux_scenario="none")
    grants = ThreatGrants(config.threat, evaluator.audit, knowledge)
    boundary = (boundary or boundary_for(config)).hiding(run_dir, audit_dir)
    return AttackRunner(config, attacks, knowledge, grants, evaluator, progress, boundary)


def write_canary_audit(run_dir: Path, config: RunConfig, scorer) -> dict:
    """``canaries.json``: the DP audit's guesses, its epsilon lower bound and the claim beside it
    (the ground truth of which canaries were included is read here, after the run, and only here)."""
    from fedgraph_sim.dp_audit.canaries import included

    spec = config.canaries
    outcome = scorer.report(included(spec.count, spec.seed), spec.confidence, spec.delta)
    (Path(run_dir) / "canaries.json").write_text(json.dumps(outcome, indent=1))
    claim = outcome["epsilon_claimed"]
    line = (f"DP audit: epsilon >= {outcome['epsilon_lower_bound']:.2f} at delta {outcome['delta']:g} "
            f"(f-DP, as a Gaussian mechanism: {outcome['gdp_epsilon_lower_bound']:.2f}) "
            f"({outcome['correct']} of {outcome['guesses']} guesses right, {outcome['count']} {spec.kind} canaries, "
            f"{outcome['confidence']:.0%} confidence); claimed: {'none' if claim is None else f'{claim:.3g}'}")
    if outcome["failed_turns"]:
        line += f"; {outcome['failed_turns']} client turns failed, their updates unseen"
    if outcome["claim_refuted"]:
        log.error("%s. THE CLAIM IS REFUTED: the defense or its accountant is wrong", line)
    else:
        log.warning(line)  # the run's headline, as a leak's verdict is
    return outcome


class Session:
    """Everything the server side needs, built and validated before anything is written."""

    def __init__(self, config: RunConfig, run_dir: Path | None = None, progress=None,
                 capture: bool = False, scenario: Scenario | None = None) -> None:
        from clients.defenses import ClientTurn, build_defenses
        from server.boundary import boundary_for

        load_plugins(config.plugins)  # a sweep worker may never have validated this config

        self.config, self.progress, self.capture = config, progress, capture
        self.defenses = build_defenses(config.defenses, config.model.task)
        self.attacks = build_attacks(config)
        if config.federation.client_app is not None:  # a user's ClientApp: loaded now, before anything runs
            from fedgraph_sim.runtime.client_apps import client_app_of
            client_app_of(config)
        self.scenario = scenario or build_scenario(config)
        check_model_fits(config, self.scenario)
        train, rounds = config.train, config.federation.rounds
        self.defenses.validate([ClientTurn(len(c), train.batch_size, train.local_steps, rounds, train.sampling)
                                for c in self.scenario.clients])
        self.defenses.check_server(config.federation.sampled_per_round(),
                                   secaggplus=config.threat.secure_aggregation == "secaggplus")
        self.knowledge = attacker_knowledge(config, self.scenario)
        self.boundary = boundary_for(config)  # refused now, before anything is written
        self.run_dir = None
        self.runner = None
        self.rounds_task = None
        self.strategy = None  # the curious strategy the ServerApp runs (its timings)
        self.baseline = None  # the centralised baseline, from the first evaluation on
        self.untrained: tuple[int, str] | None = None  # the first round in which every client failed
        self.failed_turns: list = []  # every round's failed client turns (rows record the attacked ones)
        self.stop = StopRequest()  # set by Ctrl-C or SIGTERM (runtime.stopping)
        self.canary_scorer = None  # the DP audit's server side (canaries:)
        self.canary_clients = None  # canary clients' side: (directions, names, included)
        if config.canaries.count and config.canaries.kind == "client":
            self._plan_canary_clients()
        elif config.canaries.count:
            from server.canary_audit import CanaryScorer

            ds = self.scenario.dataset
            self.canary_scorer = CanaryScorer(self.scenario.canaries, config.model, ds.num_features,
                                              ds.num_classes, config.train.loss, config.canaries.score)
        self.stop.callbacks.append(self.stop_attacks)
        if run_dir is not None:
            self.open(run_dir)

    def _plan_canary_clients(self) -> None:
        """Canary clients: checked against the federation, their directions drawn (``canaries``)."""
        from fedgraph_sim.dp_audit.canaries import RELEASED_MODEL, client_directions, defense_names, included
        from fedgraph_sim.models import build_model
        from server.canary_audit import CanaryClientScorer

        config, spec = self.config, self.config.canaries
        names = defense_names(config.defenses)
        if config.train.local_steps < 2:
            raise ConfigError("canaries.kind: client canaries reply with weights, as FedAvg clients do; set "
                              "train.local_steps to 2 or more")
        if config.federation.fraction_train != 1 or config.threat.secure_aggregation:
            raise ConfigError("canaries.kind: client canaries take part in every round, so every client must too "
                              "(federation.fraction_train: 1) and without secure aggregation")
        if unserved := sorted(names - RELEASED_MODEL):
            raise ConfigError("canaries.kind: client canaries audit the client-level DP of "
                              f"{', '.join(sorted(RELEASED_MODEL))} (or no defense), not {', '.join(unserved)}")
        ds = self.scenario.dataset
        model = build_model(config.model, ds.num_features, ds.num_classes)
        params = [n for n, _ in model.named_parameters()]
        directions = client_directions(spec.count, sum(p.numel() for p in model.parameters()), spec.seed)
        self.canary_scorer = CanaryClientScorer(directions, params)
        self.canary_clients = (directions, params, included(spec.count, spec.seed))

    def canary_client_grid(self, grid):
        """``grid`` with the included canary clients' replies (runtime.canary_clients), if any."""
        if self.canary_clients is None:
            return grid
        from fedgraph_sim.runtime.canary_clients import CanaryClientGrid

        directions, names, inside = self.canary_clients
        return CanaryClientGrid(grid, directions, names, inside, self.config.canaries.norm,
                                self.config.federation.num_clients)

    def replies_per_round(self) -> int:
        """The replies a round's aggregate takes: the sampled clients and the canary clients in it."""
        canaries = 0 if self.canary_clients is None else int(self.canary_clients[2].sum())
        return self.config.federation.sampled_per_round() + canaries

    def open(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(to_yaml(self.config, provenance(config_hash(self.config))))
        variances = {k: v for k, v in self.defenses.report().items() if "variance" in k}
        if variances:  # the effective noise (a noise scale means little without its variance)
            log.info("defenses %s: %s", defense_label(self.config.defenses), variances)
        self.runner = attack_pipeline(self.config, self.attacks, self.knowledge, self.run_dir, self.progress,
                                      boundary=self.boundary)
        if self.progress is not None:
            self.rounds_task = self.progress.add_task("rounds", total=self.config.federation.rounds)

    def audits(self, round: int) -> bool:
        """Whether anything reads the ground truth of ``round``: an attack to score or a capture to
        replay. Only then do the attacked clients write their audit records."""
        return bool(self.attacks or self.capture) and self.config.attack.selects_round(round)

    def observer(self, updates, failures=()) -> None:
        """The strategy's view of a round: its updates and its failed client turns."""
        for failure in failures:
            log.warning("round %d, client %s failed: %s", failure.round, failure.client_key, failure.reason)
            self.failed_turns.append(failure)
        if failures and not updates and self.untrained is None:  # the global model did not move
            self.untrained = (failures[0].round, failures[0].reason)
        if self.capture and (updates or failures):
            from server.attack_runner import is_selected

            round_ = (updates or failures)[0].round
            CaptureStore(self.run_dir).write(round_, [u for u in updates if is_selected(self.config, u)],
                                             [f for f in failures if is_selected(self.config, f)])
        self.runner(updates, failures)
        if self.canary_scorer is not None:
            self.canary_scorer(updates, failures)
        if self.rounds_task is not None:
            self.progress.advance(self.rounds_task)

    def evaluate(self, server_round: int, arrays):
        """Flower's ``evaluate_fn``: the global model on the held-out test split, and beside it the
        centralised baseline after as many rounds (``runtime/baseline.py``)."""
        from flwr.app import MetricRecord

        from fedgraph_sim.models import build_model
        from fedgraph_sim.runtime.baseline import CentralisedBaseline

        if self.canary_clients is not None:  # what the released model tells about the canary clients
            self.canary_scorer.release({k: v.numpy() for k, v in arrays.items()})
        test = self.scenario.test
        if len(test) == 0:
            return None
        ds = self.scenario.dataset
        graphs = [ds.graphs[i] for i in test]
        model = build_model(self.config.model, ds.num_features, ds.num_classes)
        model.load_state_dict(arrays.to_torch_state_dict())
        metrics = evaluate(model, graphs, self.config.train.loss)
        if self.baseline is None:  # round 0: the initial weights, which the baseline starts from
            self.baseline = CentralisedBaseline(self.config, self.scenario, arrays.to_torch_state_dict())
        write_utility(self.run_dir, server_round, {**metrics, **self.baseline.evaluate(server_round, graphs)})
        return MetricRecord(metrics)

    def finish(self) -> list[dict]:
        """Seal the rows and write ``summary.csv``, whole or not at all: a full disk is said in one
        line (:class:`DiskFull`, also logged: a run already failing raises its own error)."""
        self.close()
        if self.canary_scorer is not None:
            write_canary_audit(self.run_dir, self.config, self.canary_scorer)
        sealed = seal(self.run_dir)
        summary = summarize(with_utility(read_rows(self.run_dir), final_utility(self.run_dir)))
        try:
            write_summary(self.run_dir, summary)
        except OSError as exc:
            rows = sealed or self.run_dir / RESULTS_JSONL
            message = (f"{self.run_dir / 'summary.csv'}: not written ({exc.strerror or exc}); "
                       f"the rows are whole in {rows}")
            log.warning(message)
            raise DiskFull(message) from None
        return summary

    def check_trained(self) -> None:
        """Raise :class:`RunFailed` when in some round every client turn failed: the federation's
        utility and every later round's attacks would describe a model nobody trained."""
        if self.untrained is not None:
            round_, reason = self.untrained
            raise RunFailed(f"round {round_}: every client turn failed, the first with {reason.splitlines()[0][:200]}; "
                            f"the run's rows are kept in {self.run_dir}, but its results describe a model "
                            "that did not train")

    def stop_attacks(self) -> None:
        """After a stop request: kill the running attack calls and record nothing more."""
        if self.runner is not None:
            self.runner.stop()

    def close(self) -> None:
        """Stop the attack workers (idempotent)."""
        if self.runner is not None:
            self.runner.close()
