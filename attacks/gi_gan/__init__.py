"""GI-GAN, GraphDLG's generative-prior baseline (GIAS/GGL with a MolGAN generator): the generator
and its WGAN-GP training (``generator``) and the ``gi_gan`` attack (``attack``)."""

from attacks.gi_gan.attack import GIGAN
from attacks.gi_gan.generator import Critic, Generator, Training, gradient_penalty, train_generator

__all__ = ["Critic", "GIGAN", "Generator", "Training", "gradient_penalty", "train_generator"]
