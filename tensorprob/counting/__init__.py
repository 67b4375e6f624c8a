"""Counting: unique rows with weights, incidence matrices and contingency tables."""
from ._incidence import Incidence, offsets_of, unique_rows
from ._tables import entropy_of_counts, gather_conditional, joint_table, table_information

__all__ = ["Incidence", "entropy_of_counts", "gather_conditional", "joint_table", "offsets_of", "table_information",
           "unique_rows"]
