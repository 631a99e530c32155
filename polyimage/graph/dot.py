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


def to_dot(graph: StageGraph, name: str = "pipeline", groups=None, labels=None) -> str:
    """Stages as nodes (inputs as boxes, outputs doubled), references as edges. Given `groups`
    (lists of stage names), each group is a box of its own, titled by its `labels` entry (say
    "group 0: tiles 32x256") as a legend, its stages filled with the group's colour."""
    colour, member_of = {}, {}
    for i, group in enumerate(groups or ()):
        for stage in group:
            colour[stage], member_of[stage] = _PALETTE[i % len(_PALETTE)], i
    lines = [f'digraph "{name}" {{', "    rankdir=TB;", '    node [fontname="Helvetica"];']
    nodes: dict = {}
    for stage in graph.stages:
        shape = {"image": "box", "reduction": "hexagon"}.get(stage.kind, "ellipse")
        attrs = [f"shape={shape}", f'label="{stage.name}"']
        if stage.name in graph.outputs:
            attrs.append("peripheries=2")
        if stage.name in colour:
            attrs += ["style=filled", f'fillcolor="{colour[stage.name]}"']
        nodes.setdefault(member_of.get(stage.name), []).append(
            f'"{stage.name}" [{", ".join(attrs)}];'
        )
    lines += [f"    {node}" for node in nodes.pop(None, [])]
    for i, group in enumerate(groups or ()):
        title = labels[i] if labels else f"group {i}"
        lines.append(f'    subgraph "cluster_{i}" {{')
        lines.append(
            f'        label="{title}"; labeljust=l; fontname="Helvetica"; color="#999999";'
        )
        lines += [f"        {node}" for node in nodes.get(i, [])]
        lines.append("    }")
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
