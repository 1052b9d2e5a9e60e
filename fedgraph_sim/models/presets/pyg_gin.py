"""The GIN of PyG's TU examples (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019;
PyTorch Geometric's ``examples/gin.py``) without their batch norm and dropout: 3 GIN layers of
width 64 over 2-layer MLPs, ReLU after each, sum pooling and an MLP head."""

PAPER = "Xu et al., GIN, ICLR 2019 (PyG's example)"
OPTIONS = dict(conv="gin", layers=3, hidden=64, pool="sum", readout="mlp")
