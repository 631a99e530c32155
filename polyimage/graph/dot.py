"""Graphviz text of the stage DAG (returns a string; rendering is left to `dot`)."""
from __future__ import annotations

from .dag import StageGraph

_PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69",
            "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f")


def to_dot(graph: StageGraph, name: str = "pipeline", groups=None) -> str:
    """Stages as nodes (inputs as boxes, outputs doubled), references as edges; nodes are filled
    with one colour per group when `groups` (lists of stage names) is given."""
    colour = {}
    for i, group in enumerate(groups or ()):
        for stage in group:
            colour[stage] = _PALETTE[i % len(_PALETTE)]
    lines = [f'digraph "{name}" {{', "    rankdir=TB;", '    node [fontname="Helvetica"];']
    for stage in graph.stages:
        shape = {"image": "box", "reduction": "hexagon"}.get(stage.kind, "ellipse")
        attrs = [f'shape={shape}', f'label="{stage.name}"']
        if stage.name in graph.outputs:
            attrs.append("peripheries=2")
        if stage.name in colour:
            attrs += ["style=filled", f'fillcolor="{colour[stage.name]}"']
        lines.append(f'    "{stage.name}" [{", ".join(attrs)}];')
    for stage in graph.stages:
        for producer in stage.producers:
            lines.append(f'    "{producer}" -> "{stage.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
