"""Every app under hand-written schedules (all fused, two levels, chunks of a few stages, odd
tile sizes) gives the interpreter's result (which the compiled apps' tests check against NumPy).

Each app runs RUN_PER_APP of the schedules, a window that moves by one schedule from one app to
the next (each schedule meets two apps in five, every app two schedules: each C build is most
of this file's time); every schedule of every app is planned, and must tile something."""

import pytest
from oracle import assert_same

import polyimage
from polyimage import GroupSchedule, Schedule
from polyimage.apps import APP_NAMES, load_app
from polyimage.apps.inputs import bundled
from polyimage.io import load_image
from polyimage.schedule.plan import tile_rank
from polyimage.schedule.tiling import TiledGroup


def chunks(graph, size, tiles):
    """Consecutive runs of `size` stages of the topological order, each tiled by `tiles`
    (a function of the group's tile rank)."""
    names = [s.name for s in graph.computed]
    groups = []
    for start in range(0, len(names), size):
        stages = tuple(names[start : start + size])
        groups.append(GroupSchedule(stages, tiles(tile_rank(graph, stages))))
    return Schedule(tuple(groups))


def sizes(*last, rank):
    """`rank` tile sizes ending with `last`, padded in front with its first value."""
    return ((last[0],) * rank + last)[-rank:]


SCHEDULES = {
    "all fused, small tiles": lambda g: chunks(g, 10**6, lambda r: (sizes(3, 7, 16, rank=r),)),
    "all fused, two levels": lambda g: chunks(
        g, 10**6, lambda r: (sizes(2, 16, 64, rank=r), sizes(1, 4, 64, rank=r))
    ),
    "chunks of 3": lambda g: chunks(g, 3, lambda r: (sizes(2, 9, 33, rank=r),)),
    "pairs, one-pixel tiles": lambda g: chunks(g, 2, lambda r: ((1,) * r,)),
    "one stage per group": lambda g: chunks(g, 1, lambda r: (sizes(4, 8, 32, rank=r),)),
}


RUN_PER_APP = 2


def scheduled_runs():
    """(app, schedule) pairs: each app with RUN_PER_APP consecutive schedules of the sorted
    list, starting one further along for each app."""
    names = sorted(SCHEDULES)
    return [
        (app, names[(k + j) % len(names)])
        for k, app in enumerate(APP_NAMES)
        for j in range(RUN_PER_APP)
    ]


@pytest.fixture(scope="module", params=APP_NAMES)
def app_run(request):
    app = load_app(request.param)
    size = {k: max(5, v // 3) for k, v in app.SMALL_SIZE.items()}
    inputs = app.prepare([load_image(bundled(p)) for p in app.PHOTOS], size)
    outputs, _ = app.build()
    # the stage graph the schedules group (planned only), and the interpreter's result: a
    # build of the whole app as the reference cost more than a third of this file's time
    graph = polyimage.compile(outputs, name=app.NAME, schedule="naive", build=False).stage_graph
    expected = polyimage.interpret(outputs, **inputs, **app.DEFAULTS)
    return app, outputs, inputs, graph, expected


@pytest.mark.parametrize("app_run, schedule", scheduled_runs(), indirect=["app_run"])
def test_app_under_schedule_matches_the_interpreter(app_run, schedule):
    app, outputs, inputs, graph, expected = app_run
    sched = SCHEDULES[schedule](graph)
    pipe = polyimage.compile(outputs, name=app.NAME, schedule=sched)
    for threads in (1, 2):
        result = pipe(threads=threads, **inputs, **app.DEFAULTS)
        pairs = zip(result, expected) if isinstance(result, tuple) else [(result, expected)]
        for actual, wanted in pairs:
            assert_same(actual, wanted, f"{app.NAME} under {schedule}, {threads} threads")
    assert pipe.schedule == sched
    assert Schedule.parse(str(pipe.schedule)) == sched


def test_schedules_tile_something_in_every_app(app_run):
    """The schedules really tile: some group of every app is tiled under one of them."""
    app, outputs, inputs, graph, expected = app_run
    tiled = 0
    for make in SCHEDULES.values():
        pipe = polyimage.compile(outputs, name=app.NAME, schedule=make(graph), build=False)
        tiled += sum(isinstance(p, TiledGroup) for p in pipe.group_plans)
    assert tiled > 0
