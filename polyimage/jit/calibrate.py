"""What an arithmetic operation costs against a byte of memory traffic on this CPU and target,
measured once by a micro-benchmark of about a second and kept beside the compile cache.

The cost model prices an operation at `op_bytes / REFERENCE_OP_BYTES` times its weight
(grouping.cost), so the measurement says how much slower or faster arithmetic is here,
relative to the stream bandwidth one core gets with every core streaming, than on the machine
the default weights were fit on. It is built with the target's own flags, so an AVX2 build
measures AVX2 arithmetic. The kernels are those of image pipelines: stencils over float and
uint16 rows, at unit stride and stride 2 (Bayer planes, pyramids), and a table lookup.

Files: <cache>/.machines/<key>.json, the key a digest of the CPU model, the compiler and its
flags; hidden from eviction (a compile that lost its figures would plan differently).
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..codegen.cprint import print_c
from ..codegen.ctree import Seq
from ..codegen.prelude import openmp_stand_ins, openmp_timer
from ..errors import CompileError
from ..grouping.machine import REFERENCE_GATHER_OPS, REFERENCE_OP_BYTES, cpu_model
from .build import compile_flags
from .cache import fields_digest, write_whole
from .toolchain import compiler_command, compiler_fingerprint, facts_dir

MACHINES = ".machines"

_KERNELS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define ROW 1024
static float af[2 * ROW + 4], bf[ROW];
static uint16_t au[2 * ROW + 4], bu[ROW];
static int32_t lut[ROW];
typedef void (*kernel)(void);
#define STENCILS(S) \
static void stencil_f##S(void) { for (int i = 0; i < ROW; i++) \
    bf[i] = (af[S*i] + 2.0f * af[S*i+1] + af[S*i+2]) * 0.25f - af[S*i+1] * 0.125f; } \
static void stencil_u##S(void) { for (int i = 0; i < ROW; i++) \
    bu[i] = (uint16_t)((au[S*i] + 2 * au[S*i+1] + au[S*i+2]) >> 2) - (au[S*i+1] >> 3); }
STENCILS(1)
STENCILS(2)
static void lookup(void) { for (int i = 0; i < ROW; i++) {
    int v = au[i] * 3 >> 2; v = v < 0 ? 0 : v > ROW - 1 ? ROW - 1 : v; bu[i] = (uint16_t)lut[v]; } }
static double rate(kernel k, double ops, double seconds) {
    double best = 0;
    for (int round = 0; round < 3; round++) {
        long reps = 0; double start = omp_get_wtime(), now = start;
        while (now - start < seconds) {
            for (int r = 0; r < 256; r++, reps++) {
                k(); af[reps & (ROW - 1)] = bf[(reps * 7) & (ROW - 1)];
                au[reps & (ROW - 1)] = bu[(reps * 7) & (ROW - 1)] & (ROW - 1);
            }
            now = omp_get_wtime();
        }
        double r = reps * ROW * ops / (now - start);
        if (r > best) best = r;
    }
    return best;
}
int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.05;
    for (int i = 0; i < 2 * ROW + 4; i++) { af[i] = i * 0.5f; au[i] = i & (ROW - 1); }
    for (int i = 0; i < ROW; i++) lut[i] = (i * 37) & 255;
    double ops[5] = {rate(stencil_f1, 6, seconds), rate(stencil_u1, 6, seconds),
                     rate(stencil_f2, 6, seconds), rate(stencil_u2, 6, seconds),
                     rate(lookup, 6, seconds)};
    size_t n = (size_t)1 << 24;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    if (!a || !b) return 1;
    int threads = omp_get_max_threads();
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) { a[i] = (float)i; b[i] = 0; }
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double start = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) b[i] = a[i] * 0.5f + 1.0f;
        double t = omp_get_wtime() - start;
        if (t < best) best = t;
    }
    printf("{\"ops_per_second\": [%g, %g, %g, %g, %g], \"stream_bytes_per_second\": %g, "
           "\"threads\": %d, \"check\": %g}\n", ops[0], ops[1], ops[2], ops[3], ops[4],
           2.0 * n * sizeof(float) / best, threads, (double)b[n / 2] + bf[3] + bu[5]);
    free(a); free(b);
    return 0;
}
"""
# with the generated code's stand-ins for OpenMP (codegen.cmodule): a compiler without it measures
KERNELS_C = (
    "#define _POSIX_C_SOURCE 200112L\n"
    + print_c(Seq((openmp_stand_ins(), openmp_timer()))).text
    + _KERNELS
)

