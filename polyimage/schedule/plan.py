"""Schedules: groups of stages in execution order, each with one or two levels of tile sizes.

A Schedule is plain data that round-trips through JSON, so users can save, edit and reuse one
(Halide style). `validate(graph)` checks it against a stage graph and raises ScheduleError with
the reason: a stage in no group or in two, an unknown stage, a group order that runs a consumer
before its producer, a grouping that creates a cycle, or a bad tile size.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config import is_count
from ..errors import PolyimageError

if TYPE_CHECKING:
    from ..graph.dag import StageGraph

_GROUP_LINE = re.compile(
    r"group \d+:(?P<stages>[^\[]*)\[(?P<tiles>untiled|\d+(x\d+)*"
    r"( then \d+(x\d+)*)?)\]"
)


class ScheduleError(PolyimageError, ValueError):
    """A schedule that cannot be applied to the pipeline, with the reason."""


@dataclass(frozen=True)
class GroupSchedule:
    """Stages computed together; `tile_sizes` holds one tuple per tiling level (outer first),
    each with one size per dimension of the group's live-outs; empty means untiled."""

    stages: tuple[str, ...]
    tile_sizes: tuple[tuple[int, ...], ...] = ()

    def to_dict(self) -> dict:
        return {"stages": list(self.stages), "tile_sizes": [list(t) for t in self.tile_sizes]}

    @classmethod
    def from_dict(cls, data: dict) -> "GroupSchedule":
        return cls(tuple(data["stages"]), tuple(tuple(t) for t in data.get("tile_sizes", ())))


@dataclass(frozen=True)
class Schedule:
    """Groups in execution order: each names the stages it computes together (after
    inlining) and its tile sizes. A compiled pipeline's is `pipe.schedule`, printed one group
    a line; `Schedule.parse` reads that text back, to give `compile(..., schedule=...)`."""

    groups: tuple[GroupSchedule, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        return json.dumps({"groups": [g.to_dict() for g in self.groups]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Schedule":
        try:
            data = json.loads(text)
            return cls(tuple(GroupSchedule.from_dict(g) for g in data["groups"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ScheduleError(f"not a schedule: {exc}") from None

    @classmethod
    def parse(cls, text: str) -> "Schedule":
        """A schedule from the text `str()` prints or from its JSON form (`to_json`).

        Args:
            text: one group a line, `group 0: blurx, blury [3x64x512 then 1x8x256]` (one
                or two levels of tile sizes, or `[untiled]`), or the JSON text.

        Returns:
            The Schedule; `compile` checks it against the pipeline.

        Raises:
            ScheduleError: a line or the JSON is not a schedule.
        """
        if text.lstrip().startswith("{"):
            return cls.from_json(text)
        groups = []
        for number, line in enumerate(text.strip().splitlines(), 1):
            match = _GROUP_LINE.fullmatch(line.strip())
            if not match:
                raise ScheduleError(
                    f"line {number}: expected `group N: stage, ... [tiles]`, got {line.strip()!r}"
                )
            stages = tuple(s.strip() for s in match["stages"].split(",") if s.strip())
            tiles = (
                ()
                if match["tiles"].strip() == "untiled"
                else tuple(
                    tuple(int(t) for t in level.strip().split("x"))
                    for level in match["tiles"].split("then")
                )
            )
            groups.append(GroupSchedule(stages, tiles))
        return cls(tuple(groups))

    @classmethod
    def naive(cls, graph: StageGraph) -> Schedule:
        """One untiled group per computed stage, in topological order.

        Args:
            graph: the stages after inlining (a Pipeline's `stage_graph`).

        Returns:
            The schedule `compile(..., schedule="naive")` uses.
        """
        return cls(tuple(GroupSchedule((s.name,)) for s in graph.computed))

    def __str__(self) -> str:
        lines = []
        for i, group in enumerate(self.groups):
            tiles = " then ".join("x".join(map(str, t)) for t in group.tile_sizes) or "untiled"
            lines.append(f"group {i}: {', '.join(group.stages)} [{tiles}]")
        return "\n".join(lines)

    def validate(self, graph: StageGraph) -> Schedule:
        """Check this schedule against `graph`: every computed stage in exactly one group,
        after the groups of its producers, and tile sizes that fit the group's dimensions.

        Args:
            graph: the stages after inlining (a Pipeline's `stage_graph`).

        Returns:
            This schedule, unchanged.

        Raises:
            ScheduleError: a group is empty, names an unknown or inlined stage, runs before
                a producer's group, or a stage is in two groups or none.
        """
        computed = [s.name for s in graph.computed]
        owner: dict = {}
        for i, group in enumerate(self.groups):
            if not group.stages:
                raise ScheduleError(f"group {i} is empty")
            for name in group.stages:
                if name not in computed:
                    known = (
                        "an input image"
                        if name in {img.name for img in graph.images}
                        else "not a stage of the pipeline"
                    )
                    raise ScheduleError(f"group {i} names {name}, which is {known}")
                if name in owner:
                    raise ScheduleError(f"{name} is in group {owner[name]} and group {i}")
                owner[name] = i
        missing = [n for n in computed if n not in owner]
        if missing:
            raise ScheduleError(f"{', '.join(missing)} in no group")
        for i, group in enumerate(self.groups):
            _check_tiles(i, group, graph)
        for stage in graph.computed:
            for producer in stage.producers:
                if producer in owner and owner[producer] > owner[stage.name]:
                    raise ScheduleError(
                        f"group {owner[stage.name]} ({stage.name}) runs before group "
                        f"{owner[producer]}, which computes its producer {producer}"
                        + _cycle_hint(graph, owner, stage.name, producer)
                    )
        return self


def _cycle_hint(graph: StageGraph, owner: dict, consumer: str, producer: str) -> str:
    """Explain when no order of the groups could work: the groups depend on each other."""
    a, b = owner[consumer], owner[producer]
    for stage in graph.computed:
        if owner[stage.name] == b and any(owner.get(p) == a for p in stage.producers):
            return "; no order works: the two groups depend on each other (a cycle)"
    return ""


def liveouts(graph: StageGraph, stages: tuple[str, ...]) -> tuple:
    """Members of the group `stages` whose values leave it: pipeline outputs and stages read
    by a stage outside the group, in topological order."""
    members = set(stages)
    return tuple(
        s.name
        for s in graph.computed
        if s.name in members
        and (s.name in graph.outputs or any(c not in members for c in s.consumers))
    )


def tile_rank(graph: StageGraph, stages: tuple[str, ...]) -> int:
    """Number of tile sizes per level: the most dimensions among the group's live-outs."""
    return max(graph.stage(n).func.ndim for n in liveouts(graph, stages))


def _check_tiles(i: int, group: GroupSchedule, graph: StageGraph) -> None:
    rank = tile_rank(graph, group.stages)
    for level, sizes in enumerate(group.tile_sizes):
        if len(group.tile_sizes) > 2:
            raise ScheduleError(f"group {i} has {len(group.tile_sizes)} tiling levels; at most 2")
        if len(sizes) != rank:
            raise ScheduleError(
                f"group {i}: level {level} has {len(sizes)} tile sizes, the "
                f"group's live-outs have {rank} dimensions"
            )
        for size in sizes:
            if not is_count(size):
                raise ScheduleError(f"group {i}: tile size {size!r} must be an integer >= 1")
