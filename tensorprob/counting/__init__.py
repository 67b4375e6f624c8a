"""Counting: contingency tables and their information, by named strategies chosen by one planner.

Every way of counting a table is a strategy (``strategies()`` lists them, by kind of table);
the planner of a run picks the cheapest that applies and records it (``counting_plan_`` of a
fitted selector, :class:`CountingPlan`); ``set_config(counting="reference")`` runs the plain
bincount everywhere. See the contributor guide, "How tables are counted".
"""
from . import _baseline, _batched, _bitsets, _dense, _grouped, _sorted, _sparse  # noqa: F401  (registers the strategies)
from ._incidence import Incidence, offsets_of, unique_rows
from ._planner import CountingPlan, Request, Strategy, strategies
from ._selection import SelectionData
from ._tables import Quantities, TableInformation, entropy_of_counts, gather_conditional, joint_table, table_information

__all__ = ["CountingPlan", "Incidence", "Quantities", "Request", "SelectionData", "Strategy",
           "TableInformation", "entropy_of_counts", "gather_conditional", "joint_table", "offsets_of", "strategies",
           "table_information", "unique_rows"]
