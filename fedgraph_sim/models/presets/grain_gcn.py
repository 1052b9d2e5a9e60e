"""GRAIN's GCN (Drencheva et al., "GRAIN: Exact Graph Reconstruction from Gradients", ICLR 2025,
App. C): 2 GCN layers of width 300 without bias, ReLU after the first only, and a per-node MLP
readout (300, 64) over ``[X_0 || H_2]`` whose logits are mean-pooled."""

PAPER = "Drencheva et al., GRAIN, ICLR 2025"
OPTIONS = dict(conv="gcn", layers=2, hidden=300, conv_bias=False, last_activation=False, readout="mlp",
               readout_hidden=[300, 64], readout_input="concat_input", readout_placement="per_node")
