"""GRAIN (Drencheva et al., ICLR 2025): exact graph reconstruction from one FedSGD gradient."""

from attacks.grain.attack import GRAIN

__all__ = ["GRAIN"]
