"""Halide versions of the apps under Halide's autoschedulers (used only when halide imports)."""
from __future__ import annotations

AUTOSCHEDULERS = ("Mullapudi2016", "Adams2019", "Li2018")


def halide_variants(name: str, inputs: dict, params: dict, threads, report=print) -> dict:
    """{"halide:<autoscheduler>": callable} for each autoscheduler that schedules the app."""
    return {}