# operations per point of the lookup kernel, its read of the table counted as one
LOOKUP_OPS = 6
# a measurement is rounded to quarter octaves of the reference, so that a repeat of it on a
# noisy machine plans the same
STEPS_PER_OCTAVE = 4


@dataclass(frozen=True)
class Calibration:
    """The figures measured for one CPU and target, and where they were kept."""

    op_bytes: float
    gather_ops: float
    ops_per_second: float
    stream_bytes_per_second: float
    threads: int
    cpu: str
    measured: str
    path: str

    @property
    def model_op_bytes(self) -> float:
        """op_bytes rounded to STEPS_PER_OCTAVE steps per octave of REFERENCE_OP_BYTES."""
        return _rounded(self.op_bytes, REFERENCE_OP_BYTES)

    @property
    def model_gather_ops(self) -> float:
        """gather_ops rounded likewise around REFERENCE_GATHER_OPS."""
        return _rounded(self.gather_ops, REFERENCE_GATHER_OPS)

    def machine_fields(self) -> dict:
        """What the cost model takes from these figures (grouping.Machine fields)."""
        return {"op_bytes": self.model_op_bytes, "gather_ops": self.model_gather_ops}

    def describe(self) -> str:
        return (
            f"op cost measured {self.op_bytes:.3g} B ({self.ops_per_second / 1e9:.1f} G ops/s "
            f"per core), a gather {self.gather_ops:.3g} ops ("
            f"{self.stream_bytes_per_second / 1e9:.1f} GB/s on {self.threads} threads; "
            f"{self.measured}, {self.path})"
        )


def _rounded(value: float, reference: float) -> float:
    steps = round(STEPS_PER_OCTAVE * math.log2(max(value, 1e-9) / reference))
    return reference * 2 ** (steps / STEPS_PER_OCTAVE)


def calibration_path(options) -> Path:
    """Where the figures of this CPU under `options`' compiler and flags are kept."""
    compiler = compiler_command()
    flags = options.flags
    fingerprint = compiler_fingerprint(compiler, flags, facts_dir(options))
    key = fields_digest([cpu_model(), compiler, fingerprint, *flags])
    return Path(options.cache_dir) / MACHINES / f"{key[:32]}.json"


def load_calibration(options):
    """The Calibration kept for this CPU and `options`' target, or None (never measured, or
    a file that cannot be read: it is measured again by the next `calibrate`)."""
    path = calibration_path(options)
    try:
        data = json.loads(path.read_text())
        return Calibration(**{**data, "path": str(path)})
    except (OSError, ValueError, TypeError):
        return None


def calibrate(options, force: bool = False, seconds: float = 0.05) -> Calibration:
    """The kept Calibration, or (none kept, or `force`) a fresh measurement, kept."""
    if not force:
        kept = load_calibration(options)
        if kept is not None:
            return kept
    figures = measure(options, seconds)
    path = calibration_path(options)
    per_core = figures["stream_bytes_per_second"] / max(figures["threads"], 1)
    *arithmetic, lookups = figures["ops_per_second"]
    ops = math.exp(sum(math.log(r) for r in arithmetic) / len(arithmetic))
    calibration = Calibration(
        op_bytes=per_core / ops,
        gather_ops=max(ops / (lookups / LOOKUP_OPS) - (LOOKUP_OPS - 1), 1.0),
        ops_per_second=ops,
        stream_bytes_per_second=figures["stream_bytes_per_second"],
        threads=figures["threads"],
        cpu=cpu_model(),
        measured=time.strftime("%Y-%m-%d %H:%M"),
        path=str(path),
    )
    data = {k: v for k, v in calibration.__dict__.items() if k != "path"}
    write_whole(path, json.dumps(data, indent=1) + "\n")
    return calibration


def measure(options, seconds: float) -> dict:
    """Build and run the kernels with the target's flags; their figures as a dict."""
    compiler, flags, _ = compile_flags(options)
    with tempfile.TemporaryDirectory(prefix="polyimage-calibrate-") as folder:
        source, program = Path(folder) / "kernels.c", Path(folder) / "kernels"
        source.write_text(KERNELS_C)
        argv = shlex.split(compiler) + list(flags) + [str(source), "-o", str(program)]
        built = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            raise CompileError(f"calibration kernels did not build:\n{built.stderr[-2000:]}")
        ran = subprocess.run(
            [str(program), str(seconds)], capture_output=True, text=True, timeout=120
        )
        if ran.returncode != 0:
            raise CompileError(f"calibration kernels failed (status {ran.returncode})")
    return json.loads(ran.stdout)
