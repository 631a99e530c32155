"""Concrete schedules: which stages run together and with which tile sizes."""
from .plan import GroupSchedule, Schedule, ScheduleError

__all__ = ["GroupSchedule", "Schedule", "ScheduleError"]
