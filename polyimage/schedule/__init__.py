"""Concrete schedules (which stages run together, with which tile sizes), the plans that turn
a group into tiles and regions, and the memory they need."""

from .plan import GroupSchedule, Schedule, ScheduleError

__all__ = ["GroupSchedule", "Schedule", "ScheduleError"]
