"""The centralised baseline: the same model trained on the same data without federation.

The reference for "what does the federation (and its defenses) cost?": the federation's training
graphs (every client's partition) in one place, the same initial weights, loss, learning rate and
plain SGD, no defense. FedSGD over K clients with batches of b graphs is exactly centralised SGD
with batches of K * b (McMahan et al., "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017), so each round the baseline takes ``local_steps`` steps on
batches of ``num_clients * batch_size`` graphs drawn from the pooled partitions (seeded per
round), the number of gradient steps each client takes. Evaluated on the same test split after
every round, beside the global model (the utility rows: ``centralised_test_accuracy``).
"""

from __future__ import annotations

import numpy as np

from clients.training import fedavg_weights
from fedgraph_sim.config import RunConfig
from fedgraph_sim.models import build_model, evaluate
from fedgraph_sim.scenario import Scenario


class CentralisedBaseline:
    def __init__(self, config: RunConfig, scenario: Scenario, initial: dict) -> None:
        ds = scenario.dataset
        self.config, self.dataset = config, ds
        self.pool = np.concatenate([np.asarray(c) for c in scenario.clients if len(c)])
        self.model = build_model(config.model, ds.num_features, ds.num_classes)
        self.model.load_state_dict(initial)
        self.round = 0

    def advance(self, round: int) -> None:
        """Train up to the end of ``round``."""
        train, k = self.config.train, self.config.federation.num_clients
        size = min(len(self.pool), k * train.batch_size)
        while self.round < round:
            self.round += 1
            rng = np.random.default_rng([self.config.seed, self.round, 2**31 - 1])  # apart from any client's
            batches = [[self.dataset.graphs[i] for i in rng.choice(self.pool, size=size, replace=False)]
                       for _ in range(train.local_steps)]
            fedavg_weights(self.model, batches, train.lr, loss=train.loss)

    def evaluate(self, round: int, test: list) -> dict[str, float]:
        """The baseline after ``round`` rounds on the test graphs, as ``centralised_*`` columns."""
        self.advance(round)
        metrics = evaluate(self.model, test, self.config.train.loss)
        return {f"centralised_{key}": value for key, value in metrics.items() if key != "test_graphs"}
