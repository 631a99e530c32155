"""The random pipeline generator's entry points: `random_pipeline(seed)` and
`random_mixed_pipeline(seed)`, which draw the stage kinds in turn and choose the outputs, and
`describe`, the pipeline as text."""

from __future__ import annotations

import numpy as np

from polyimage import (
    Image,
    Max,
    Reduce,
    Reduction,
)
from polyimage.dsl import expr as E
from polyimage.dsl.printer import format_expr
from polyimage.graph import build_graph
from polyimage.graph.dag import definition_exprs

from .neighbourhood_stages import NeighbourhoodStages
from .reshaping_stages import ReshapingStages
from .stage_domains import MAX_STAGES, SIZES, RandomPipeline


class _Builder(NeighbourhoodStages, ReshapingStages):
    """A pipeline of one seed: its stage kinds drawn by weight (OPS), then its outputs."""

    # -- the pipeline --------------------------------------------------------------------

    OPS = (
        ("pointwise", 2),
        ("binary", 3),
        ("stencil", 5),
        ("downsample", 2),
        ("upsample", 1.5),
        ("cases", 2),
        ("select", 1.5),
        ("expand", 1.5),
        ("collapse", 1.5),
        ("shuffle", 0.8),
        ("lookup", 1),
        ("reduction", 1),
        ("scatter", 0.8),
        ("convert", 0.7),
    )

    def build_mixed(self) -> RandomPipeline:
        """A 3-D stage, one channel of it at half resolution (2-D, stopping short and read
        with an offset) and a 3-D stage reading the first (and maybe the second): a group of
        them tiles 3-D while one live-out lacks the channel dimension."""
        rng = self.rng
        self.sizes = rng.choice(SIZES[2:])  # room for a stencil and half a resolution
        self.arguments.update(R=self.sizes[0], C=self.sizes[1])
        self.add_input("cxy")
        self.op = "stencil"
        p = self.op_stencil()
        self.op = "downsample"
        half = self.op_downsample(p, channel=rng.randint(0, 2))
        self.op = "binary"
        top = self.make_func(p.dims)
        a = self.source(self.read(p, p.dims), p)
        if rng.random() < 0.5:  # the 2-D stage is read in the group, else only outside
            b = self.source(self.read(half, p.dims, mode="clamp"), half)
            top.defn = [a - b * self.const() if rng.random() < 0.5 else Max(a, b)]
        else:
            top.defn = [self.unary(a)]
        self.add(top, p.dims)
        outputs = [half.func, top] + ([p.func] if rng.random() < 0.3 else [])
        return self._finish(outputs, rng.random() < 0.5)

    def build(self) -> RandomPipeline:
        rng = self.rng
        self.add_input(rng.choice(("xy", "xy", "cxy")))
        if rng.random() < 0.3:
            self.add_input(rng.choice(("xy", "cxy")))
        n_stages = rng.randint(2, MAX_STAGES)
        names, weights = zip(*self.OPS)
        while True:
            while sum(n.kind != "image" for n in self.nodes) < n_stages:
                op = rng.choices(names, weights)[0]
                self.op = op
                getattr(self, f"op_{op}")()
            outputs = self.choose_outputs()
            graph = build_graph(outputs)
            # at least two computed stages (the outputs may read only inputs)
            if len(graph.computed) >= 2 or n_stages >= 3 * MAX_STAGES:
                break
            n_stages += 1
        return self._finish(outputs, rng.random() < 0.65)

    def _finish(self, outputs, inline) -> RandomPipeline:
        graph = build_graph(outputs)
        used = {s.name for s in graph.stages} | {p.name for p in graph.parameters}
        arguments = {k: v for k, v in self.arguments.items() if k in used}
        text = describe(self.seed, outputs, arguments, "Float" if self.is_float else "Int")
        features = {n.op for n in self.nodes if n.func.name in used}
        features.add("Float" if self.is_float else "Int")
        features.add(f"{len(outputs)} outputs")
        if any(n.axes == "cxy" for n in self.nodes if n.func.name in used):
            features.add("3-D")
        if any(isinstance(n.func, Reduction) for n in self.nodes if n.func.name in used):
            features.add("Reduction")
        consumed = {p for s in graph.stages for p in s.producers}
        if any(o in consumed for o in graph.outputs):
            features.add("output read by a stage")
        if any(len(s.consumers) > 1 for s in graph.stages if s.kind != "image"):
            features.add("several consumers")
        return RandomPipeline(
            self.seed, outputs, arguments, text, inline, self.sizes, frozenset(features)
        )

    def choose_outputs(self):
        rng = self.rng
        computed = [n for n in self.nodes if n.kind != "image"]
        consumed = set()
        for n in computed:
            for e in definition_exprs(n.func):
                for ref in E.references(e):
                    if ref.func is not n.func:
                        consumed.add(id(ref.func))
        last = computed[-1]
        outputs = [last]
        sinks = [n for n in computed[:-1] if id(n.func) not in consumed and n.kind != "lut"]
        rng.shuffle(sinks)
        extra = rng.choice((0, 0, 1, 2))
        outputs += sinks[:extra]
        inner = [n for n in computed[:-1] if id(n.func) in consumed and n not in outputs]
        if inner and len(outputs) < 3 and rng.random() < 0.25:
            outputs.append(rng.choice(inner))  # an output another stage also reads
        rng.shuffle(outputs)
        return [n.func for n in outputs]


def describe(seed, outputs, arguments, kind) -> str:
    """The pipeline as text: one stage a line with its domain and Cases; `kind` names the
    generator's flavour in the first line (Float, Int, features)."""
    graph = build_graph(outputs)
    lines = [
        f"random pipeline, seed {seed} ({kind}); "
        f"outputs {', '.join(graph.outputs)}; "
        + ", ".join(
            f"{k}={v!s}" if np.isscalar(v) else f"{k}: {v.dtype}{list(v.shape)}"
            for k, v in arguments.items()
        )
    ]
    for s in graph.stages:
        func = s.func
        if isinstance(func, Image):
            lines.append(
                f"  {func.name} = Image({func.typ}, "
                f"[{', '.join(format_expr(e) for e in func.extents)}])"
            )
            continue
        dom = ", ".join(
            f"{v.name} in {format_expr(iv.lb)}..{format_expr(iv.ub)}"
            for v, iv in zip(func.variables, func.intervals)
        )
        kind = type(func).__name__
        if isinstance(func, Reduction):
            rdom = ", ".join(
                f"{v.name} in {format_expr(iv.lb)}..{format_expr(iv.ub)}"
                for v, iv in zip(func.reduction_variables, func.reduction_intervals)
            )
            dom += f"; over {rdom}; default {format_expr(func.default)}"
        lines.append(f"  {func.name}: {kind}({func.typ}) [{dom}]")
        for case in func.defn:
            value = case.value
            text = (
                f"Reduce({format_expr(value.target)}, {format_expr(value.value)}, {value.op.name})"
                if isinstance(value, Reduce)
                else format_expr(value)
            )
            cond = "otherwise" if case.cond is None else format_expr(case.cond)
            lines.append(f"      {cond}: {text}")
    return "\n".join(lines)


def random_pipeline(seed: int, borders: bool = False) -> RandomPipeline:
    """The pipeline of `seed` (deterministic); with `borders`, some border reads mirror or wrap
    rather than clamp."""
    return _Builder(seed, borders).build()


def random_mixed_pipeline(seed: int) -> RandomPipeline:
    """A pipeline of `seed` whose one group of all stages tiles 3-D with a 2-D live-out at
    half resolution (_Builder.build_mixed)."""
    return _Builder(seed).build_mixed()
