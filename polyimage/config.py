"""Options of a compilation, and the only place POLYIMAGE_* environment variables are read.

POLYIMAGE_CACHE_DIR  where built modules are kept (default: $XDG_CACHE_HOME/polyimage,
                     else ~/.cache/polyimage)
POLYIMAGE_NO_CACHE   1: build every pipeline afresh in a temporary directory
POLYIMAGE_CACHE_MAX  the cache's size cap: bytes, or with a suffix K, M, G, T (powers of 1024):
                     500M, 2G (default 1G); the least recently used entries go first
POLYIMAGE_CFLAGS     extra compiler flags, appended to the defaults
POLYIMAGE_MARCH      the CPU the C is built for, gcc's -march value (default native; x86-64-v3 is
                     AVX2 without AVX-512, as a first-generation Zen or a Haswell)
POLYIMAGE_L1_BYTES, POLYIMAGE_L2_BYTES, POLYIMAGE_CORES, POLYIMAGE_LLC_BYTES
                     override what grouping.Machine reads from the host
POLYIMAGE_WEIGHTS    cost weights, `live_data=1,overlap=0.3` (grouping.weights)
POLYIMAGE_WEIGHTS_FILE  the autotuner's weights file (default:
                     $XDG_CONFIG_HOME/polyimage/weights.json, else ~/.config/polyimage/...)
POLYIMAGE_MULTILEVEL 1: schedule="auto" also weighs two-level tiles (Algorithm 4); default 0
POLYIMAGE_CHECK      1: the checked build, every buffer index checked at run time (codegen.checked)
POLYIMAGE_DUMP       a folder: every compile writes what each pass produced there (tools/dump.py)
CC                   the C compiler (as for any Python extension build): gcc or clang; one
                     without OpenMP builds serial code (flags_for)
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ArgumentError

# one level of loop unswitching keeps its gains and cuts gcc's time on large groups 2-3x; the
# C library's exp, log, sin, cos and pow are called as they are (no folding or narrowing by gcc),
# as the interpreter calls them (dsl.libm); identical functions stay apart, so that each reports
# its own loops in the vectorization report (polyimage.tools.vectorization); instructions are
# scheduled before register allocation watching register pressure, so that a loop body of many
# independent terms (a 7x7 bilateral's 49 exp weights) does not keep them all live and spill
# (AVX2's 16 registers: 139 -> 99 ms)
DEFAULT_CFLAGS = (
    "-O3",
    "-fopenmp",
    "-std=c99",
    "-fwrapv",
    "-fno-math-errno",
    "-fno-trapping-math",
    "--param",
    "max-unswitch-level=1",
    "-w",
    "-fno-builtin-exp",
    "-fno-builtin-log",
    "-fno-builtin-sin",
    "-fno-builtin-cos",
    "-fno-builtin-pow",
    "-fno-ipa-icf",
    "-fschedule-insns",
    "-fsched-pressure",
)


# flags only gcc takes (clang ignores `--param` with a warning, other compilers may refuse it)
GCC_ONLY_FLAGS = ("--param", "-mtune-ctrl=", "-fno-ipa-icf", "-fsched")


def flags_for(flags: tuple, family: str, openmp: bool = True, openmp_simd: bool = False) -> tuple:
    """`flags` as a compiler of `family` ("gcc", "clang", "other") builds with them: gcc's own
    flags (GCC_ONLY_FLAGS, `--param` with its value) only for gcc; without OpenMP, `-fopenmp`
    becomes `-fopenmp-simd` where the compiler takes it (`omp simd` loops still vectorize)."""
    kept, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif family != "gcc" and flag.startswith(GCC_ONLY_FLAGS):
            skip = flag == "--param"
        elif flag == "-fopenmp" and not openmp:
            kept += ["-fopenmp-simd"] if openmp_simd else []
        else:
            kept.append(flag)
    return tuple(kept)


def is_count(value, minimum: int = 1) -> bool:
    """Whether `value` is an integer (a NumPy one too, never a bool) of at least `minimum`: the
    check of every thread count, chunk and tile size a user gives."""
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and int(value) >= minimum
    )


DEFAULT_MARCH = "native"
_MARCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def check_march(name: str, march) -> str:
    """`march` if it can be a gcc -march value (the compiler has the last word), else
    ValueError naming `name`."""
    if not isinstance(march, str) or not _MARCH.fullmatch(march):
        raise ValueError(
            f"{name} must be a CPU name for -march such as native, x86-64-v3 or haswell, "
            f"got {march!r}"
        )
    return march


# gcc and clang both take it; contraction asks for "fast": gcc 12 reads "on" as off, and clang's
# "on" fuses within one C expression only, not a sum the generated C builds over statements
CONTRACT_FLAG = "-ffp-contract="


# reassociation: the C compiler may regroup float sums and products (and so vectorize a sum
# along its reduction loop, which it does only with signed zeros ignored) and divide by a
# constant as a multiplication by its reciprocal; gcc and clang both take these
REASSOCIATE_FLAGS = ("-fassociative-math", "-fno-signed-zeros", "-freciprocal-math")


def check_switch(name: str, value, meaning: str) -> bool:
    """`value` if it is True or False, else ArgumentError (a ValueError) naming `name` and
    what it turns on or off (`meaning`): a text such as "no" would read as true."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False ({meaning} on or off), got {value!r}")
    return value


