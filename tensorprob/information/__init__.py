"""Information estimates: entropies and mutual informations of CPD models (exact, Monte-Carlo and
Rao-Blackwellized, batched over models, samples and candidate variables), variational bounds,
independent component analysis (ICA) spacing entropies and minimum spanning tree (MST) bounds.

Plug-in estimates from contingency tables live in :mod:`tensorprob.counting`.
"""
from ._cpd import CPDInformation, Estimate, LatentClassBatch, information, stacked_information
from ._mst import batched_mst, split_and_permute
from ._sampling import draw_codes, sample_from_factors

__all__ = ["CPDInformation", "Estimate", "LatentClassBatch", "batched_mst", "draw_codes", "information",
           "sample_from_factors", "split_and_permute", "stacked_information"]
