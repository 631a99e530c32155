"""Choosing schedules: the machine model (and, to come, the DP grouping and cost model)."""
from .machine import Machine

__all__ = ["Machine"]
