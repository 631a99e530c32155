"""What the bench builds for and plans for: a named target (the host, or AVX2 without AVX-512
on any x86-64 host) and cache sizes that override the host's, so that one machine can measure
what polyimage and Halide do on another."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from polyimage.config import Options, size_in_bytes
from polyimage.driver.request import target_machine
from polyimage.errors import ArgumentError
from polyimage.grouping.machine import cpu_model
from polyimage.jit.toolchain import compiler_command, facts_dir, resolved_target

# target name -> (gcc -march value, Halide features to drop from the host's JIT target)
TARGETS = {
    "native": ("native", ()),
    "avx2": ("x86-64-v3", ("AVX512",)),
}
# --machine keys -> Machine fields (sizes take K, M, G suffixes)
MACHINE_KEYS = {"l1": "l1_bytes", "l2": "l2_bytes", "llc": "llc_bytes", "cores": "cores"}


def parse_machine(text: str) -> dict:
    """`l2=512K,llc=8M` -> {"l2_bytes": 524288, "llc_bytes": 8388608}, or ArgumentError."""
    overrides = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, sep, value = item.partition("=")
        field = MACHINE_KEYS.get(key.strip())
        if not sep or field is None:
            raise ArgumentError(
                f"--machine: expected KEY=VALUE with KEY one of {', '.join(MACHINE_KEYS)}, "
                f"got {item!r}"
            )
        try:
            number = size_in_bytes(f"--machine {key}", value)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        if number < 1:
            raise ArgumentError(f"--machine {key}: must be positive, got {value!r}")
        overrides[field] = number
    return overrides


def target_options(target: str, machine: dict) -> Options:
    """The compile options of the bench's polyimage variants for `target` and the cache-size
    `machine` overrides."""
    if target not in TARGETS:
        raise ArgumentError(f"--target must be one of {', '.join(TARGETS)}, got {target!r}")
    options = Options.from_env().for_march(TARGETS[target][0])
    return dataclasses.replace(options, machine={**options.machine, **machine})


def halide_target(hl, target: str):
    """Halide's JIT target for the host without the features `target` drops."""
    result = hl.get_jit_target_from_environment()
    for prefix in TARGETS[target][1]:
        for name in dir(hl.TargetFeature):
            if name.startswith(prefix):
                result = result.without_feature(getattr(hl.TargetFeature, name))
    return result


def describe(target: str, options: Options, threads) -> dict:
    """What a bench run measured on: CPU, target, ISA, caches, vector width and operation cost
    the model used, threads; the home folder written `~` (a run's JSON is shared)."""
    machine, origin = target_machine(options)
    return {
        "cpu": cpu_model(),
        "target": target,
        "march": options.march,
        "isa": resolved_target(compiler_command(), options.flags, facts_dir(options)).get(
            "-march=", options.march
        ),
        "l1_bytes": machine.l1_bytes,
        "l2_bytes": machine.l2_bytes,
        "llc_bytes": machine.llc_bytes,
        "cores": machine.cores,
        "vector_bytes": machine.vector_bytes,
        "op_bytes": machine.op_bytes,
        "op_cost_origin": origin.replace(str(Path.home()), "~"),
        "threads": threads or os.cpu_count(),
        "overrides": dict(options.machine),
    }


def header(described: dict) -> str:
    """One line for the top of the bench table."""
    mib = 1024**2
    overridden = " (set by --machine)" if described["overrides"] else ""
    return (
        f"{described['cpu']}; target {described['target']} (-march={described['march']}, "
        f"{described['isa']}); L1 {described['l1_bytes'] // 1024} KiB, L2 "
        f"{described['l2_bytes'] // 1024} KiB, LLC {described['llc_bytes'] / mib:g} MiB"
        f"{overridden}; {described['vector_bytes']}-byte vectors, op cost "
        f"{described['op_bytes']:.3g} B; {described['threads']} threads"
    )
