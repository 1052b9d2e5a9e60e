"""FedGIG's victim (Xiao et al., "FedGIG: Graph Inversion from Gradient in Federated Learning",
arXiv 2412.18513): a 2-layer GCN of width 100, mean pooling, a linear classifier."""

PAPER = "Xiao et al., FedGIG, arXiv 2412.18513"
OPTIONS = dict(conv="gcn", layers=2, hidden=100, pool="mean", readout="linear")
