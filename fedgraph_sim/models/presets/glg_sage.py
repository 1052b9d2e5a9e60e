"""GLG's graph victim (Sinha et al., "Gradient Inversion Attack on Graph Neural Networks",
arXiv 2411.19440, Sec. 3 and Eq. 8): 2 GraphSAGE layers of width 100 with sigmoid activations
and the flatten readout, the node rows padded to ``flatten_nodes`` and fed to a linear
classifier. ``flatten_nodes`` depends on the data and is set beside the preset."""

PAPER = "Sinha et al., GLG, arXiv 2411.19440"
OPTIONS = dict(conv="sage", layers=2, hidden=100, activation="sigmoid", pool="flatten")
