"""Shipped datasets and planted-model generators."""
from ._shipped import load_keel, load_mnist_subset
from ._synthetic import LatentClassSample, make_latent_class, sample_from_factors

__all__ = ["LatentClassSample", "load_keel", "load_mnist_subset", "make_latent_class", "sample_from_factors"]
