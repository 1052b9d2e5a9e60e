"""GRAIN's GAT (Drencheva et al., "GRAIN: Exact Graph Reconstruction from Gradients", ICLR 2025,
App. C): 2 GAT layers of width 300 with 2 heads and residual projections, ELU after the first
only, and a per-node MLP readout (300, 300) whose logits are mean-pooled."""

PAPER = "Drencheva et al., GRAIN, ICLR 2025"
OPTIONS = dict(conv="gat", layers=2, hidden=300, heads=2, residual=True, activation="elu", last_activation=False,
               readout="mlp", readout_hidden=[300, 300], readout_placement="per_node")
