"""Compile-time bounds checking (placeholder, replaced by the isl check below)."""


def check_bounds(graph, constraints):
    return []
