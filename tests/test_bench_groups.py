"""`polyimage bench --groups`: its sizes, what counts as slower, its refusals and one tiny run."""

import numpy as np
import pytest

from polyimage.commands import bench_groups as bg
from polyimage.commands.cli import main
from polyimage.errors import ArgumentError


def test_sizes_are_r_by_c_or_named():
    assert bg.parse_size("1536x2560") == (1536, 2560)
    assert bg.parse_size("paper") == (1536, 2560) and bg.parse_size("small") == (96, 128)
    for bad in ("8x8", "100", "axb", "10x20x30"):
        with pytest.raises(ArgumentError, match="--size"):
            bg.parse_size(bad)


def test_slower_means_beyond_the_larger_spread():
    steady = bg.Timing((1.0, 1.0, 1.0, 1.0))
    slower = bg.Timing((1.2, 1.2, 1.2, 1.2))
    noisy = bg.Timing((0.6, 1.2, 1.3, 2.0))
    assert bg.slower_beyond_spread(slower, steady)
    assert not bg.slower_beyond_spread(steady, slower)
    assert not bg.slower_beyond_spread(
        noisy, steady
    )  # its median is higher, by less than its spread


def test_inputs_are_redrawn_at_the_size_from_the_generators_range():
    example = np.array([-3, 7], np.int64)
    values = bg.values_like(example, (40, 50), np.random.default_rng(0))
    assert values.shape == (40, 50) and values.dtype == np.int64
    assert values.min() >= -3 and values.max() <= 7
    extreme = np.array([0, np.iinfo(np.uint64).max], np.uint64)
    assert bg.values_like(extreme, (3,), np.random.default_rng(0)).dtype == np.uint64


@pytest.mark.parametrize(
    "argv, named",
    [
        (["bench", "--groups", "harris"], "APP"),
        (["bench", "--groups", "--json", "out.json"], "--json"),
        (["bench", "--groups", "--size", "8x8"], "--size"),
        (["bench", "--size", "64x64", "harris"], "--groups"),
        (["bench", "--groups", "--count", "0"], "--count"),
    ],
)
def test_bad_arguments_are_one_line(argv, named, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], lines


def test_a_run_reports_each_pipeline_and_a_summary(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYIMAGE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["bench", "--groups", "--count", "2", "--size", "32x48", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sum(line.startswith(("random ", "feature ", "seed ")) for line in lines) == 2
    assert "auto slower than naive beyond the spread:" in out
    assert "fused groups slower than their stages apart:" in out
