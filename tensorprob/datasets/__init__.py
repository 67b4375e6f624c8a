"""Shipped datasets and planted-model generators."""
from ._shipped import load_keel, load_mnist_subset
from ._synthetic import (
    LatentClassSample,
    gaussian_mixture_gmi_bound,
    make_gaussian_mixture,
    make_heterogeneous,
    make_latent_class,
    make_tree_model,
    make_xor,
    sample_from_factors,
)

__all__ = [
    "LatentClassSample",
    "gaussian_mixture_gmi_bound",
    "load_keel",
    "load_mnist_subset",
    "make_gaussian_mixture",
    "make_heterogeneous",
    "make_latent_class",
    "make_tree_model",
    "make_xor",
    "sample_from_factors",
]
