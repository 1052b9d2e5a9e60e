"""``grain``: GRAIN, exact graph reconstruction from one FedSGD gradient (Drencheva, Petrov,
Baader, Dimitrov and Vechev, "GRAIN: Exact Graph Reconstruction from Gradients", ICLR 2025,
arXiv 2503.01838), with the official code's (``insait-institute/GRAIN``) thresholds and budgets.

Threat model: an honest-but-curious server with the exact gradient of one client graph (FedSGD,
batch size 1), the global weights, the feature schema (value sets, standardisation statistics and
the degree block), the label set and the loss. Neither the node count, the adjacency, the
features nor the label is given: the node types come from span checks, the label is the one whose
replayed gradient is closest.

Recovers: the whole graph (node features and edges), exactly up to isomorphism when the search
finds a graph whose replayed gradient matches (distance < ``exact_tol``); otherwise the graph with
the smallest gradient distance seen (scored for partial credit), and the label.

Requires a message-passing model GRAIN can replay block by block (GCN or GAT, >= 2 layers, the
readout applied per node so its first weight sees one row per node) and a degree block in the
schema (``data.features: grain`` for molecules, ``data.degree_feature: true`` elsewhere).

Steps: T0 by feature-by-feature span checks on layer 1's weight gradient; 1-hop blocks checked
on layer 2's; 2-hop blocks on the readout's (layer 3's for deeper models); the structure filter
and scores; a depth-first search over gluings with ring closures, then a second pass on all 2-hop
blocks. Defaults (official code): rank tolerances 1e-7 / 1e-7 / 1e-8 (absolute, float64 SVD),
residual thresholds 1e-3 (nodes) and 1e-2 (blocks) on the L1 norm, exact match below 1e-6 (mean
per-tensor L2 distance), T0 groups of 1e4 partial rows (abort above 2e6), 1-hop degrees skipped
when ``|T0|^k > 1e8`` and 600 s for 1-hop generation, DFS from the top 3 blocks with 6 seeds
each, depth ``clamp(r // 3, 7, 20)``, at most ``3 r`` nodes, 500 gradient evaluations per seed,
900 s per pass, 1800 s in all, 60 s per ring-closure enumeration, rings of >= 5 atoms.
Batches ([ext] ``batches``, off in paper mode, where an update of several graphs is not
applicable): a FedSGD step on ``B`` graphs (``B`` = the examples the client reports). The span
checks run on the batch's union unchanged; the search builds complete graphs, in searches of
``batch_search_share`` of the budget each, every one started from blocks no search has started from
and that the best batch so far leaves unexplained; the batch is read from the candidates'
gradients (``batch.py``) and is exact when its replayed mean gradient is; one reconstruction per
member. In a FedSGD batch a member is recognised as soon as it is built, by the rank its gradient
takes out of the batch's (``batch_peeling``), and removed: the span checks rerun on what is left.
A batch's search explores only partial graphs whose every 2-hop neighbourhood, as far as fixed,
is among the passing blocks (``build.FixedNeighbourhoods``; ``fixed_neighbourhoods`` for one
graph), and keeps only the 2-hop blocks that carry weight in the readout's gradient, fitted over
all passing blocks (``coefficients.py``; ``block_coefficients`` for one graph). 1-hop blocks of
degree >= 3 take only neighbour types witnessed by other blocks (``blocks.witnessed_one_hop_blocks``):
a batch's T0 holds every degree for many types. With [ext] ``resume_one_hop`` (off by default) a
1-hop enumeration that ``one_hop_seconds`` cut resumes where it stopped whenever the batch's
search ends without an exact batch and with time left (for half the time left), and the blocks,
checked again with the new ones, are searched again from those no search has started from. A
batch whose layer-1 gradient has full rank is not applicable.
FedAvg updates ([ext] ``local_steps``, off in paper mode): ``K`` local SGD steps on one batch
(``train.sampling: repeat``), read as the pseudo-gradient; steps on different batches are, with
``batches``, one batch of all their graphs, read from one-step gradients and replayed in every
order over the steps. The rank cutoffs and residual
thresholds widen by what the server can bound from the update (the client's float32 rounding, the
drift of deeper layers' inputs; ``local_training.py``), and the exactness test replays the ``K``
steps, within the rounding's expected distance. An update that does not stand clear of its
rounding (a layer with no direction above it, or a rounding distance over a tenth of the update)
fails with the reason: matching it would match noise (a molecule the model already fits, late in
training, can give such an update).
Node classification (``model.task: node`` with the per-node readout; the paper's Table 5): every
node carries its own label and the loss is their mean, with no pooling. The span checks are those
of a graph; the whole-graph test labels a candidate's nodes from the readout's last-layer gradient
(``node_labels.py``), under the per-class counts when the threat grants them
(``threat.node_labels``: the paper's "labels known", without the official code's matching of the
candidate to the true graph). One graph's FedSGD gradient only.
Searches in turns ([ext] ``restarts``, off in paper mode): when the search from the top 3 blocks
ends without an exact graph and budget is left, another starts from the next 3 blocks no search
has started from, and so on. The widened checks of a FedAvg update pass more blocks than a
gradient's, so the true graph's blocks can rank below the first three.
Noisy updates ([ext] ``noise_aware``, off in paper mode, where any noise above the rank
tolerances fills the spectrum and the update fails as full rank): the attacker knows only the
update, not the defense's configured sigma or clip. The noise's per-entry standard deviation is
estimated from the spectra of the three checked gradients (``noise.py``); the span checks count
only directions above twice the noise's edge and allow each candidate the residual the noise
turns into it (as for a FedAvg update's rounding), and a graph is exact when its replayed
gradient, scaled by the factor in (0, 1] that fits the update best (a clipped update is the
gradient scaled down), is within the noise's expected distance plus ``noise_z`` of its standard
deviations. Where the noise's edge rises above the signal's weakest directions, true rows stop
passing and the attack fails with its reason; with [ext] ``rank_closed`` = k (off by default),
a node type that centres no passing 1-hop or 2-hop block keeps instead its k candidates nearest
the kept span, ranked after the passing ones (``ranking.py``). A batch's FedAvg epoch loses true
1-hop blocks to the client's rounding in the same way: with [ext] ``rank_witnessed`` = k (off by
default) every type a passing block witnesses keeps its k candidates nearest the span over
witnessed neighbour types (``ranking.nearest_witnessed``).
The models users train ([ext] ``pooled_readout``, ``other_convs``, ``unknown_degrees`` and
``float32_rounding``, off in paper mode; all four in ``grain@ext``): PyG's examples pool node
states (sum or mean) into an MLP head, put ReLU after every layer, keep biases, use GIN or
GraphSAGE, and give TU graphs without a degree block. After pooling the readout's gradient has rank
1, but each layer's weight gradient keeps one row per node, because the nodes' activation masks
differ: the 2-hop check moves to layer 3 (GIN: to the second linear map of layer 2's MLP, whose
gradient keeps the rank that a pooled top layer loses, ``embed.checked_weights``). A model whose
check layer is its last and feeds the pool without an activation gives every node the same
output-gradient row (rank 1) and is out of reach, as is max pooling (a node that is the maximum
of no channel has no gradient row at the top). GIN sums a centre with its neighbours and GraphSAGE
averages them, with no degree normalisation (``embed.StarLayer``). Without a degree block a node
type becomes a (row, degree) pair, degrees up to ``max_degree``, read from the layer-2 check
(``degrees.py``). Sum pooling without normalisation makes gradients large enough that a float32
gradient's rounding rises above the paper's absolute rank tolerances; ``float32_rounding`` counts
only directions above it (``local_training.gradient_rounding``).
A bound on the search ([ext] ``pooled_sums``, off in paper mode and outside ``grain@ext``): where
every node receives the same output gradient at a ReLU layer (a sum-pooled GIN's last layer,
GRAIN's per-node readout), one graph's gradient gives per unit the number of nodes that switch it
on and the sum of their inputs; partial graphs whose final nodes exceed them are skipped
(``pooled_sums.py``).
A malicious server's round (``threat.server: malicious``) is read with what its crafting gives:
``imprinted_nodes`` every node's readout row (``imprinted.py``), ``imprinted_aggregates`` every
node's star in a pooled GCN (``imprinted_stars.py``), and the other craftings each member's part
as an honest update.
A user's own model (``model.module``) is read as the classifier that computes it
(``fedgraph_sim.models.reading``: GIN, GCN or GraphSAGE layers and a linear or MLP head), or refused
with the module that stops it (batch norm, dropout, other layers).
Where this implementation differs from the official code (each a faithful reading of the paper):
gluing adds every unmatched node of a block (the code skips children of matched neighbours), and
the structure filter checks the whole part of a block visible from each node (the code's check of
first-hop nodes omits the centre's other neighbours).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import torch
from torch import Tensor

from attacks.base import (Attack, AttackContext, AttackFailed, AttackStopped, AttackTimeout, Budget, ContractCase,
                          Reconstruction, Requirements, register)
from attacks.common.user_models import as_classifier, reading_of
from attacks.grain.batch import BatchAssembler, Peeling, unexplained_first
from attacks.grain.blocks import (Block, OneHopEnumeration, concat_one_hop, is_complete, one_hop_blocks,
                                  structure_filter, two_hop_blocks, witnessed_enumeration)
from attacks.grain.build import FixedNeighbourhoods, PartialGraph, SearchBudget, neighbourhood, preference, search
from attacks.grain.coefficients import block_z_scores
from attacks.grain.degrees import degree_types, one_hop_blocks_of_unknown_degree
from attacks.grain.embed import DEGREE_FREE, OTHER_CONVS, SUPPORTED, StarLayer, check_weight, checked_weights
from attacks.grain.imprinted import read_imprinted_batch
from attacks.grain.imprinted_stars import read_imprinted_aggregates
from attacks.grain.local_training import LocalTraining, gradient_rounding
from attacks.grain.node_labels import NodeLabelReader
from attacks.grain.noise import NoiseEstimate
from attacks.grain.pooled_sums import PooledSums, pooled_sums
from attacks.grain.nodes import NodeSearchAborted, propose_nodes
from attacks.grain.ranking import nearest_one_hop, nearest_witnessed, unexplained_centres
from attacks.grain.scorer import GradientScorer
from attacks.grain.spancheck import RowSpace
from fedgraph_sim.crafting import CRAFTINGS, ImprintedAggregates, ImprintedNodes, crafting
from fedgraph_sim.crafting.imprint_reading import epoch_table
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


@register
class GRAIN(Attack):
    name = "grain"
    cited_as = "Drencheva et al., ICLR 2025"
    # every [ext] option that widens where GRAIN applies
    audit_options = {"local_steps": True, "batches": True, "noise_aware": True, "pooled_readout": True,
                     "other_convs": True, "unknown_degrees": True, "float32_rounding": True}
    exact = True  # "exactly up to isomorphism when the replayed gradient matches" (the paper's claim)
    reads_crafting = True  # a malicious server's members, each read as an honest update
    threat_model = ("exact FedSGD gradient of one graph (of a batch with the [ext] `batches`; local steps on one "
                    "batch with the [ext] `local_steps`; a noisy or clipped update with the [ext] `noise_aware`, "
                    "its noise read from the spectrum, and [ext] `rank_closed` ranking candidates where the noise "
                    "closes the spectral gap; a node classifier's gradient, its node labels read from it), feature "
                    "schema with a degree block (enumerated with the [ext] `unknown_degrees`), per-node readout (after "
                    "sum or mean pooling with the [ext] `pooled_readout`), GCN or GAT (GIN and GraphSAGE with the "
                    "[ext] `other_convs`)")
    recovers = ("the whole graph, exactly up to isomorphism when the replayed gradient matches; else the closest "
                "graph found; label")
    defaults_note = "the official code's thresholds and budgets, see [GRAIN results](docs/results/grain.md)"
    paper = ("Drencheva, Petrov, Baader, Dimitrov, Vechev. GRAIN: Exact Graph Reconstruction from "
             "Gradients. ICLR 2025 (arXiv 2503.01838)")
    requires = Requirements(exact_gradient=True, tasks=("graph", "node"))
    contract_cases = (ContractCase("graph", victim="grain"), ContractCase("node", victim="grain"))

    @dataclass
    class Params:
        tol_node: float = 1e-7  # rank tolerances of the three span checks
        tol_one_hop: float = 1e-7
        tol_two_hop: float = 1e-8
        tau_node: float = 1e-3  # residual thresholds (L1 norm of the unit candidate's residual)
        tau_one_hop: float = 1e-2
        tau_two_hop: float = 1e-2
        exact_tol: float = 1e-6  # gradient distance of an exact reconstruction
        group_size: int = 10_000
        abort_size: int = 2_000_000
        max_one_hop_combinations: float = 1e8
        one_hop_seconds: float = 600.0
        max_two_hop_candidates: int = 2_000_000
        structure_filter: bool = True
        min_ring: int = 5
        start_blocks: int = 3
        # [ext] a search from ``start_blocks`` blocks that ends without an exact graph, with budget
        # left, is followed by one from the next blocks no search has started from, until one is
        # exact or the budget is spent (the official code stops after the first; a batch always
        # searches in turns)
        restarts: bool = False
        seeds_per_block: int = 6
        grad_evals: int = 500
        dfs_pass_seconds: float = 900.0
        dfs_total_seconds: float = 1800.0
        overlap_seconds: float = 60.0
        backup_pass: bool = True
        # [ext] score every complete graph the search builds, as the paper's Alg. 4 reads, not
        # only those within the official code's evaluation budget
        score_complete: bool = False
        # [ext] an exact graph that may be a k-fold cover of a smaller one (same gradient under
        # mean pooling) does not end the search: the smallest exact graph found is returned
        prefer_smaller: bool = False
        # [ext] batches of several graphs (FedSGD): the search builds complete graphs and the
        # batch is read from their gradients (batch.py); off, as in the paper, a batch is not
        # applicable
        batches: bool = False
        batch_coordinates: int = 4096  # gradient coordinates the batch fit uses
        batch_search_share: float = 0.1  # each search of a batch gets this share of the budget
        # a FedSGD batch's members are recognised as they are built, by the rank they take out of
        # the gradient, and removed before the search goes on (batch.Peeling)
        batch_peeling: bool = True
        # [ext] 2-hop blocks are kept only where the readout's gradient, fitted over all passing
        # blocks, gives them a coefficient ``coefficient_z`` standard errors from zero
        # (coefficients.py; 2-layer models with the per-node readout); a FedSGD batch's search
        # does with ``batch_block_coefficients``
        block_coefficients: bool = False
        batch_block_coefficients: bool = True
        coefficient_z: float = 1000.0
        coefficient_fit_residual: float = 1e-4  # the test holds only where the blocks explain the gradient
        max_coefficient_blocks: int = 4000  # above this many (blocks x labels) the fit is skipped
        # [ext] the search explores only partial graphs whose fixed 2-hop neighbourhoods all passed
        # the span check (build.FixedNeighbourhoods); a batch's search always does
        fixed_neighbourhoods: bool = False
        # [ext] FedAvg updates of several local steps on one batch: tolerances bounded from the
        # update (local_training.py), the exactness test replays the local training
        local_steps: bool = False
        # [ext] an update a defense has perturbed with i.i.d. noise (and perhaps clipped): the
        # noise level estimated from the update's spectrum (noise.py), the span checks' floors
        # and allowances and the exactness test set from it, the replay scaled to the update
        noise_aware: bool = False
        noise_z: float = 4.0  # the exactness test's margin, in standard deviations of the noise's distance
        # [ext] with noise_aware, where the gap closes: a node type that centres no passing 1-hop
        # (2-hop) block keeps its rank_closed candidates nearest the span, ranked after the
        # passing ones (ranking.py); 0 = filtering only
        rank_closed: int = 0
        rank_closed_share: float = 0.25  # of the time budget, at most, for a ranked 1-hop enumeration (either option)
        # [ext] with batches, under an allowance (a FedAvg epoch's rounding): every witnessed type
        # also keeps its rank_witnessed candidates nearest the 1-hop span over witnessed
        # neighbour types (ranking.nearest_witnessed); 0 = filtering only
        rank_witnessed: int = 0
        # [ext] with batches: when a batch's search ends without an exact batch, with time left,
        # and one_hop_seconds cut its 1-hop enumeration, the enumeration resumes where it stopped
        # for half the time left, and the blocks are checked and searched again
        resume_one_hop: bool = False
        # [ext] a readout after pooling (sum or mean, then a linear or MLP head): the 2-hop check
        # moves from the per-node readout to layer 3, whose input rows are the nodes' 2-hop states
        pooled_readout: bool = False
        # [ext] GIN and GraphSAGE layers (embed.py): sum or mean aggregation, no degree normalisation
        other_convs: bool = False
        # [ext] no degree block in the features: node types become (row, degree) pairs, degrees up
        # to max_degree, read from the layer-2 span check (degrees.py)
        unknown_degrees: bool = False
        max_degree: int = 4
        # [ext] a FedSGD gradient's float32 rounding (local_training.gradient_rounding): ranks count
        # only directions above it and the exactness test allows twice its expected distance
        float32_rounding: bool = False
        # [ext] a sum-pooled GIN's last layer or GRAIN's per-node readout: per unit, the count of
        # nodes that switch it on and the sum of their inputs, read from the gradient, bound the
        # search's partial graphs (pooled_sums.py)
        pooled_sums: bool = False

    def __init__(self, **params) -> None:
        super().__init__(**params)
        if self.params.max_degree < 1:
            raise ConfigError(f"attack.params.{self.name}.max_degree: must be >= 1 (got {self.params.max_degree}); "
                              "the largest degree unknown_degrees enumerates")
        if self.params.rank_closed and not self.params.noise_aware:
            raise ConfigError(f"attack.params.{self.name}.rank_closed: ranks where a defense's noise closes "
                              "the spectral gap, so it needs noise_aware: true")
        if self.params.rank_witnessed and not self.params.batches:
            raise ConfigError(f"attack.params.{self.name}.rank_witnessed: ranks over the types a batch's blocks "
                              "witness, so it needs batches: true")
        if self.params.resume_one_hop and not self.params.batches:
            raise ConfigError(f"attack.params.{self.name}.resume_one_hop: resumes a batch's 1-hop enumeration, "
                              "so it needs batches: true")
        if self.params.local_steps:  # a pseudo-gradient will do
            self.requires = Requirements(tasks=("graph", "node"))

    def user_model_problem(self, knowledge: AttackerKnowledge) -> str | None:
        """A user's model is read as the classifier that computes it (``models.reading``)."""
        reading = reading_of(knowledge)
        return reading if isinstance(reading, str) else None

    def reads_as_gradient(self, update: ObservedUpdate) -> bool:
        """An ``imprinted_nodes_epoch`` table is read from a FedAvg epoch's weights as from one
        gradient: its scales keep the local steps from moving it (``ImprintedNodes(epoch=True)``)."""
        return update.exact or (_node_table(update) and epoch_table(update.crafted))

    def not_applicable(self, update: ObservedUpdate, knowledge: AttackerKnowledge) -> str | None:
        if _aggregate_table(update):
            if not update.exact:
                return ("reads an imprinted_aggregates round from one FedSGD gradient: a local SGD step moves "
                        "its summing unit as it moves imprinted_nodes' and leaves the table unread")
            if knowledge.schema.degree_block is None:
                return ("reads an imprinted_aggregates row as a star through the degree block (data.features: "
                        "grain for molecules, data.degree_feature: true otherwise); these features have none")
            return super().not_applicable(update, knowledge)
        if _node_table(update):
            if not self.reads_as_gradient(update):
                return ("reads an imprinted_nodes round from one FedSGD gradient: a local SGD step moves the "
                        "table's summing unit hundreds of times its norm at lr 0.01 and leaves it dead "
                        "(threat.crafting: imprinted_nodes_epoch is the table that outlasts an epoch)")
            if epoch_table(update.crafted) and not (knowledge.schema and knowledge.schema.standardized):
                return ("reads an imprinted_nodes_epoch table's cells by their standardized features "
                        "(data.features: grain); these features are not standardized")
            return super().not_applicable(update, knowledge)
        if update.crafted is not None:  # each member's part is read as its own honest update
            update, knowledge = crafting(update.crafted.crafting).members(update, knowledge)[0]
        reason = super().not_applicable(update, knowledge)
        if reason:
            return reason
        if knowledge.model.get("module") is not None:
            update, knowledge = as_classifier(update, knowledge, reading_of(knowledge))
        if not all(np.isfinite(v).all() for v in update.returned.values()):
            return "the update holds non-finite values (the client's training diverged): no rank to read"
        graphs = update.num_graphs
        if not update.exact:
            if not self.params.local_steps:  # unreachable through the base check; kept explicit
                return "needs the exact gradient (attack.params.<name>.local_steps=true reads FedAvg updates)"
            if update.observed == "secure_aggregate":
                return "behind secure aggregation the server sees the mean of several clients' local training"
        if graphs != 1:
            if not self.params.batches:
                return (f"needs one graph; the update was computed on {graphs} "
                        "(attack.params.<name>.batches=true extends GRAIN to batches)")
            first_name = check_weight(knowledge.model.get("conv", "gcn"), 0)
            first = update.gradient.get(first_name)
            noise = LocalTraining.of(update).noise.get(first_name, 0.0) if self.params.local_steps else 0.0
            if first is not None and self.params.noise_aware:  # a defense's noise fills the spectrum too
                noise = (noise ** 2 + NoiseEstimate.of({"first": first}).sigma ** 2) ** 0.5
            if first is not None and RowSpace(first, self.params.tol_node, noise).rank >= min(first.shape):
                return (f"the batch's layer-1 gradient has full rank {min(first.shape)}: its "
                        f"{graphs} graphs may hold as many nodes as the layer is wide")
        m = knowledge.model
        if m.get("task", "graph") == "node" and (graphs != 1 or not update.exact):
            return ("node classification: one graph's FedSGD gradient only (the node labels are read "
                    f"from one gradient; this update: {graphs} graphs, exact gradient {update.exact})")
        return self.model_not_applicable(m, knowledge.schema.degree_block is not None)

    def model_not_applicable(self, m: dict, degree_block: bool) -> str | None:
        """Why GRAIN cannot read a model of architecture ``m`` (``model`` section keys), if so."""
        p, conv = self.params, m.get("conv", "gcn")
        if conv in OTHER_CONVS and not p.other_convs:
            return f"needs GCN or GAT layers (model.conv is {conv}; attack.params.<name>.other_convs=true reads it)"
        if conv not in SUPPORTED + OTHER_CONVS:
            return f"needs GCN, GAT, GIN or GraphSAGE layers (model.conv is {conv})"
        layers = m.get("layers", 2)
        if layers < 2:
            return "needs at least 2 message-passing layers"
        if m.get("readout_placement", "after_pool") != "per_node":
            if not p.pooled_readout:
                return ("needs the readout applied per node (model.readout_placement=per_node): after "
                        "pooling the readout gradient has rank 1 and the 2-hop check is lost "
                        "(attack.params.<name>.pooled_readout=true checks 2-hop states in the layers)")
            check_layer = 2 if conv == "gin" else 3  # the layer whose gradient the 2-hop check reads
            if layers < check_layer:
                return ("a pooled readout's gradient has rank 1, so the 2-hop states are checked at layer 3: "
                        f"needs 3 message-passing layers (model.layers is {layers})")
            pool = m.get("pool", "mean")
            if pool not in ("sum", "mean"):
                return (f"pool {pool}: a node that is the maximum of no channel gets no gradient at the last "
                        "layer, so its state is missing from the span" if pool == "max" else
                        f"pool {pool} is not a pooling GRAIN reads (sum or mean)")
            last = m.get("last_activation")
            if layers == check_layer and (last is False or (last is None and m.get("task", "graph") != "graph")):
                return ("the last layer feeds the pool without an activation: every node's row of its output "
                        "gradient is the pooled gradient, a rank-1 gradient, so the 2-hop check it holds is "
                        "lost (an activation after it gives each node its own mask)")
        if not degree_block and not p.unknown_degrees:
            return ("needs node degree as a feature (data.features=grain for molecules, "
                    "data.degree_feature=true otherwise; attack.params.<name>.unknown_degrees=true enumerates "
                    "degrees instead)")
        return None

    def reconstruct(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                    ctx: AttackContext) -> list[Reconstruction]:
        if _node_table(update):
            return read_imprinted_batch(update, knowledge, self.params, ctx)  # every node's row, known
        if _aggregate_table(update):
            return read_imprinted_aggregates(update, knowledge, self.params, ctx)  # every node's star, known
        if update.crafted is not None:
            return self.members(update, knowledge, ctx)
        if knowledge.model.get("module") is not None:  # a user's model, read as the classifier it computes
            update, knowledge = as_classifier(update, knowledge, reading_of(knowledge))
        run = _Run(self.params, update, knowledge, ctx)
        try:
            return run()
        except AttackStopped as exc:  # the rows say how far the stages got
            exc.info = {**run.info, **exc.info}
            raise

    def members(self, update: ObservedUpdate, knowledge: AttackerKnowledge,
                ctx: AttackContext) -> list[Reconstruction]:
        """A malicious server's crafted update: each member's own update, read in turn with an equal
        share of what is left of the budget. A member that fails or runs out adds no graph."""
        members = crafting(update.crafted.crafting).members(update, knowledge)
        recs, stops = [], []
        for i, (member, narrow) in enumerate(members):
            share = replace(ctx, budget=Budget(max(0.0, ctx.budget.deadline - time.monotonic()) / (len(members) - i)))
            try:
                recs += self.reconstruct(member, narrow, share)
            except AttackStopped as exc:
                stops.append((member.client_key, exc))
        failures = "; ".join(f"client {key}: {exc}" for key, exc in stops)
        for rec in recs:
            rec.info.update(crafted=update.crafted.crafting, members_failed=len(stops), member_failures=failures)
        if not recs and stops:
            raise stops[0][1]
        return recs


