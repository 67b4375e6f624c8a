"""Shipped datasets and planted-model generators."""
from .._io import RowChunks, shard_files
from ._shipped import PLANTED_SHAPES, Dataset, list_datasets, load_dataset, load_keel, load_mnist_subset
from ._sparse import make_sparse_corpus
from ._synthetic import (
    LatentClassSample,
    gaussian_mixture_gmi_bound,
    make_gaussian_mixture,
    make_heterogeneous,
    make_latent_class,
    make_planted,
    make_tree_model,
    make_xor,
    sample_from_factors,
)

__all__ = [
    "PLANTED_SHAPES",
    "RowChunks",
    "shard_files",
    "Dataset",
    "list_datasets",
    "load_dataset",
    "make_planted",
    "make_sparse_corpus",
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
