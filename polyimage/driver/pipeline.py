"""The callable `Pipeline`: a compile's record (`pipe.compiled`) and its built module; it
reads what it shows (schedule, plans, stage graphs, warnings...) off the record, binds and
checks a call's arguments, shares the cores among calls in flight and keeps each call's
intermediate buffers for the next. `compile` (driver/compiling.py) makes it."""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..calls import CALLS, call_threads
from ..errors import ArgumentError, PipelineError
from ..graph.arguments import (
    CopiedInput,
    bind_arguments,
    bind_positional,
    check_threads,
    output_arrays,
)
from ..graph.dot import render_svg, to_dot
from ..grouping.cost import CostModel
from ..jit.build import build
from ..schedule.memory import MemoryEstimate
from ..tools.profile import Profile, profile_run
from .lower import Compiled, profiled

if TYPE_CHECKING:
    import os

    from numpy.typing import ArrayLike

    from ..jit.build import BuildInfo, Kernel
    from ..tools.export import Exported


def _recorded(path: str, doc: str) -> Any:
    """A read-only attribute of a Pipeline read off its record (`"request.graph"`: nested)."""
    names = path.split(".")

    def read(pipe: Pipeline) -> Any:
        value = pipe.compiled
        for name in names:
            value = getattr(value, name)
        return value

    return property(read, doc=doc)


