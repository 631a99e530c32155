"""Whole compiles kept on disk, keyed by everything that decides their result, so that a compile
seen before skips every pass (analysis, inlining, grouping, code generation) and loads its
`Compiled` record (lower.py: schedule, plans, warnings, C) and built module in milliseconds.

The key hashes a canonical text of the pipeline (every stage's name, kind, type, domain and
definition, with variables named by their place), the estimates, constraints, schedule argument,
inlining, the weights and machine model in force, the build options, the polyimage version and a
digest of the compiler's own source (a changed compiler never reuses an older compile's record).
Records live under <cache>/records/<key[:2]>/<key>.pickle, written atomically; one that cannot
be read back is discarded with a CacheWarning and the compile runs again. A record loaded takes
the request of the compile that loads it (the same by the key, but this process's graph and
options), and its bounds warnings are issued again. The cache folder is
the user's own: only its owner should be able to write there (records are pickles).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import pickle
import warnings
from pathlib import Path

from ..dsl import expr as E
from ..dsl.constructs import Reduce
from ..errors import CacheWarning, UncoveredReadWarning
from ..jit.build import evict_over_cap
from ..jit.cache import fields_digest, write_whole
from ..version import __version__
from .lower import Compiled
from .request import Request

RECORD_FORMAT = 4
# folders of the package that are not the compiler: their changes keep compile records valid
NOT_COMPILER = ("apps", "autotune", "images")
RECORDS = "records"
log = logging.getLogger("polyimage")


def compile_key(request: Request) -> str:
    """SHA-256 of every input of a compile (see the module docstring)."""
    build = dataclasses.replace(
        request.options,
        cache_dir="",  # type: ignore[arg-type]  # blanked: where the cache is is no part of the key
        dump_dir="",
        cache_max_bytes=0,
    )
    schedule = request.schedule
    parts = [
        f"polyimage {__version__} record {RECORD_FORMAT} compiler {compiler_digest()}",
        f"name {request.name}",
        graph_text(request.graph),
        "estimates " + repr(sorted(request.estimates.items())),
        "constraints " + ";".join(expr_text(c, {}) for c in request.constraints),
        "schedule " + (schedule if isinstance(schedule, str) else f"{schedule!r}\n{schedule}"),
        f"inline {request.inline}",
        f"weights {request.weights!r}",
        f"machine {request.machine!r}",
        f"options {build!r}",
    ]
    parts += [f"scalar {request.scalar_stages!r}"] if request.scalar_stages else []
    parts += ["profiled"] if request.profile else []
    return fields_digest(parts)


def load_compiled(request: Request, key: str) -> Compiled | None:
    """The compile saved under `key`, with `request` in place of the one it was saved with and
    its warnings issued again; None when there is none (or it was damaged)."""
    saved = load_record(request.options.cache_dir, key)
    if saved is None:
        return None
    for message in saved.warnings:
        warnings.warn(message, UncoveredReadWarning, stacklevel=5)
    scalar = saved.request.scalar_stages  # found by the build that made the record
    if scalar != request.scalar_stages:
        request = dataclasses.replace(request, scalar_stages=scalar)
    return dataclasses.replace(saved, request=request)


def save_compiled(compiled: Compiled, key: str, keep=()) -> None:
    """Keep `compiled` under `key`, then trim the cache to its cap sparing the record and the
    paths in `keep` (the module just built); a cache that cannot be written is only logged."""
    options = compiled.options
    try:
        path = save_record(options.cache_dir, key, compiled)
    except OSError as exc:
        log.warning("could not save the compile record: %s", exc)
    else:
        evict_over_cap(options.cache_dir, options.cache_max_bytes, keep=[path, *keep])


@functools.lru_cache(maxsize=None)
def compiler_digest() -> str:
    """SHA-256 of the compiler's Python source (the package without its apps, tuner and photos),
    read once per process."""
    package = Path(__file__).resolve().parents[1]  # this module lives in polyimage/driver
    files = sorted(
        path
        for path in package.rglob("*.py")
        if path.relative_to(package).parts[0] not in NOT_COMPILER
    )
    fields = []
    for path in files:
        fields += [path.relative_to(package).as_posix(), path.read_text(errors="replace")]
    return fields_digest(fields)


def graph_text(graph) -> str:
    """Every stage's kind, name, type, domain and definition, in the graph's order."""
    lines = [f"outputs {','.join(graph.outputs)}"]
    for stage in graph.stages:
        func = stage.func
        places = {id(v): f"v{k}" for k, v in enumerate(func.variables)}
        places.update(
            {id(v): f"r{k}" for k, v in enumerate(getattr(func, "reduction_variables", ()))}
        )
        domain = [
            f"{v.name}:{v.typ.name} in {expr_text(iv.lb, places)}..{expr_text(iv.ub, places)}"
            for v, iv in zip(func.variables, func.intervals)
        ]
        lines.append(f"{func.kind} {func.name} {func.typ.name} [{'; '.join(domain)}]")
        for v, iv in zip(
            getattr(func, "reduction_variables", ()), getattr(func, "reduction_intervals", ())
        ):
            lines.append(
                f"  reduce {v.name}:{v.typ.name} in "
                f"{expr_text(iv.lb, places)}..{expr_text(iv.ub, places)}"
            )
        if hasattr(func, "default"):
            lines.append(f"  default {expr_text(func.default, places)}")
        for case in func.cases:
            cond = "always" if case.cond is None else expr_text(case.cond, places)
            value = case.value
            if isinstance(value, Reduce):
                text = (
                    f"{expr_text(value.target, places)} {value.op.name}= "
                    f"{expr_text(value.value, places)}"
                )
            else:
                text = expr_text(value, places)
            lines.append(f"  case {cond}: {text}")
    return "\n".join(lines)


def expr_text(e, places: dict, memo=None) -> str:
    """A canonical text of expression `e`: every node's kind, type and fields; variables by
    their place in the stage (`places`: id -> "v0", "r1", ...) and name."""
    memo = {} if memo is None else memo
    if id(e) in memo:
        return memo[id(e)]
    kind = type(e).__name__
    if isinstance(e, E.Const):
        text = f"{e.value!r}:{e.typ.name}"
    elif isinstance(e, E.Symbol):
        text = f"{kind}({e.name}:{e.typ.name}@{places.get(id(e), '?')})"
    elif isinstance(e, E.Reference):
        text = f"{e.func.name}[{','.join(expr_text(a, places, memo) for a in e.args)}]"
    else:
        fields = []
        for cls in type(e).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                value = getattr(e, slot, None)
                if slot == "typ":
                    fields.append(value.name if value is not None else "-")
                elif isinstance(value, E.Expr):
                    fields.append(expr_text(value, places, memo))
                elif isinstance(value, tuple):
                    fields.append(
                        "("
                        + ",".join(
                            expr_text(v, places, memo) if isinstance(v, E.Expr) else repr(v)
                            for v in value
                        )
                        + ")"
                    )
                else:
                    fields.append(repr(value))
        text = f"{kind}({';'.join(fields)})"
    memo[id(e)] = text
    return text


def record_path(root, key: str) -> Path:
    """Where the record of `key` lives under the cache folder `root`."""
    return Path(root) / RECORDS / key[:2] / f"{key}.pickle"


def load_record(root, key: str) -> Compiled | None:
    """The Compiled record saved under `key`, or None when there is none; one that cannot be
    read back is removed with a CacheWarning."""
    path = record_path(root, key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        record = pickle.loads(data)
        if not (
            isinstance(record, dict)
            and record.get("format") == RECORD_FORMAT
            and isinstance(record.get("compiled"), Compiled)
        ):
            raise ValueError("not a compile record of this version")
    except Exception as exc:  # a damaged file can fail in any way while unpickling
        warnings.warn(
            f"compile record {path} is damaged ({type(exc).__name__}); compiling again",
            CacheWarning,
            stacklevel=3,
        )
        try:
            path.unlink()
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # recently used, for the cache's eviction
    except OSError:
        pass
    return record["compiled"]


def save_record(root, key: str, compiled: Compiled) -> Path:
    """Write the record atomically (a reader sees the old file, none, or the whole new one);
    returns its path."""
    path = record_path(root, key)
    record = {"format": RECORD_FORMAT, "compiled": compiled}
    write_whole(path, pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    return path
