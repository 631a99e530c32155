"""The shapes a random pipeline is made of: the call sizes and tile sizes it draws from, a
stage's dimensions (Dim), a stage under construction (Node), and the finished RandomPipeline."""

from __future__ import annotations

from dataclasses import dataclass

from polyimage import (
    Int,
    Interval,
)
from polyimage.dsl import expr as E
from polyimage.dsl.printer import format_expr

# (R, C) of the calls: odd and even, tiny and a few tiles' worth
SIZES = ((5, 7), (7, 5), (13, 9), (16, 16), (33, 70), (67, 93))
SIZE_WEIGHTS = (1, 1, 2, 1, 2, 2)
TILE_SIZES = (1, 2, 3, 7, 8, 64, 1000)
LUT_BINS = 16
MAX_STAGES = 8


@dataclass
class RandomPipeline:
    """A generated pipeline: `outputs` for compile/interpret, `arguments` for the calls (input
    arrays and parameter values), a readable `description`, the suggested `inline`, and (for
    the feature pipelines) `expected`, the outputs' values by NumPy's semantics."""

    seed: int
    outputs: list
    arguments: dict
    description: str
    inline: bool = True
    sizes: tuple = ()
    features: frozenset = frozenset()
    expected: tuple = ()

    def __str__(self):
        return self.description


@dataclass(frozen=True)
class Dim:
    """One dimension of a stage: its axis ('c' channel, 'x' rows, 'y' columns, 'b' bins), the
    inclusive range [lo, ub] (lo an int, ub an int or a Parameter expression), the value of ub
    at the chosen sizes, and the resolution level along x/y (0 full, 1 half, -1 double)."""

    axis: str
    lo: int
    ub: int | E.Expr
    ub_val: int
    level: int = 0

    @property
    def extent(self) -> int:
        return self.ub_val - self.lo + 1

    @property
    def key(self) -> str:
        return f"{self.axis}{self.level}[{self.lo},{format_expr(E.to_expr(self.ub))}]"

    def interval(self) -> Interval:
        return Interval(Int, self.lo, self.ub)


@dataclass
class Node:
    """A stage of the pipeline under construction."""

    func: object
    dims: tuple
    kind: str  # image, func, lut, reduction
    dtype: object  # the DSL type
    op: str = ""  # the operation that made it

    @property
    def axes(self) -> str:
        return "".join(d.axis for d in self.dims)

    @property
    def spatial(self) -> bool:
        """Indexed by the loop variables (x, y and maybe c), not by data (bins)."""
        return "x" in self.axes and "y" in self.axes
