"""Counting: unique rows with weights, incidence matrices, contingency tables and their information."""
from ._incidence import Incidence, offsets_of, unique_rows
from ._selection import SelectionData
from ._tables import TableInformation, entropy_of_counts, gather_conditional, joint_table, table_information

__all__ = ["Incidence", "SelectionData", "TableInformation", "entropy_of_counts", "gather_conditional", "joint_table",
           "offsets_of", "table_information", "unique_rows"]
