"""Schedules as data: validation against a stage graph, and the JSON round trip."""

import pytest

from polyimage.apps import harris, unsharp_mask
from polyimage.graph import build_graph
from polyimage.schedule import GroupSchedule, Schedule, ScheduleError


@pytest.fixture(scope="module")
def graph():
    outputs, _ = unsharp_mask.build()
    return build_graph(outputs)


def test_naive_schedule_is_valid_and_round_trips(graph):
    schedule = Schedule.naive(graph).validate(graph)
    assert [g.stages for g in schedule.groups] == [("blurx",), ("blury",), ("sharpen",), ("mask",)]
    assert Schedule.from_json(schedule.to_json()) == schedule


def test_fused_two_level_schedule_round_trips(graph):
    schedule = Schedule(
        (GroupSchedule(("blurx", "blury", "sharpen", "mask"), ((3, 64, 512), (1, 8, 256))),)
    ).validate(graph)
    again = Schedule.from_json(schedule.to_json())
    assert again == schedule and again.groups[0].tile_sizes[1] == (1, 8, 256)
    assert "group 0: blurx, blury, sharpen, mask [3x64x512 then 1x8x256]" == str(schedule)


@pytest.mark.parametrize(
    "groups, message",
    [
        ([("blurx", "blury"), ("sharpen",)], "mask in no group"),
        ([("blurx", "blury"), ("blury", "sharpen", "mask")], "blury is in group 0 and group 1"),
        ([("blurx",), ("nope",)], "nope, which is not a stage"),
        ([("img", "blurx", "blury", "sharpen", "mask")], "img, which is an input image"),
        (
            [("blury", "sharpen", "mask"), ("blurx",)],
            r"runs before group 1, which computes its "
            r"producer blurx",
        ),
        ([("blurx", "sharpen"), ("blury",), ("mask",)], r"depend on each other \(a cycle\)"),
        ([()], "group 0 is empty"),
    ],
)
def test_invalid_groupings(graph, groups, message):
    schedule = Schedule(tuple(GroupSchedule(g) for g in groups))
    with pytest.raises(ScheduleError, match=message):
        schedule.validate(graph)


@pytest.mark.parametrize(
    "tiles, message",
    [
        (((0, 8, 8),), r"tile size 0 must be an integer >= 1"),
        (((1, 8.5, 8),), r"tile size 8.5"),
        (((8, 8),), "level 0 has 2 tile sizes, the group's live-outs have 3 dimensions"),
        (((1, 8, 8), (1, 4, 4), (1, 2, 2)), "3 tiling levels; at most 2"),
    ],
)
def test_invalid_tile_sizes(graph, tiles, message):
    schedule = Schedule((GroupSchedule(("blurx", "blury", "sharpen", "mask"), tiles),))
    with pytest.raises(ScheduleError, match=message):
        schedule.validate(graph)


def test_bad_json_is_a_schedule_error():
    with pytest.raises(ScheduleError, match="not a schedule"):
        Schedule.from_json('{"groups": [{"tile_sizes": []}]}')


def test_harris_groups_in_any_valid_order():
    outputs, _ = harris.build()
    g = build_graph(outputs)
    derivatives = ("Ix", "Iy", "Ixx", "Iyy", "Ixy")
    rest = tuple(s.name for s in g.computed if s.name not in derivatives)
    Schedule(
        (GroupSchedule(derivatives, ((32, 256),)), GroupSchedule(rest, ((32, 256),)))
    ).validate(g)
    with pytest.raises(ScheduleError):
        Schedule((GroupSchedule(rest), GroupSchedule(derivatives))).validate(g)
