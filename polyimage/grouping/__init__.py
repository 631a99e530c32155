"""Choosing schedules: the machine model and the DP grouping (the cost model is to come)."""
from .dp import FusionDag, GroupingStats, dp_grouping, incremental_grouping
from .machine import Machine

__all__ = ["FusionDag", "GroupingStats", "Machine", "dp_grouping", "incremental_grouping"]
