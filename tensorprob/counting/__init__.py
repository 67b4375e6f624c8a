"""Counting: unique rows with weights, incidence matrices and contingency tables."""
from ._incidence import Incidence, offsets_of, unique_rows

__all__ = ["Incidence", "offsets_of", "unique_rows"]