DEFAULT_CACHE_MAX = 1 << 30
# stages with fewer points at the estimates get one plain loop nest (schedule.memory.small_stages)
DEFAULT_PLAIN_POINTS = 1 << 16
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(?:([KMGT])(?:I?B)?|B)?", re.IGNORECASE)

MACHINE_VARIABLES = {
    "l1_bytes": "POLYIMAGE_L1_BYTES",
    "l2_bytes": "POLYIMAGE_L2_BYTES",
    "cores": "POLYIMAGE_CORES",
    "llc_bytes": "POLYIMAGE_LLC_BYTES",
}


@dataclass(frozen=True)
class Options:
    """Build options; `Options.from_env()` applies the environment variables."""

    cache_dir: Path = field(default_factory=lambda: _default_cache_dir())
    use_cache: bool = True
    cache_max_bytes: int = DEFAULT_CACHE_MAX
    # the C compiler's flags but those of the typed fields march, contract and reassociate
    # (flags naming those move into the fields: Options.flags derives them from the fields)
    cflags: tuple = DEFAULT_CFLAGS
    march: str = DEFAULT_MARCH
    contract: bool = False
    reassociate: bool = False
    machine: dict = field(default_factory=dict)
    weights: tuple = ()
    weights_file: str = ""
    multilevel: bool = False
    dump_dir: str = ""
    check: bool = False
    plain_points: int = DEFAULT_PLAIN_POINTS

    def __post_init__(self):
        base, fields = typed_flags(tuple(self.cflags))
        march = check_march("march", fields.get("march", self.march))
        contract = check_switch(
            "contract", fields.get("contract", self.contract), "multiply-add contraction"
        )
        reassociate = check_switch(
            "reassociate", fields.get("reassociate", self.reassociate), "float reassociation"
        )
        for name, value in (
            ("cflags", base),
            ("march", march),
            ("contract", contract),
            ("reassociate", reassociate),
        ):
            object.__setattr__(self, name, value)

    @property
    def flags(self) -> tuple:
        """Every flag a build passes: cflags, then those the typed fields ask for (-march,
        -ffp-contract, REASSOCIATE_FLAGS)."""
        contraction = CONTRACT_FLAG + ("fast" if self.contract else "off")
        derived = (f"-march={self.march}", contraction)
        return self.cflags + derived + (REASSOCIATE_FLAGS if self.reassociate else ())

    @classmethod
    def from_env(cls, environ=None) -> "Options":
        env = os.environ if environ is None else environ
        cache_dir = (
            Path(env["POLYIMAGE_CACHE_DIR"])
            if env.get("POLYIMAGE_CACHE_DIR")
            else _default_cache_dir(env)
        )
        cache_max = env.get("POLYIMAGE_CACHE_MAX", "").strip()
        extra = tuple(shlex.split(env.get("POLYIMAGE_CFLAGS", "")))
        march = check_march("POLYIMAGE_MARCH", env.get("POLYIMAGE_MARCH") or DEFAULT_MARCH)
        machine = {
            name: machine_value(variable, env[variable])
            for name, variable in MACHINE_VARIABLES.items()
            if env.get(variable)
        }
        weights = parse_assignments(env.get("POLYIMAGE_WEIGHTS", ""), "POLYIMAGE_WEIGHTS")
        config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        weights_file = env.get("POLYIMAGE_WEIGHTS_FILE") or os.path.join(
            config, "polyimage", "weights.json"
        )
        return cls(
            cache_dir=cache_dir,
            use_cache=env.get("POLYIMAGE_NO_CACHE", "") in ("", "0"),
            cache_max_bytes=size_in_bytes("POLYIMAGE_CACHE_MAX", cache_max)
            if cache_max
            else DEFAULT_CACHE_MAX,
            cflags=DEFAULT_CFLAGS + extra,
            march=march,
            machine=machine,
            weights=tuple(sorted(weights.items())),
            weights_file=weights_file,
            multilevel=_flag("POLYIMAGE_MULTILEVEL", env.get("POLYIMAGE_MULTILEVEL", "")),
            dump_dir=env.get("POLYIMAGE_DUMP", ""),
            check=_flag("POLYIMAGE_CHECK", env.get("POLYIMAGE_CHECK", "")),
            plain_points=positive("POLYIMAGE_PLAIN_POINTS", env["POLYIMAGE_PLAIN_POINTS"])
            if env.get("POLYIMAGE_PLAIN_POINTS")
            else DEFAULT_PLAIN_POINTS,
        )

    def for_march(self, march: str) -> "Options":
        """These options building for `-march=<march>`."""
        return dataclasses.replace(self, march=check_march("march", march))

    def for_contract(self, contract: bool) -> "Options":
        """These options with multiply-add contraction on (`-ffp-contract=fast`) or off."""
        return dataclasses.replace(self, contract=contract)

    def for_reassociate(self, reassociate: bool) -> "Options":
        """These options with float reassociation on (REASSOCIATE_FLAGS) or off."""
        return dataclasses.replace(self, reassociate=reassociate)