def _aggregate_table(update: ObservedUpdate) -> bool:
    """Whether ``update`` answers an ``imprinted_aggregates`` round (every node's star, pooled models)."""
    return update.crafted is not None and issubclass(CRAFTINGS[update.crafted.crafting], ImprintedAggregates)


def _node_table(update: ObservedUpdate) -> bool:
    """Whether ``update`` answers a round of imprinted node rows (either table of ``imprinted_nodes``)."""
    return update.crafted is not None and issubclass(CRAFTINGS[update.crafted.crafting], ImprintedNodes)


class _Run:
    """One reconstruction: the stages in order, their counts and timings, the best graph so far."""

    def __init__(self, p, update: ObservedUpdate, knowledge: AttackerKnowledge, ctx: AttackContext):
        self.p, self.knowledge, self.ctx = p, knowledge, ctx
        self.model = knowledge.build_model(update.global_weights, dtype=torch.float64)
        self.grad = update.gradient
        self.names = checked_weights(self.model)
        self.info: dict = {}
        # the client's local training, whose perturbations the checks allow for ([ext] local_steps)
        self.training = LocalTraining.of(update) if p.local_steps else LocalTraining(update.lr, 1)
        order = [n for n, _ in self.model.named_parameters()]
        self.noise = [self.training.noise.get(n, 0.0) for n in self.names]
        self.drift = [self.training.drift(n, order) for n in self.names]
        self.exact_tol = self.rounding_tol = p.exact_tol + self.training.exact_slack(order)
        if p.float32_rounding and update.kind == "gradient":
            rounding = {n: gradient_rounding(g) for n, g in self.grad.items()}
            self.noise = [max(noise, rounding[n]) for noise, n in zip(self.noise, self.names)]
            self.exact_tol += 2 * float(np.mean([rounding[n] * self.grad[n].numel() ** 0.5 for n in order
                                                 if n in rounding]))
        self.fit_scale = False
        if p.noise_aware:  # the defense's noise, from the spectrum of the update alone
            estimate = NoiseEstimate.of({n: self.grad[n] for n in self.names})
            self.noise = [(n ** 2 + estimate.sigma ** 2) ** 0.5 for n in self.noise]
            self.exact_tol += estimate.exact_tol([p_.numel() for p_ in self.model.parameters()], p.noise_z)
            self.fit_scale = True  # a clipped update is the gradient scaled down
            self.info.update(noise_sigma=estimate.sigma)
        if self.training.steps > 1:
            self.info.update(attack_input="simulated_local_training", local_steps=self.training.steps)
        self.best: tuple[float, PartialGraph | None, int] = (float("inf"), None, 0)
        self.scorer: GradientScorer | None = None
        self.batch_size = update.num_graphs  # a batch per local step, unless every step trained one
        self.per_step = 0 if update.exact or update.same_batch else update.batch_size
        self.batch: BatchAssembler | None = None
        self.deg: list[int] = []
        self.admissible = lambda graph: True
        self.peeling: Peeling | None = None
        self.peeled = False  # a member was recognised since the blocks were last checked
        self.enumeration: OneHopEnumeration | None = None  # a batch's 1-hop enumeration, resumable
        self.started: set = set()  # the neighbourhoods searches have started from

    def expired(self) -> bool:
        return self.ctx.budget.expired()

    def stage(self, name: str, fn, *args, **kwargs):
        if self.expired():
            raise AttackTimeout(f"time budget of {self.ctx.budget.seconds:g} s spent before {name}")
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        self.info[f"seconds_{name}"] = round(time.perf_counter() - start, 4)
        return out

    def score(self, graph: PartialGraph) -> float:
        if self.batch is not None:  # a batch: complete graphs are candidate members
            if graph.dangling(self.deg):
                return float("inf")
            member = self.peeling.test(graph) if self.peeling is not None else None
            if member is not None:
                self.batch.fix(graph, *member)
                self.peeled = True  # ends this search: the blocks are checked again on what is left
                return self.batch.best[0]
            return self.batch.add(graph)
        d, label = self.scorer.distance(graph.types, graph.edges())
        if preference(d, graph, self.exact_tol) < preference(self.best[0], self.best[1], self.exact_tol):
            self.best = (d, graph, label)
        return d

    def __call__(self) -> list[Reconstruction]:
        p, schema = self.p, self.knowledge.schema
        spaces = [RowSpace(self.grad[n], tol, noise, drift) for n, tol, noise, drift in
                  zip(self.names, (p.tol_node, p.tol_one_hop, p.tol_two_hop), self.noise, self.drift)]
        for k, space in enumerate(spaces, 1):
            self.info[f"rank_{k}"] = space.rank
        for name, space in zip(self.names, spaces):
            if space.rank == 0 and space.floor > 0:
                source = "the defense's noise" if self.p.noise_aware else "the client's float32 rounding"
                raise AttackFailed(f"the update of {name} lies within {source} (no singular value above "
                                   f"{space.floor:.1e}): it tells nothing exactly")
            if space.rank >= min(self.grad[name].shape):
                raise AttackFailed(f"gradient of {name} has full rank {space.rank}: the graph may have "
                                   "as many nodes as the layer is wide (n >= d), out of GRAIN's scope, "
                                   "or the update carries noise (attack.params.<name>.noise_aware=true)")
        signal = float(torch.stack([g.norm() for g in self.grad.values()]).mean())  # a zero gradient's distance
        if self.training.noise and self.rounding_tol > 0.1 * signal:  # never in paper mode
            raise AttackFailed(f"the update stands within 10x of its float32 rounding (expected rounding "
                               f"distance {self.rounding_tol:.1e}, update {signal:.1e}): no replay can be told exact")
        try:
            nodes = self.stage("t0", propose_nodes, schema, self.grad[self.names[0]], tol=p.tol_node,
                               tau=p.tau_node, group_size=p.group_size, abort_size=p.abort_size,
                               noise=self.noise[0])
        except NodeSearchAborted as exc:
            raise AttackFailed(f"node filtering aborted: {exc}") from None
        self.info.update(t0_nodes=nodes.categories.size(0), t0_checked=nodes.checked)
        if nodes.categories.numel() == 0:
            raise AttackFailed("no node feature vector passed the layer-1 span check")
        self.ctx.progress(1, 5)
        types = None
        if schema.degree_block is None:  # [ext] unknown_degrees: types are (row, degree) pairs
            types = degree_types(nodes.x, p.max_degree)
            nodes.x = types.x
        deg = self.degrees = schema.degrees(nodes.x.float()) if types is None else types.deg
        self.deg = [int(d) for d in deg]
        reader = None
        if self.model.task == "node":  # GRAIN's node classification: labels per node, from the gradient
            counts = self.knowledge.node_label_counts
            reader = NodeLabelReader(self.model, self.grad, self.knowledge.loss, None if counts is None else counts[0])
        self.scorer = GradientScorer(self.model, self.grad, nodes.x, self.knowledge.loss,
                                     self.knowledge.num_classes, self.training.steps, self.training.lr,
                                     per_step=self.per_step, node_labels=reader, fit_scale=self.fit_scale)
        if self.batch_size > 1:
            self.batch = BatchAssembler(self.scorer, self.batch_size, coordinates=p.batch_coordinates,
                                        exact_tol=self.exact_tol, seed=self.ctx.seed)
            if p.batch_peeling and self.training.steps == 1:  # a sum of gradients, exactly
                self.peeling = Peeling(self.scorer, self.batch_size,
                                       list(zip(self.names, (p.tol_node, p.tol_one_hop, p.tol_two_hop))))
        for t in torch.nonzero(deg == 0).flatten().tolist():  # a single isolated node
            if self.score(PartialGraph((t,), (frozenset(),))) < self.exact_tol:
                return self.finish("single_node")

        layer1 = StarLayer(self.model, 0, nodes.x)
        one_hop_deadline = time.monotonic() + p.one_hop_seconds
        one_hop_expired = lambda: self.expired() or time.monotonic() > one_hop_deadline  # noqa: E731
        if self.batch is not None and types is None:  # paused by the time limit, resumable
            self.enumeration = witnessed_enumeration(layer1, deg, spaces[1], tau=p.tau_one_hop,
                                                     max_combinations=p.max_one_hop_combinations)
            one_hop = self.stage("one_hop", self.enumeration.take, one_hop_expired)
        else:
            enumerate_one_hop = one_hop_blocks if types is None else partial(
                one_hop_blocks_of_unknown_degree, rows=types.row, degree_free=self.model.conv_name in DEGREE_FREE)
            one_hop = self.stage("one_hop", enumerate_one_hop, layer1, deg, spaces[1], tau=p.tau_one_hop,
                                 max_combinations=p.max_one_hop_combinations, expired=one_hop_expired)
        self.info.update(one_hop_candidates=one_hop.candidates, one_hop_kept=len(one_hop))
        unexplained = unexplained_centres(deg, one_hop) if p.rank_closed else []
        if unexplained:  # where the gap closes: the nearest candidates, ranked after the passing
            ranked_deadline = min(one_hop_deadline, time.monotonic() + p.rank_closed_share * self.ctx.budget.seconds)
            ranked = self.stage("one_hop_ranked", nearest_one_hop, layer1, deg, spaces[1], unexplained,
                                p.rank_closed, max_combinations=p.max_one_hop_combinations,
                                expired=lambda: self.expired() or time.monotonic() > ranked_deadline)
            one_hop = concat_one_hop(one_hop, ranked)
            self.info["one_hop_ranked"] = len(ranked)
        if p.rank_witnessed and self.batch is not None and spaces[1].perturbed and len(one_hop):
            # a batch's true blocks the rounding hides: the nearest over the witnessed types
            ranked_deadline = time.monotonic() + p.rank_closed_share * self.ctx.budget.seconds
            ranked = self.stage("one_hop_witnessed", nearest_witnessed, layer1, deg, spaces[1], one_hop,
                                p.rank_witnessed, max_combinations=p.max_one_hop_combinations,
                                expired=lambda: self.expired() or time.monotonic() > ranked_deadline)
            one_hop = concat_one_hop(one_hop, ranked)
            self.info["one_hop_witnessed"] = len(ranked)
        self.ctx.progress(2, 5)
        for i in range(len(one_hop)):  # complete stars: every neighbour a leaf
            nbrs = one_hop.neighbours(i)
            if all(deg[t] <= 1 for t in nbrs):
                star = PartialGraph.from_block(Block(int(one_hop.centre[i]), tuple((t, ()) for t in nbrs)))
                if self.score(star) < self.exact_tol:
                    return self.finish("star")
        resumable = p.resume_one_hop and self.enumeration is not None and not self.enumeration.exhausted
        if len(one_hop) == 0 and not resumable:
            return self.finish("none", failure="no 1-hop block passed the layer-2 span check")

        self.layer1, self.x0, self.one_hop = layer1, nodes.x, one_hop
        blocks, passes = self.blocks(one_hop, self.grad[self.names[2]])
        for block in blocks:  # the whole graph within two hops of one node
            if is_complete(block, deg) and self.score(PartialGraph.from_block(block)) < self.exact_tol:
                return self.finish("two_hop")
        if not blocks and not resumable:
            return self.finish("none", failure="no 2-hop block passed the readout span check")
        bound = self.pooled_bound(nodes.x) if p.pooled_sums else None
        self.ctx.progress(4, 5)

        r_max = max(s.rank for s in spaces)
        budget = SearchBudget.of(p, max_depth=min(max(7, r_max // 3), 20), max_nodes=3 * r_max)
        if self.batch is None and not p.restarts:
            result = self.stage("dfs", search, passes, self.deg, self.score, budget=budget,
                                exact_tol=self.exact_tol, min_ring=p.min_ring, expired=self.expired,
                                admissible=self.admissible)
            steps, evaluations, exact, timed_out = result.steps, result.evaluations, result.exact, result.timed_out
        else:
            steps, evaluations, exact, searches = self.stage("dfs", self.search_in_turns, passes, budget)
            if resumable:
                steps, evaluations, exact, searches = self.resumed(
                    budget, (steps, evaluations, exact, searches))
            timed_out = self.expired()
            self.info["dfs_searches"] = searches
        self.info.update(dfs_steps=steps, dfs_evaluations=evaluations)
        if bound is not None:
            self.info.update(pooled_sums_checked=bound.checked, pooled_sums_rejected=bound.rejected)
        self.ctx.progress(5, 5)
        return self.finish("dfs" if exact else ("timeout" if timed_out else "best"))

    def resumed(self, budget: SearchBudget, counts: tuple[int, int, bool, int]) -> tuple[int, int, bool, int]:
        """[ext] ``resume_one_hop``: while a batch's search ends without an exact batch and time is
        left, the 1-hop enumeration goes on from where its time limit stopped it for half the time
        left, and the blocks, checked again with the new ones, are searched again (first from the
        blocks no search has started from). Returns the search's counts, summed."""
        steps, evaluations, exact, searches = counts
        resumed = candidates = 0
        start = time.perf_counter()
        while not (exact or self.expired() or self.enumeration.exhausted):
            deadline = time.monotonic() + (self.ctx.budget.deadline - time.monotonic()) / 2
            more = self.enumeration.take(lambda: self.expired() or time.monotonic() > deadline)
            candidates += more.candidates
            if len(more) == 0:
                continue
            resumed += len(more)
            self.one_hop = concat_one_hop(self.one_hop, more)
            passes = self.passes_left()
            if not passes[-1]:
                continue
            s, e, exact, n = self.search_in_turns(passes, budget)
            steps, evaluations, searches = steps + s, evaluations + e, searches + n
        self.info.update(one_hop_resumed=resumed, one_hop_resumed_candidates=candidates,
                         seconds_one_hop_resumed=round(time.perf_counter() - start, 4))
        return steps, evaluations, exact, searches

    def passes_left(self) -> list[list[Block]]:
        """The search's passes over the blocks of ``self.one_hop`` that what is left of a batch
        passes, once its recognised members are removed (``batch.Peeling``); else over all. A
        complete block (a member within two hops of one node) is scored here: no search starts
        from it."""
        if self.peeling is None or not self.peeling.members:
            blocks, passes = self.blocks(self.one_hop, self.grad[self.names[2]])
        else:
            left = RowSpace(self.peeling.gradient(self.names[1]), self.p.tol_one_hop)
            blocks, passes = self.blocks(self.one_hop.passing(left, self.p.tau_one_hop),
                                         self.peeling.gradient(self.names[2]))
        for block in blocks:
            if is_complete(block, self.degrees):
                self.score(PartialGraph.from_block(block))
        return passes

    def blocks(self, one_hop, gradient: Tensor) -> tuple[list[Block], list[list[Block]]]:
        """T2* from ``one_hop`` checked on the span of ``gradient`` (the readout's, or layer 3's),
        kept where they carry weight in it (``block_coefficients``), and the search's passes over
        them (the structure filter's, then all); sets the search's admissibility test."""
        p = self.p
        space = RowSpace(gradient, p.tol_two_hop, self.noise[2], self.drift[2])
        rows: dict = {}
        blocks, checked, truncated = self.stage(
            "two_hop", two_hop_blocks, self.model, self.layer1, one_hop, self.degrees, self.x0, space,
            tau=p.tau_two_hop, max_candidates=p.max_two_hop_candidates, expired=self.expired, inputs=rows,
            nearest=p.rank_closed)
        self.info.update(two_hop_candidates=checked, two_hop_kept=len(blocks), two_hop_truncated=int(truncated))
        weighed = p.block_coefficients or (self.peeling is not None and p.batch_block_coefficients)
        if weighed and blocks and len(self.model.convs) == 2 and self.model.task == "graph" and \
                len(blocks) * self.knowledge.num_classes <= p.max_coefficient_blocks:
            z, residual = self.stage("coefficients", block_z_scores, self.model,
                                     torch.stack([rows[(b.centre, b.slots)] for b in blocks]), gradient)
            self.info["coefficient_fit_residual"] = residual
            if residual < p.coefficient_fit_residual:  # else a true block is missing: no test
                blocks = [b for b, score in zip(blocks, z.tolist()) if score > p.coefficient_z]
                self.info["two_hop_weighed"] = len(blocks)
        self.ctx.progress(3, 5)
        if p.structure_filter:
            passing, backup = self.stage("filter", structure_filter, blocks, self.degrees)
        else:
            passing, backup = blocks, blocks
        self.info["blocks_filtered"] = len(passing)
        if self.batch is not None or p.fixed_neighbourhoods:
            self.admissible = FixedNeighbourhoods(blocks)
        return blocks, [passing] + ([backup] if p.backup_pass and backup != passing else [])

    def pooled_bound(self, type_rows: Tensor) -> PooledSums | None:
        """[ext] ``pooled_sums``: the search also skips partial graphs beyond the counts and sums
        of a sum-pooled last layer (one graph's FedSGD gradient only), or the row says why not."""
        if self.batch is not None or self.training.steps > 1:
            self.info["pooled_sums"] = "off: needs one graph's FedSGD gradient"
            return None
        bound, reason = pooled_sums(self.model, self.grad, type_rows)
        if bound is None:
            self.info["pooled_sums"] = f"off: {reason}"
            return None
        fixed = self.admissible
        self.admissible = lambda graph: fixed(graph) and bound.admits(graph, self.deg)
        return bound

    def search_in_turns(self, passes: list[list[Block]], budget: SearchBudget) -> tuple[int, int, bool, int]:
        """Searches in turns, each started from ``start_blocks`` blocks that no earlier search
        started from, until one is exact or the budget is spent. A batch's searches get
        ``batch_search_share`` of the time budget each and start from the blocks that the best
        batch so far leaves unexplained: one search would spend it all around its first blocks,
        which belong to one graph of the batch (the gluing candidates too are taken in that
        order); a single graph's searches glue in the blocks' score order. When every block has
        started a search, a batch's searches start again from the first with twice the share.
        Returns the steps, evaluations, exactness and number of searches."""
        steps = evaluations = searches = 0
        started = self.started  # kept across calls: a resumed search starts from new blocks first
        exact = False
        share = 1.0 if self.batch is None else self.p.batch_search_share
        while not (exact or self.expired()):
            if self.peeled:  # members were removed: what is left passes fewer blocks
                self.peeled = False
                started.clear()
                passes = self.passes_left()
                if not passes[-1]:
                    break
            ordered = passes
            if self.batch is not None:
                ordered = [unexplained_first(b, [g for g, _ in self.batch.best[1]], started) for b in passes]
            before = frozenset(started)
            starts = [b for b in ordered[0] if neighbourhood(b) not in before
                      and PartialGraph.from_block(b).dangling(self.deg)][: budget.start_blocks]
            if not starts:
                if share >= 1.0 or not started:
                    break  # every block has started a search that had the whole budget
                # every block has started a search, some cut at their share: again, with twice it
                started.clear()
                share = min(1.0, 2 * share)
                continue
            started |= {neighbourhood(b) for b in starts}
            deadline = time.monotonic() + share * self.ctx.budget.seconds
            result = search(ordered, self.deg, self.score,
                            budget=budget, exact_tol=self.exact_tol, min_ring=self.p.min_ring,
                            expired=lambda: self.expired() or time.monotonic() > deadline or self.peeled,
                            skip_start=lambda b: neighbourhood(b) in before, admissible=self.admissible)
            steps, evaluations, searches = steps + result.steps, evaluations + result.evaluations, searches + 1
            exact = result.exact if self.batch is None else self.batch.exact
        return steps, evaluations, exact, searches

    def finish(self, found: str, failure: str | None = None) -> list[Reconstruction]:
        if self.batch is not None:
            return self.finish_batch(found, failure)
        distance, graph, label = self.best
        if graph is None:
            if self.expired():
                raise AttackTimeout(f"time budget of {self.ctx.budget.seconds:g} s spent, no graph yet")
            raise AttackFailed(failure or "the search evaluated no graph")
        exact = distance < self.exact_tol
        self.info.update(found=found if exact else f"{found}:best_partial", exact=int(exact),
                         gradient_distance=distance, num_nodes_found=graph.num_nodes,
                         gradient_evaluations=self.scorer.evaluations)
        return [self.reconstruction(graph, label)]

    def finish_batch(self, found: str, failure: str | None) -> list[Reconstruction]:
        """One reconstruction per member of the best batch (the bench assigns them to the true
        graphs); every member carries the whole batch's distance and exactness."""
        distance, members = self.batch.reading()
        if not members:
            if self.expired():
                raise AttackTimeout(f"time budget of {self.ctx.budget.seconds:g} s spent, no batch yet")
            raise AttackFailed(failure or f"no batch of {self.batch_size} graphs among "
                                          f"{len(self.batch.graphs)} complete graphs built")
        exact = distance < self.exact_tol
        self.info.update(found=found if exact else f"{found}:best_partial", exact=int(exact),
                         gradient_distance=distance, batch_size=self.batch_size,
                         batch_candidates=len(self.batch.graphs), batch_candidates_dropped=self.batch.dropped,
                         batch_members_recognised=len(self.peeling.members) if self.peeling else 0,
                         gradient_evaluations=self.scorer.evaluations)
        return [self.reconstruction(graph, label, num_nodes_found=graph.num_nodes) for graph, label in members]

    def reconstruction(self, graph: PartialGraph, label: int, **info) -> Reconstruction:
        x = self.scorer.type_rows[list(graph.types)].float()
        adj = torch.zeros(graph.num_nodes, graph.num_nodes)
        for u, w in graph.edges():
            adj[u, w] = adj[w, u] = 1.0
        return Reconstruction(x=x, adj=adj, num_nodes=graph.num_nodes, label=label, info={**self.info, **info})

