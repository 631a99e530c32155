"""The package boundary: apps/ and images/ install under the project's namespace, the package
ships its py.typed marker, and a plain (non-editable) install runs the main job from any
directory."""

import configparser
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers import ROOT


def _configured_packages() -> list:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["options"]["packages"].split()


def test_every_package_folder_is_listed():
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "polyimage").rglob("__init__.py")
    }
    found |= {
        "polyimage." + ".".join(p.parent.relative_to(ROOT).parts)
        for folder in ("apps", "autotune")
        for p in (ROOT / folder).rglob("__init__.py")
    }
    found.add("polyimage.images")
    assert sorted(_configured_packages()) == sorted(found)


def test_no_top_level_apps_package_is_installed():
    assert all(name.startswith("polyimage") for name in _configured_packages())


def test_the_py_typed_marker_is_package_data():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "py.typed" in config["options.package_data"]["polyimage"].split(", ")
    assert (ROOT / "polyimage" / "py.typed").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_plain_install_runs_the_main_job_elsewhere(tmp_path):
    """`pip install .` (not editable) into a fresh venv, then `polyimage run unsharp_mask` from
    another folder: the apps and the bundled photo come from the installed package. The fresh
    venv borrows this one's dependencies through a .pth file (pip fetches only the build
    backend)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "POLYIMAGE_DUMP")}
    env["POLYIMAGE_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run(
        [
            str(venv / "bin" / "polyimage"),
            "run",
            "unsharp_mask",
            "-o",
            "sharpened.png",
            "--runs",
            "1",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (elsewhere / "sharpened.png").stat().st_size > 1000
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import polyimage.apps, polyimage; "
            "print(polyimage.apps.__file__); print(polyimage.__file__)",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(line.startswith(purelib) for line in where.stdout.split()), where.stdout
    # the built wheel carries the marker that lets type checkers read the annotations
    assert Path(purelib, "polyimage", "py.typed").is_file()