def typed_flags(flags: tuple) -> tuple:
    """(`flags` without those the typed fields of Options stand for, {field: value} of those
    found): the last -march= as `march`, the last -ffp-contract= as `contract` (on unless
    "off"), and REASSOCIATE_FLAGS all present as `reassociate`."""
    fields: dict = {}
    kept = []
    for flag in flags:
        if flag.startswith("-march="):
            fields["march"] = flag[len("-march=") :]
        elif flag.startswith(CONTRACT_FLAG):
            fields["contract"] = flag[len(CONTRACT_FLAG) :] != "off"
        else:
            kept.append(flag)
    if all(f in kept for f in REASSOCIATE_FLAGS):
        fields["reassociate"] = True
        kept = [f for f in kept if f not in REASSOCIATE_FLAGS]
    return tuple(kept), fields


def _flag(variable: str, text: str) -> bool:
    if text.strip() not in ("", "0", "1"):
        raise ValueError(f"{variable} must be 0 or 1, got {text!r}")
    return text.strip() == "1"


def _default_cache_dir(environ=None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "polyimage"


def size_in_bytes(name: str, text: str) -> int:
    """`text` (`1073741824`, `500M`, `2G`, `1.5GiB`) as a number of bytes, or ValueError naming
    `name`."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise ValueError(
            f"{name} must be a size in bytes such as 1073741824, 500M or 2G, got {text!r}"
        )
    number, unit = match.groups()
    return int(float(number) * SIZE_UNITS[(unit or "").upper()])


def machine_value(name: str, text: str) -> int:
    """A cache size (`524288`, `512K`, `32M`: what `--machine` takes) or, for the core count, a
    plain number, as a positive int, or ValueError naming `name`."""
    if name == MACHINE_VARIABLES["cores"]:
        return positive(name, text)
    return positive(name, size_in_bytes(name, text))


def positive(name, value) -> int:
    """`value` as a positive int, or ValueError naming `name`."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number


def parse_assignments(text: str, source: str) -> dict:
    """`live_data=1,overlap=0.3` -> {"live_data": 1.0, "overlap": 0.3} (names are checked where
    they are used)."""
    values = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, number = item.partition("=")
        try:
            values[name.strip()] = float(number)
        except ValueError:
            raise ValueError(f"{source}: expected NAME=NUMBER, got {item!r}") from None
        if not sep:
            raise ValueError(f"{source}: expected NAME=NUMBER, got {item!r}")
    return values
