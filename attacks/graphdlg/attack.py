"""``graphdlg``: GraphDLG (Wei et al., "GraphDLG: Exploring Deep Leakage from Gradients in
Federated Graph Learning", arXiv 2601.19745, 2026).

Threat model: honest-but-curious server with the exact FedSGD gradient of one graph, the round's
global weights (a GCN with mean or sum pooling and one linear classifier with a bias), and
auxiliary graphs (its own data, another dataset, or random graphs). The node count is the true
one (``node_count="oracle"``, as the paper's metrics imply) or predicted from the embedding.
The label is read off the bias gradient; it is not needed.

Recovers: the structure and the node features, in three steps:

1. the pooled embedding ``h_G`` from the classifier gradients by least squares (float64);
2. the adjacency: a decoder trained on the auxiliary graphs, embedded by the round's own GCN
   layers, maps ``h_G`` to edge scores (plus the MMD adapter, reading A by default);
3. the features: GNFR, recursive closed-form least squares through the GCN layers given the
   thresholded structure, from the paper's all-ones last-layer mask.

A FedAvg update (several local steps) is not a gradient: by default GraphDLG is not applicable to
it. ``fedavg: pseudo_gradient`` runs it on ``(W_sent - W_back) / (lr * steps)`` read as one
gradient, an approximation every row records (``attack_input: pseudo_gradient``).

Paper mode (all defaults): adapter A with lambda 0.2, decoder 100-250 with Adam 1e-3 (200 epochs,
batch 64, early stopping, patience 20), oracle node count, GNFR rows min-max scaled to [0, 1].
Beyond the paper, off by default: ``refine_features`` (start from GNFR, keep the recovered
structure, match gradients over softmax one-hot node types with cosine distance and Adam);
``node_count="predicted"`` (least-squares regression of n on the aux embeddings);
``adapter="B"`` (trainable encoder copy). The decoder is warm-started across rounds and reused
without training while the global weights move less than ``retrain_tol`` (relative norm). It lives
in the run's ``ctx.shared`` store, so variants with the same decoder settings (paper mode and
``@refine``) train one decoder, not two. With a batch, the embedding is the batch's mean and the
one decoded graph stands for the batch (``batch_output = "one_for_batch"``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from attacks.base import Attack, AttackContext, ContractCase, Reconstruction, Requirements, register
from attacks.common import DummyGraphs, GradientMatcher, Schedule, label_from_bias, minimise
from attacks.common.aux import aux_fingerprint
from attacks.common.fedavg import check_fedavg, read_as_gradient
from attacks.common.parametrisations import known, schema_softmax_features
from attacks.graphdlg.decoder import ADAPTERS, DecoderTraining, StructureDecoder, encode, train_decoder
from attacks.graphdlg.embedding import recover_embedding
from attacks.graphdlg.gnfr import gnfr
from attacks.idlg import classifier_gradients
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate

NODE_COUNTS = ("oracle", "predicted")


@dataclass(eq=False)
class DecoderState:
    """A trained decoder and what it was trained on; shared by variants (see ``decoder_state``)."""

    decoder: StructureDecoder | None = None
    trained_on: dict | None = None
    victims: list = field(default_factory=list)  # embeddings recovered so far (adapter input)
    count_model: torch.Tensor | None = None
    seconds: list = field(default_factory=list)
    prepared_rounds: set = field(default_factory=set)


def minmax_rows(x: torch.Tensor) -> torch.Tensor:
    """Per-node min-max scaling to [0, 1] (scale invariant, so GNFR's free scale drops out)."""
    low, high = x.min(1, keepdim=True).values, x.max(1, keepdim=True).values
    return (x - low) / (high - low).clamp(min=1e-12)


@register
class GraphDLG(Attack):
    name = "graphdlg"
    cited_as = "Wei et al., arXiv 2601.19745, 2026"
    threat_model = ("exact FedSGD gradient (or, with `fedavg: pseudo_gradient`, a FedAvg update read as one: an "
                    "approximation), auxiliary graphs, node count (`oracle`)")
    recovers = "embedding, structure (decoder), features (GNFR), label"
    defaults_note = "see [GraphDLG results](docs/results/graphdlg.md)"
    paper = ("Wei et al. GraphDLG: Exploring Deep Leakage from Gradients in Federated Graph Learning. "
             "arXiv 2601.19745, 2026")
    requires = Requirements(exact_gradient=True, aux_graphs=True)
    contract_cases = (ContractCase("graph", {"epochs": 3, "warm_epochs": 2, "patience": 2}),)
    batch_output = "one_for_batch"
    keeps_state = True  # the decoder trained in prepare(), shared by the variants

    @dataclass
    class Params:
        node_count: str = "oracle"
        adapter: str = "A"
        lam: float = 0.2
        epochs: int = 200
        warm_epochs: int = 30
        retrain_tol: float = 1e-2
        batch_size: int = 64
        lr: float = 1e-3
        patience: int = 20
        n_max: int | None = None
        refine_features: bool = False
        refine_iterations: int = 100
        refine_lr: float = 0.1
        fedavg: str = "not_applicable"  # not_applicable | pseudo_gradient (an approximation)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        p = self.params
        if p.node_count not in NODE_COUNTS:
            raise ConfigError(f"attack.params.{self.name}.node_count: unknown '{p.node_count}'; "
                              f"valid: {', '.join(NODE_COUNTS)}")
        if p.adapter not in ADAPTERS:
            raise ConfigError(f"attack.params.{self.name}.adapter: unknown '{p.adapter}'; "
                              f"valid: {', '.join(ADAPTERS)}")
        check_fedavg(self.name, p.fedavg)
        self._states: set = set()

    # -- requirements -------------------------------------------------------------------------
    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        reason = super().not_applicable(read_as_gradient(update, self.params.fedavg), knowledge)
        if reason:
            return reason
        m = knowledge.model
        if (m.get("conv", "gcn"), m.get("readout", "linear"), m.get("readout_placement", "after_pool")) != (
                "gcn", "linear", "after_pool") or m.get("pool", "mean") not in ("mean", "sum"):
            return "needs GCN layers, mean or sum pooling and one linear classifier after pooling"
        if self.params.node_count == "oracle" and knowledge.node_counts is None:
            return "node_count=oracle needs the node-count hint (threat.node_count=true)"
        return None

    # -- the three steps ----------------------------------------------------------------------
    @staticmethod
    def _fc_names(model) -> tuple[str, str]:
        return f"{model.final_linear_name}.weight", f"{model.final_linear_name}.bias"

    def embedding(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> torch.Tensor | None:
        return recover_embedding(*classifier_gradients(update, knowledge))

    def prepare(self, updates: list[ObservedUpdate], knowledge: AttackerKnowledge,
                ctx: AttackContext) -> None:
        """Once per round: collect the round's victim embeddings, then (re)train the decoder."""
        state = self.decoder_state(knowledge, ctx)
        if not updates or updates[0].round in state.prepared_rounds:
            return  # another variant sharing this decoder did it already
        state.prepared_rounds.add(updates[0].round)
        for update in updates:
            if update.exact:
                h = self.embedding(update, knowledge)
                if h is not None:
                    state.victims.append(h.float())
        self._ensure_decoder(state, updates[0].global_weights, knowledge, ctx)

    def decoder_state(self, knowledge: AttackerKnowledge, ctx: AttackContext) -> "DecoderState":
        """The decoder state in the run's shared store, shared by every GraphDLG variant with the
        same decoder settings and auxiliary set (e.g. paper mode and ``@refine``)."""
        p = self.params
        key = ("graphdlg-decoder", p.adapter, p.lam, p.epochs, p.warm_epochs, p.retrain_tol,
               p.batch_size, p.lr, p.patience, p.n_max, aux_fingerprint(knowledge.aux_graphs))
        if key not in ctx.shared:
            ctx.shared[key] = DecoderState()
        state = ctx.shared[key]
        self._states.add(state)
        return state

    def _weights_moved(self, state: "DecoderState", weights: dict[str, np.ndarray]) -> bool:
        if state.trained_on is None:
            return True
        diff = sum(float(((weights[k] - state.trained_on[k]) ** 2).sum()) for k in weights)
        norm = sum(float((state.trained_on[k] ** 2).sum()) for k in weights)
        return diff > (self.params.retrain_tol ** 2) * norm

    def _ensure_decoder(self, state: "DecoderState", weights: dict[str, np.ndarray],
                        knowledge: AttackerKnowledge, ctx: AttackContext) -> None:
        if not self._weights_moved(state, weights):
            return
        p = self.params
        model = knowledge.build_model(weights)
        aux = list(knowledge.aux_graphs)
        first = state.decoder is None
        if first:
            n_max = p.n_max or max(g.num_nodes for g in aux)
            state.decoder = StructureDecoder(model.convs[-1].out_channels, n_max)
        start = time.perf_counter()
        cfg = DecoderTraining(epochs=p.epochs, batch_size=p.batch_size, lr=p.lr, patience=p.patience,
                              adapter=p.adapter, lam=p.lam)
        victims = torch.stack(state.victims) if state.victims else None
        train_decoder(state.decoder, model, aux, victims, cfg, ctx.generator(),
                      max_epochs=None if first else p.warm_epochs, budget_check=ctx.budget.check)
        state.seconds.append(time.perf_counter() - start)
        with torch.no_grad():  # node-count regression on the aux embeddings (node_count=predicted)
            h = encode(model, aux).double()
        design = torch.cat([h, torch.ones(len(aux), 1, dtype=torch.float64)], 1)
        counts = torch.tensor([float(g.num_nodes) for g in aux], dtype=torch.float64)
        state.count_model = torch.linalg.lstsq(design, counts[:, None]).solution[:, 0]
        state.trained_on = {k: np.array(v, copy=True) for k, v in weights.items()}

    @property
    def decoder_seconds(self) -> list[float]:
        return [t for state in self._states for t in state.seconds]

    def node_count(self, h: torch.Tensor, knowledge: AttackerKnowledge, state: "DecoderState") -> int:
        if self.params.node_count == "oracle":
            return int(round(float(np.mean(knowledge.node_counts))))
        n = float(torch.cat([h.double(), torch.ones(1, dtype=torch.float64)]) @ state.count_model)
        return int(min(max(round(n), 1), state.decoder.n_max))

    def structure(self, h: torch.Tensor, n: int, state: "DecoderState") -> torch.Tensor:
        """Edge scores ``[n, n]`` the trained decoder gives the embedding ``h``."""
        with torch.no_grad():
            p = state.decoder(h.float()[None])[0]
        n_max = p.size(0)
        scores = torch.zeros(n, n)
        k = min(n, n_max)
        scores[:k, :k] = p[:k, :k]
        scores.fill_diagonal_(0)
        return scores

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        h = self.embedding(update, knowledge)
        if h is None:
            raise RuntimeError("every classifier bias gradient is zero: no embedding to recover")
        state = self.decoder_state(knowledge, ctx)
        if state.decoder is None or self._weights_moved(state, update.global_weights):
            state.victims.append(h.float())
            self._ensure_decoder(state, update.global_weights, knowledge, ctx)
        model = knowledge.build_model(update.global_weights)
        n = self.node_count(h, knowledge, state)
        scores = self.structure(h, n, state)
        binary = (scores >= 0.5).double()
        w_name, b_name = self._fc_names(model)
        names = [n_ for n_, _ in model.named_parameters() if n_.startswith("convs.") and n_.endswith("lin.weight")]
        thetas = [torch.as_tensor(np.asarray(update.global_weights[k])) for k in names]
        x = gnfr(thetas, [update.gradient[k] for k in names],
                 torch.as_tensor(np.asarray(update.global_weights[w_name])), update.gradient[b_name],
                 binary, pool=model.pool)
        info = {"embedding_norm": float(h.norm()), "predicted_edges": int(binary.triu(1).sum()),
                "gnfr_rank": int(torch.linalg.matrix_rank(x)), "batch_embedding": update.num_graphs > 1,
                "attack_input": "gradient" if update.exact else "pseudo_gradient"}
        x = minmax_rows(x).float()
        label = label_from_bias(update.gradient[b_name])[0]
        if self.params.refine_features:
            x = self.refine(model, update, knowledge, x, binary.float(), label, ctx)
        return [Reconstruction(x=x, adj=scores, num_nodes=n, label=label, info=info)]

    def refine(self, model, update, knowledge, x0, adj, label: int, ctx) -> torch.Tensor:
        """[ext] Gradient matching over softmax one-hot node types, structure fixed."""
        matcher = GradientMatcher(model, update.gradient, "cosine", knowledge.loss)
        start = x0 * 3.0  # GNFR's scaled rows as initial logits
        n = x0.size(0)
        draw = lambda gen: DummyGraphs([n], gen, labels=torch.tensor([label]),  # noqa: E731
                                       features=schema_softmax_features(x0.size(1), knowledge.schema, start),
                                       adjacency=known([adj]))
        fit = minimise(draw, lambda d: matcher(*d.dense(), d.label_targets()), ctx,
                       Schedule(iterations=self.params.refine_iterations, lr=self.params.refine_lr), ctx.generator())
        with torch.no_grad():
            return fit.dummy.x(0).detach().clone()
