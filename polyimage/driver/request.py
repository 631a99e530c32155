"""What a compile was asked for: `Asked` holds `compile`'s arguments as given,
`resolve_request` checks them into a `Request` (the stage graph, estimates, constraints,
weights, machine model), the inputs of every pass and everything the compile cache keys on
(record.py); `PassTimer` times each step of a compile."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np

from ..config import Options
from ..dsl import expr as E
from ..errors import ArgumentError, ArgumentTypeError, PipelineError, WeightsWarning
from ..graph.dag import StageGraph, build_graph
from ..grouping.machine import Machine, cpu_model
from ..grouping.weights import foreign_weights, resolve_weights
from ..jit.calibrate import load_calibration
from ..jit.toolchain import facts_for

log = logging.getLogger("polyimage")
# compiles that take longer than this report each pass as it ends (the command line shows them)
progress = logging.getLogger("polyimage.progress")
PROGRESS_AFTER_SECONDS = 1.0
PROGRESS_MIN_PASS_SECONDS = 0.05

DEFAULT_ESTIMATE = 1024


@dataclass(frozen=True, eq=False)
class Asked:
    """What `compile` was called with, as given (its parameters are these fields, written
    once more in its signature): resolve_request checks it into a Request; a compile made
    again (another schedule, the background's quick options) replaces a field."""

    outputs: Any
    estimates: Any = None
    constraints: Any = ()
    name: str | None = None
    schedule: Any = "auto"
    inline: bool = True
    options: Options | None = None
    weights: Any = None
    dump: Any = None
    build: bool = True
    background: bool = False

    @classmethod
    def of(cls, arguments: Mapping) -> Asked:
        """The fields of `compile`'s `arguments` (its locals), with check, march, contract
        and reassociate folded into the options where given."""
        options = arguments["options"]
        check, march = arguments.get("check"), arguments.get("march")
        contract, reassociate = arguments.get("contract"), arguments.get("reassociate")
        if any(flag is not None for flag in (check, march, contract, reassociate)):
            options = options or Options.from_env()
        if check is not None:
            options = dataclasses.replace(options, check=bool(check))
        if march is not None:
            options = options.for_march(march)
        if contract is not None:
            options = options.for_contract(contract)
        if reassociate is not None:
            options = options.for_reassociate(reassociate)
        fields = {name: arguments[name] for name in cls.__dataclass_fields__}
        return cls(**{**fields, "options": options})


@dataclass(frozen=True, eq=False)
class Request:
    """What a compile was asked for, checked and resolved: the inputs of every pass and of the
    cache key. `graph` is the pipeline as written (calls are checked against it); `schedule`
    is the argument as given (a name from SCHEDULES, a Schedule or its text). Compared by
    identity: DSL expressions have no truth value (record.compile_key says when two agree).
    Kept as a Compiled record's `request`."""

    graph: StageGraph
    name: str
    estimates: dict
    assumed: tuple
    param_values: dict
    constraints: tuple
    schedule: object
    inline: bool
    options: Options
    weights: Any  # Weights for auto and greedy-cost, else None
    weights_origin: str | None
    machine: Machine
    machine_origin: str
    scalar_stages: tuple = ()  # left scalar by an earlier build of this request: priced so
    profile: bool = False  # a timer around every group and loop nest (Pipeline.profile)


class PassTimer:
    """The seconds of every pass of one compile, logged as each ends; a compile running longer
    than `after_seconds` reports each pass of at least `min_pass_seconds` to the progress log."""

    def __init__(
        self,
        name: str = "pipeline",
        after_seconds: float = PROGRESS_AFTER_SECONDS,
        min_pass_seconds: float = PROGRESS_MIN_PASS_SECONDS,
    ) -> None:
        self.seconds: dict[str, float] = {}
        self.name, self._started = name, time.perf_counter()
        self.after_seconds, self.min_pass_seconds = after_seconds, min_pass_seconds

    @contextlib.contextmanager
    def __call__(self, pass_name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        took = self.seconds[pass_name] = time.perf_counter() - start
        log.debug("%s: %.3f s", pass_name, took)
        elapsed = time.perf_counter() - self._started
        if elapsed > self.after_seconds and took >= self.min_pass_seconds:
            progress.info(
                "%s: %s done in %.2f s (%.1f s so far)", self.name, pass_name, took, elapsed
            )


def pipeline_name(asked: Asked, graph: StageGraph | None = None) -> str:
    """The name asked for, else the first output's (the C entry is `pipeline_<name>`): of
    the `graph` built from the outputs where given, else read off them for a label before
    it is built."""
    if asked.name is not None:
        if not (isinstance(asked.name, str) and asked.name.isidentifier()):
            raise ArgumentError(f"pipeline name must be an identifier, got {asked.name!r}")
        return asked.name
    if graph is not None:
        return graph.outputs[0]
    outputs = asked.outputs if isinstance(asked.outputs, (list, tuple)) else [asked.outputs]
    return str(getattr(outputs[0], "name", "pipeline")) if outputs else "pipeline"


def resolve_request(asked: Asked, timer: PassTimer) -> Request:
    """What `asked` means, checked: the stage graph (the build_graph pass), estimates and
    constraints against its parameters, the weights (auto and greedy-cost only) and the
    machine model (the machine_model step: the C compiler's target, asked once per
    compiler and flags, and the calibration kept for this CPU)."""
    options = asked.options or Options.from_env()
    with timer("build_graph"):
        graph = build_graph(asked.outputs)
    name = pipeline_name(asked, graph)
    estimates = check_estimates(graph, asked.estimates or {})
    param_values, assumed = resolve_estimates(graph, estimates)
    weights, weights_origin = None, None
    if asked.schedule in ("auto", "greedy-cost"):
        weights, weights_origin = resolve_weights(asked.weights, options)
        if weights_origin.startswith("weights file"):
            note = foreign_weights(options.weights_file, cpu_model(), options.march)
            if note:
                warnings.warn(note, WeightsWarning, stacklevel=5)
    with timer("machine_model"):
        machine, machine_origin = target_machine(options)
    return Request(
        graph=graph,
        name=name,
        estimates=estimates,
        assumed=assumed,
        param_values=param_values,
        constraints=check_constraints(graph, asked.constraints),
        schedule=asked.schedule,
        inline=bool(asked.inline),
        options=options,
        weights=weights,
        weights_origin=weights_origin,
        machine=machine,
        machine_origin=machine_origin,
    )


def target_machine(options: Options) -> tuple:
    """(Machine, where its operation cost came from) for the host under `options`: the vector
    width of the compiler's target, the figures `polyimage calibrate` kept for this CPU and
    target if any, then the overrides of `options.machine` (any field of Machine: a test or a
    bench can plan for a machine fixed whole, vector width and op cost included)."""
    facts = facts_for(options)
    calibration = load_calibration(options)
    measured = calibration.machine_fields() if calibration else {}
    origin = (
        "op cost set by the options' machine model"
        if "op_bytes" in options.machine
        else calibration.describe()
        if calibration
        else "op cost of the reference machine (run `polyimage calibrate` to measure this one)"
    )
    fields = {"vector_bytes": facts.vector_bytes, **measured, **options.machine}
    return Machine.detect(**fields), origin


def resolve_estimates(graph: StageGraph, estimates: dict) -> tuple:
    """(a value for every parameter, the names assumed): the estimate where given; a parameter
    that sizes a domain without one is assumed DEFAULT_ESTIMATE; the others never reach the
    optimizer, and get 1."""
    sizing = {
        p.name
        for s in graph.stages
        for e in _extent_exprs(s.func)
        for p in E.free_symbols(e, E.Parameter)
    }
    values, assumed = {}, []
    for p in graph.parameters:
        if p.name in estimates:
            values[p.name] = estimates[p.name]
        elif p.name in sizing:
            values[p.name] = DEFAULT_ESTIMATE
            assumed.append(p.name)
        else:
            values[p.name] = 1 if p.typ.is_int else 1.0
    return values, tuple(assumed)


def _extent_exprs(func: Any) -> Iterator[Any]:
    """The bounds of `func`'s intervals (and reduction intervals) and its extents."""
    intervals = func.intervals + getattr(func, "reduction_intervals", ())
    yield from (bound for iv in intervals for bound in (iv.lb, iv.ub))
    yield from getattr(func, "extents", ())


def _param_by_name(graph: StageGraph, key: Any, what: str) -> Any:
    name = key.name if isinstance(key, E.Parameter) else key
    for p in graph.parameters:
        if p.name == name:
            return p
    raise PipelineError(
        f"{what} names {name!r}, which is not a parameter of the pipeline "
        f"({', '.join(p.name for p in graph.parameters) or 'none'})"
    )


def check_estimates(graph: StageGraph, estimates: Mapping) -> dict:
    """{parameter name: estimate}, each naming a parameter of `graph`, integers for integers."""
    checked = {}
    for key, value in estimates.items():
        p = _param_by_name(graph, key, "estimates")
        if p.typ.is_int and not isinstance(value, (int, np.integer)):
            raise ArgumentTypeError(f"estimate of {p.name} must be an integer, got {value!r}")
        checked[p.name] = value
    return checked


def check_constraints(graph: StageGraph, constraints: Any) -> tuple:
    """The constraints, each a Condition on parameters of `graph` only."""
    for cond in constraints:
        if not isinstance(cond, E.BoolExpr):
            raise ArgumentTypeError(f"constraints must be Conditions on Parameters, got {cond!r}")
        for node in E.walk(cond):
            if isinstance(node, (E.Variable, E.Reference)) and not isinstance(node, E.Parameter):
                raise ArgumentTypeError(
                    f"constraint `{cond}` may only use Parameters, not `{node}`"
                )
            if isinstance(node, E.Parameter):
                _param_by_name(graph, node, f"constraint `{cond}`")
    return tuple(constraints)
