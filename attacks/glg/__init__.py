"""GLG, Graph Leakage from Gradients (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on Graph
Neural Networks", arXiv:2411.19440): the closed-form results (``analytic``), the optimisation
attack on graph classification (``optim``) and the ``glg`` attack (``attack``)."""

from attacks.glg import attack  # noqa: F401  (registers glg)
