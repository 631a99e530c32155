"""Random pipelines and schedules (tests/sanitized_run.py) compiled with AddressSanitizer and
UndefinedBehaviorSanitizer: a result that matches the interpreter proves nothing about memory,
so every call runs under the sanitizers, in a child process that loads their runtime first.

Coverage: every memory case and pixel size, then the first `--sanitize-seeds` seeds (default 4)
of each kind of random pipeline, whatever the time; `--sanitize-seconds` adds seeds until that
much time has passed (default none, so a run checks the same cases on any machine); a long run:
`python -m pytest tests/test_sanitizers.py --sanitize-seconds 1800`. Needs gcc's libasan
(skipped without it, unless POLYIMAGE_REQUIRE_SANITIZERS=1, as in CI).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import sanitizers_required
from memory_cases import CASES
from sanitized_run import PIXEL_SIZES

from polyimage.jit.toolchain import compiler_command

RUNNER = Path(__file__).resolve().parent / "sanitized_run.py"
FLAGS = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"


def _libasan():
    """The path of the compiler's AddressSanitizer runtime, or None."""
    try:
        done = subprocess.run(
            compiler_command().split() + ["-print-file-name=libasan.so"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = done.stdout.strip()
    return path if done.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


LIBASAN = _libasan()


@pytest.fixture(autouse=True)
def _needs_libasan():
    """Skip without libasan, unless POLYIMAGE_REQUIRE_SANITIZERS=1 (CI) makes that a failure."""
    if LIBASAN is None:
        if sanitizers_required():
            pytest.fail("POLYIMAGE_REQUIRE_SANITIZERS=1 but the C compiler has no libasan")
        pytest.skip("the C compiler has no libasan")


def _sanitized(*args, timeout):
    env = dict(
        os.environ,
        POLYIMAGE_CFLAGS=FLAGS,
        LD_PRELOAD=LIBASAN,
        ASAN_OPTIONS="detect_leaks=0",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    return subprocess.run(
        [sys.executable, str(RUNNER), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_sanitizers_see_an_overflow_in_generated_code():
    done = _sanitized("--self-test", timeout=300)
    assert done.returncode != 0, done.stdout
    assert "AddressSanitizer: heap-buffer-overflow" in done.stderr, done.stderr[-3000:]
    assert "no sanitizer report" not in done.stdout


def test_random_pipelines_and_schedules_run_clean_under_the_sanitizers(request):
    seeds = request.config.getoption("--sanitize-seeds")
    seconds = request.config.getoption("--sanitize-seconds")
    done = _sanitized("--seeds", str(seeds), "--seconds", str(seconds), timeout=seconds + 900)
    tail = (done.stdout[-1500:] + "\n" + done.stderr[-6000:]).strip()
    assert done.returncode == 0, tail
    covered = done.stdout.strip().splitlines()[-1]
    assert covered.startswith("covered "), tail
    counts = json.loads(covered[len("covered ") :])
    request.config.sanitized_counts = counts  # printed at the end of the run (conftest.py)
    assert counts["memory cases"] == len(CASES)
    assert counts["pixel sizes"] == len(PIXEL_SIZES)
    for kind in ("pipelines", "mixed pipelines", "feature pipelines"):
        assert counts[kind] >= seeds, counts  # the run covers `--sanitize-seeds` at least
    assert counts["tiled Reductions reading their group"] > 0, counts
    for shape in ("equal", "dividing", "non-dividing", "larger"):
        assert counts[f"inner {shape}"] > 0, counts
