"""Compiling and calling from several Python threads at once: every compile succeeds, results
equal the interpreter's, and the process's stdout and stderr still work afterwards."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
from helpers import child_env

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.config import Options

CHILD_SRC = """
import os, sys, threading
import numpy as np
import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable

def pipeline(k):
    N = Parameter(Int, "N")
    i = Variable(Int, "i")
    a = Image(Float, "a", [N + 2])
    f = Function(([i], [Interval(Int, 1, N)]), Float, f"blur{{k}}")
    f.defn = [(a(i - 1) + a(i) * (k + 1) + a(i + 1)) / 3]
    return f

data = np.arange(11, dtype=np.float32)
errors, barrier = [], threading.Barrier({threads})

def work(k):
    try:
        barrier.wait()
        f = pipeline(k)
        out = polyimage.compile([f], schedule="{schedule}")(a=data)
        assert np.array_equal(out, polyimage.interpret([f], a=data)), k
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work, args=(k % {distinct},)) for k in range({threads})]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("errors:", errors)
print("after on stdout", flush=True)
print("after on stderr", file=sys.stderr, flush=True)
os.write(1, b"after on fd 1\\n")
os.write(2, b"after on fd 2\\n")
sys.exit(1 if errors else 0)
"""


def _run_child(tmp_path, threads=4, distinct=4, schedule="naive"):
    env = child_env(tmp_path / "cache")
    source = CHILD_SRC.format(threads=threads, distinct=distinct, schedule=schedule)
    return subprocess.run(
        [sys.executable, "-c", source],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_four_threads_compile_different_pipelines(tmp_path):
    done = _run_child(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "errors: []" in done.stdout
    assert "after on stdout" in done.stdout and "after on fd 1" in done.stdout
    assert "after on stderr" in done.stderr and "after on fd 2" in done.stderr
    # no compiler output leaked into the process's streams
    assert "gcc" not in done.stdout + done.stderr
    assert Path.cwd() != tmp_path / "cache"


def test_threads_compile_one_pipeline_and_auto_schedules(tmp_path):
    done = _run_child(tmp_path, threads=6, distinct=2, schedule="auto")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "errors: []" in done.stdout and "after on fd 2" in done.stderr


def test_threads_in_this_process_keep_the_working_directory(tmp_path):
    cwd = os.getcwd()
    results, barrier = {}, threading.Barrier(3)
    data = np.linspace(0, 1, 9, dtype=np.float32)

    def work(k):
        N, i = Parameter(Int, "N"), Variable(Int, "i")
        a = Image(Float, "a", [N])
        f = Function(([i], [Interval(Int, 0, N - 1)]), Float, f"scaled{k}")
        f.defn = [a(i) * (k + 7)]
        barrier.wait()
        pipe = polyimage.compile([f], options=Options(cache_dir=tmp_path / "cache"))
        results[k] = (pipe(a=data), os.getcwd())

    workers = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert sorted(results) == [0, 1, 2]
    for k, (out, seen_cwd) in results.items():
        np.testing.assert_array_equal(out, data * np.float32(k + 7))
        assert seen_cwd == cwd
    assert os.getcwd() == cwd
