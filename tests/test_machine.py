"""The machine model: sysfs parsing, fallbacks and overrides."""

import pytest

from polyimage.config import Options
from polyimage.grouping import Machine
from polyimage.grouping.machine import FALLBACK_L1_BYTES, read_cache_sizes


def fake_caches(root, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_reads_data_and_unified_caches(tmp_path):
    root = fake_caches(
        tmp_path,
        [
            (1, "Data", "48K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "1024K"),
            (3, "Unified", "32M"),
        ],
    )
    assert read_cache_sizes(root) == {1: 48 * 1024, 2: 1024 * 1024, 3: 32 * 1024**2}
    machine = Machine.detect(root)
    assert (machine.l1_bytes, machine.l2_bytes) == (48 * 1024, 1024 * 1024)
    assert machine.cores >= 1


def test_missing_sysfs_falls_back(tmp_path):
    machine = Machine.detect(tmp_path / "nowhere")
    assert machine.l1_bytes == FALLBACK_L1_BYTES


def test_environment_overrides_through_options(tmp_path):
    env = {"POLYIMAGE_L2_BYTES": "262144", "POLYIMAGE_CORES": "16"}
    options = Options.from_env(env)
    assert options.machine == {"l2_bytes": 262144, "cores": 16}
    machine = Machine.detect(tmp_path, **options.machine)
    assert (machine.l2_bytes, machine.cores) == (262144, 16)
    assert Machine.detect(tmp_path, **{**options.machine, "cores": 4}).cores == 4


def test_cache_sizes_in_the_environment_take_units_as_machine_does():
    env = {"POLYIMAGE_L1_BYTES": "48K", "POLYIMAGE_L2_BYTES": "512KiB", "POLYIMAGE_LLC_BYTES": "8M"}
    assert Options.from_env(env).machine == {
        "l1_bytes": 48 * 1024,
        "l2_bytes": 512 * 1024,
        "llc_bytes": 8 * 1024**2,
    }
    with pytest.raises(ValueError, match="POLYIMAGE_L2_BYTES must be a size in bytes"):
        Options.from_env({"POLYIMAGE_L2_BYTES": "lots"})
    with pytest.raises(ValueError, match="POLYIMAGE_LLC_BYTES must be a positive integer"):
        Options.from_env({"POLYIMAGE_LLC_BYTES": "0"})
    with pytest.raises(ValueError, match="POLYIMAGE_CORES must be a positive integer"):
        Options.from_env({"POLYIMAGE_CORES": "2K"})


def test_bad_values_are_errors(tmp_path):
    with pytest.raises(ValueError, match="POLYIMAGE_CORES must be a positive integer"):
        Options.from_env({"POLYIMAGE_CORES": "zero"})
    with pytest.raises(ValueError, match="l1_bytes must be a positive integer"):
        Machine.detect(tmp_path, l1_bytes=0)


def test_unknown_override_is_an_error(tmp_path):
    with pytest.raises(TypeError, match="no field 'l3_bytes'"):
        Machine.detect(tmp_path, l3_bytes=1)
