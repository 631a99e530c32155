"""The stage DAG."""

from .dag import Stage, StageGraph, build_graph

__all__ = ["Stage", "StageGraph", "build_graph"]
