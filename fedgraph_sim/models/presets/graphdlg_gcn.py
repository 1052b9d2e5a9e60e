"""GraphDLG's victim (Wei et al., "GraphDLG: Exploring Deep Leakage from Gradients in Federated
Graph Learning", 2026, Sec. 3): a 2-layer GCN of width 16, ReLU after each layer, mean pooling,
a linear classifier. The bench's default model."""

PAPER = "Wei et al., GraphDLG, 2026"
OPTIONS = dict(conv="gcn", layers=2, hidden=16, pool="mean", readout="linear")
