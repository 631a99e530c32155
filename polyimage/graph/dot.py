"""Graphviz text of the stage DAG, and its SVG where Graphviz's `dot` is installed."""

from __future__ import annotations

import shutil
import subprocess

from .dag import StageGraph

_PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)


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
        attrs = [f"shape={shape}", f'label="{stage.name}"']
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


def render_svg(dot_text: str):
    """SVG text of a Graphviz graph through the `dot` command, or None where it is missing or
    fails."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        done = subprocess.run(
            [dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and "<svg" in done.stdout else None
