"""The machine the cost model plans for: data cache sizes per core, the core count, the vector
width of the target and what an arithmetic operation costs in bytes of memory traffic.

Read from Linux sysfs (the caches of cpu0) and `os.sched_getaffinity` (the cores this process
may run on); anything missing falls back to common values. Every field can be overridden
(`Options.machine`, from POLYIMAGE_L1_BYTES, POLYIMAGE_L2_BYTES and POLYIMAGE_CORES); the
pipeline driver sets the vector width from the compiler's target and the operation cost from
the figures `polyimage calibrate` measured (jit.calibrate), when there are some.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass, replace
from pathlib import Path

from ..calls import affinity_cores
from ..config import positive

SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
FALLBACK_L1_BYTES = 32 * 1024
FALLBACK_L2_BYTES = 512 * 1024
FALLBACK_LLC_BYTES = 8 * 1024**2
_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}
FALLBACK_VECTOR_BYTES = 32
# one core's share of memory bandwidth in the time of one arithmetic operation on the machine
# the default weights were fit on (jit.calibrate measured it there); the cost of an operation
# is its weight times op_bytes over this
REFERENCE_OP_BYTES = 0.40
# the operations one read at data-dependent indices (a table lookup) costs, as measured there
REFERENCE_GATHER_OPS = 16.0
FIELDS = (
    "l1_bytes",
    "l2_bytes",
    "cores",
    "llc_bytes",
    "vector_bytes",
    "op_bytes",
    "gather_ops",
)
NUMBER_FIELDS = ("op_bytes", "gather_ops")


@dataclass(frozen=True)
class Machine:
    """Per-core L1 data and L2 cache sizes in bytes, the number of cores, the size of the
    last-level cache (shared by the cores; what Halide's Mullapudi2016 asks for), the widest
    vector of the target in bytes, op_bytes (REFERENCE_OP_BYTES) and gather_ops
    (REFERENCE_GATHER_OPS)."""

    l1_bytes: int
    l2_bytes: int
    cores: int
    llc_bytes: int = FALLBACK_LLC_BYTES
    vector_bytes: int = FALLBACK_VECTOR_BYTES
    op_bytes: float = REFERENCE_OP_BYTES
    gather_ops: float = REFERENCE_GATHER_OPS

    @property
    def op_scale(self) -> float:
        """What an operation costs here relative to the reference machine."""
        return self.op_bytes / REFERENCE_OP_BYTES

    def describe(self) -> str:
        return (
            f"L1 {self.l1_bytes // 1024} KiB, L2 {self.l2_bytes // 1024} KiB, LLC "
            f"{self.llc_bytes / 1024**2:g} MiB, {self.cores} cores, {self.vector_bytes}-byte "
            f"vectors, op cost {self.op_bytes:.3g} B, gather {self.gather_ops:.3g} ops"
        )

    @classmethod
    def detect(cls, caches: Path = SYSFS_CACHES, **overrides) -> "Machine":
        """This host, with `overrides` (say `cores=16`) taking precedence."""
        sizes = read_cache_sizes(caches)
        machine = cls(
            l1_bytes=sizes.get(1, FALLBACK_L1_BYTES),
            l2_bytes=sizes.get(2, FALLBACK_L2_BYTES),
            cores=available_cores(),
            llc_bytes=sizes[max(sizes)] if sizes else FALLBACK_LLC_BYTES,
        )
        for field, value in overrides.items():
            if field not in FIELDS:
                raise TypeError(f"Machine has no field {field!r}; fields: {', '.join(FIELDS)}")
            overrides[field] = (
                _positive_number(field, value) if field in NUMBER_FIELDS else positive(field, value)
            )
        return replace(machine, **overrides)


def _positive_number(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def read_cache_sizes(caches: Path) -> dict:
    """{level: bytes} of the data and unified caches listed under `caches` (sysfs layout)."""
    sizes: dict = {}
    for index in sorted(caches.glob("index*")) if caches.is_dir() else ():
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            text = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and text:
            unit = _UNITS.get(text[-1].upper(), 1)
            digits = text[:-1] if text[-1].upper() in _UNITS else text
            if digits.isdigit():
                sizes.setdefault(level, int(digits) * unit)
    return sizes


# the cores this process may run on (its CPU affinity), else the CPU count
available_cores = affinity_cores


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (Linux), else what the platform says; read once per process
    (every compile asks, and /proc/cpuinfo is long on machines with many cores)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"
