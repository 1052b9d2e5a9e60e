"""FedGIG (Xiao, Li, Qi, Wang, Li, "FedGIG: Graph Inversion from Gradient in Federated Learning",
arXiv:2412.18513): the adjacency-constraining module (``constraint``), the masked graph
auto-encoder (``mgae``) and the ``fedgig`` attack (``attack``)."""

from attacks.fedgig import attack  # noqa: F401  (registers fedgig)
