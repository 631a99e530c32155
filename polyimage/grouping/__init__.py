"""Choosing schedules: the machine model, the cost of a group with its tile sizes, the DP
grouping, `schedule="auto"` (auto.py) which puts them together, and the greedy baselines."""

from .cost import GroupCost, Weights, group_cost
from .dp import FusionDag, GroupingStats, dp_grouping, incremental_grouping
from .machine import Machine

__all__ = [
    "FusionDag",
    "GroupCost",
    "GroupingStats",
    "Machine",
    "Weights",
    "dp_grouping",
    "group_cost",
    "incremental_grouping",
]
