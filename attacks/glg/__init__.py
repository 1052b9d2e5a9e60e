"""GLG, Graph Leakage from Gradients (Sinha, Liu, Du, Shen, "Gradient Inversion Attack on Graph
Neural Networks", arXiv:2411.19440): the closed-form results so far (``analytic``)."""