class Pipeline:
    """A compiled pipeline: call it with images and parameters as keyword arguments. It holds
    the `Compiled` record (`compiled`), the built module (`kernel`, None with build=False),
    whether the record came from the cache (`cached`) and the seconds of every pass. Made by
    `compile`."""

    def __init__(
        self,
        compiled: Compiled,
        kernel: Kernel | None = None,
        cached: bool = False,
        pass_seconds: Mapping[str, float] | None = None,
    ):
        self.compiled, self.kernel, self.cached = compiled, kernel, cached
        self.pass_seconds = dict(pass_seconds or {})
        self._bindings: dict = {}
        self._workspaces: list = []
        self._profiled: Kernel | None = None
        # the inputs calls copied to make them contiguous, by name (the latest call's)
        self._copied: dict[str, CopiedInput] = {}
        self._copied_lock = threading.Lock()
        self._ops_per_point: float | None = None

    graph = _recorded("request.graph", "The pipeline as written (calls are checked against it).")
    name = _recorded("request.name", "The pipeline's name; the C entry is `pipeline_<name>`.")
    options = _recorded("request.options", "The Options it was compiled under.")
    estimates = _recorded("request.estimates", "The estimates given, by parameter name.")
    assumed = _recorded("request.assumed", "Parameters sizing a domain with no estimate.")
    param_values = _recorded("request.param_values", "Every parameter's value for planning.")
    constraints = _recorded("request.constraints", "Conditions every call satisfies.")
    weights = _recorded("request.weights", "Cost weights (auto and greedy-cost), else None.")
    weights_origin = _recorded("request.weights_origin", "Where the weights came from.")
    machine = _recorded("request.machine", "The machine model the schedule was planned for.")
    machine_origin = _recorded("request.machine_origin", "Where its op cost came from.")
    stage_graph = _recorded("stage_graph", "The stages code is generated from (after inlining).")
    branch_free = _recorded("branch_free", "Stages whose Cases run without branches.")
    schedule = _recorded("schedule", "The Schedule compiled.")
    group_plans = _recorded("group_plans", "Each group's plan: what code generation ran.")
    auto = _recorded("auto", "The auto search (schedule, plans, costs, stats), else None.")
    reductions = _recorded("reductions", "How each Reduction runs, by stage.")
    plain_stages = _recorded("plain_stages", "Stages generated as one plain loop nest.")

    @property
    def inlined(self) -> list:
        """(producer, consumers, rule) of every stage inlined, in order."""
        return list(self.compiled.inlined)

    @property
    def warnings(self) -> list:
        """The bounds check's warnings (reads of points no Case defines)."""
        return list(self.compiled.warnings)

    @property
    def cmodule(self) -> Any:
        """The generated C module: kernel.c, its translation units and its C tree."""
        return self.compiled.cmodule

    def release(self) -> None:
        """Free the memory calls keep for the next ones (intermediate buffers, scratchpads);
        the next call allocates afresh. Collecting the Pipeline frees it too."""
        while self._workspaces:
            self._built().release(self._workspaces.pop())

    def memory(self) -> MemoryEstimate:
        """Bytes of intermediate buffers at the estimates: full buffers and scratchpads."""
        return self.compiled.memory()

    @property
    def c_source(self) -> str:
        """The generated C translation unit."""
        return self.cmodule.source

    def report(self, vectorization: bool = False) -> str:
        """What the compiler made of the pipeline, as text to print: the stages after inlining
        with their domains, the parameter context, what was inlined, the schedule, warnings,
        inputs calls had to copy (not C-contiguous) and pass times.

        Args:
            vectorization: also say whether the C compiler vectorized each innermost loop
                and why not (read from its build's log: see `scalar_stages`).

        Returns:
            The report, several lines of text.
        """
        from ..tools.report import pipeline_report

        with self._copied_lock:
            copied = tuple(self._copied.values())
        return pipeline_report(self.compiled, self.kernel, self.pass_seconds, vectorization, copied)

    @property
    def origin(self) -> str:
        """How this compile was made: "loaded from the cache" (no pass ran) or "compiled"."""
        return "loaded from the cache" if self.cached else "compiled"

    def __repr__(self) -> str:
        groups = len(self.schedule.groups)
        return (
            f"<Pipeline {self.name}: {len(self.stage_graph.computed)} stages in {groups} "
            f"group{'s' if groups != 1 else ''}, {self.origin}>"
        )

    def _repr_html_(self) -> str:
        """Jupyter shows the stage graph (SVG through Graphviz's `dot` where it is installed),
        else the text report."""
        svg = render_svg(self.to_dot())
        if svg is not None:
            return svg
        return f"<pre>{html.escape(self.report())}</pre>"

    def to_dot(self) -> str:
        """The stage DAG as compiled (after inlining) as Graphviz text, a box per group titled
        with its tile sizes."""
        groups = self.schedule.groups
        labels = [
            f"group {i}: "
            + (" then ".join("x".join(map(str, t)) for t in g.tile_sizes) or "untiled")
            for i, g in enumerate(groups)
        ]
        return to_dot(self.stage_graph, self.name, [g.stages for g in groups], labels)

    @property
    def build_info(self) -> BuildInfo:
        """Cache key, module path and whether the build came from the cache."""
        return self._built().info

    @property
    def scalar_stages(self) -> tuple | None:
        """The stages whose innermost loop the C compiler did not vectorize, read from its
        build's report (polyimage.tools.vectorization; built again only when that build's log lacks
        it); None where the compiler is not gcc, whose report this reads."""
        from ..tools.vectorization import scalar_stages, vectorization

        try:
            return scalar_stages(vectorization(self))
        except ArgumentError:
            return None

    def _built(self) -> Kernel:
        if self.kernel is None:
            raise PipelineError(
                f"{self.name} was compiled with build=False: it can be exported, not called"
            )
        return self.kernel

    def __call__(
        self,
        *images: ArrayLike,
        out: ArrayLike | Sequence[ArrayLike] | None = None,
        threads: int | None = None,
        **arguments: ArrayLike,
    ) -> Any:
        """Run on the given images and parameters. Intermediate buffers are kept for the next
        call (see `release`); calls from several threads at once each use their own.

        Args:
            *images: the input image, by position, for a pipeline with one input.
            out: preallocated output arrays (one, or a sequence in the outputs' order), of
                the outputs' shapes and types, written in place.
            threads: the threads of this call (at most MAX_THREADS); by default one for a
                call of little work, else the cores or OMP_NUM_THREADS, shared among the
                calls running in this process at the time.
            **arguments: each input image (a NumPy array of its type) and each Parameter
                by name; sizes that the images' shapes give may be left out.

        Returns:
            The output array, or a tuple of them in the outputs' order for several outputs.

        Raises:
            ArgumentError: a missing or unknown argument, a shape or value that breaks the
                pipeline's constraints, or `out` of the wrong shape.
            ArgumentTypeError: an array of the wrong type (uint8 where float32 is expected).
        """
        _, outputs, nthreads, params, inputs = self._prepare_call(images, out, threads, arguments)
        if not nthreads:
            nthreads = call_threads(self._operations(inputs + outputs))
        pool = self._workspaces
        workspace = pool.pop() if pool else self._built().workspace()
        try:
            with CALLS.share(nthreads) as share:
                self._built()(workspace, share, params, inputs, outputs)
        finally:
            pool.append(workspace)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _operations(self, arrays: Sequence[Any]) -> float:
        """The operations a call on `arrays` (its inputs and outputs) makes, as the cost model
        counts them (grouping.cost): their count at the estimates, scaled by the elements of
        the arrays over theirs there; a call of few runs on one thread (calls.call_threads)."""
        if self._ops_per_point is None:
            graph = self.stage_graph
            model = CostModel(graph, self.param_values, self.machine)
            ops = sum(model.points(s.name) * model.ops(s.name) for s in graph.computed)
            names = (*self.cmodule.inputs, *self.cmodule.outputs)
            self._ops_per_point = ops / max(sum(model.points(n) for n in names), 1)
        return self._ops_per_point * sum(a.size for a in arrays)

    def export(self, folder: str | os.PathLike[str], name: str | None = None) -> Exported:
        """Write this pipeline into `folder` as a C library (source, header, static and shared
        library, README, manifest), built as this pipeline was; `polyimage.load(folder)` calls
        it back without a compiler (see Deploying a pipeline).

        Args:
            folder: the folder to write, made if need be.
            name: the entry function's name (default: the pipeline's name).

        Returns:
            An `Exported` record: the folder, the entry's name and the files written.
        """
        from ..tools.export import export_pipeline

        return export_pipeline(self.compiled, folder, name)

    def _prepare_call(self, images: tuple, out: Any, threads: int | None, arguments: dict) -> tuple:
        """(binding, output arrays, thread count, parameter values and input arrays in the
        entry's order) of a call, every argument checked; inputs it copies are noted for
        `report()`."""
        if images:
            arguments = bind_positional(self.graph, images, arguments)
        binding = bind_arguments(self.graph, arguments, self.constraints, self._bindings)
        if binding.copied:
            with self._copied_lock:
                self._copied.update((c.name, c) for c in binding.copied)
        outputs = output_arrays(self.graph, out, binding)
        params = [binding.params[p] for p in self.cmodule.params]
        inputs = [binding.arrays[n] for n in self.cmodule.inputs]
        return binding, outputs, check_threads(threads), params, inputs

    def profile(
        self, *images: ArrayLike, runs: int = 5, threads: int | None = None, **arguments: ArrayLike
    ) -> Profile:
        """Time the groups and stages of a call on these arguments (a separate build with
        timers compiled in, made once; the normal build has none). Print the result.

        Args:
            *images: the input image by position, as in a call.
            runs: the calls timed after one warm-up; the profile gives their mean.
            threads: the threads of each call, as in a call.
            **arguments: the images and Parameters by name, as in a call.

        Returns:
            A `Profile`: the time of each group and stage; print it for a table.
        """
        if self._profiled is None:
            self._profiled = build(profiled(self.compiled).cmodule, self.options)
        call = self._prepare_call(images, None, threads, arguments)
        return profile_run(self.compiled, self._profiled, call, runs)


def listing(names: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
