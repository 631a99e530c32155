"""Benchmark pipelines. Each app module is the algorithm only: build(), prepare(),
reference(), to_photo() and its default parameters; apps.runner does the rest."""
import importlib

APP_NAMES = ("unsharp_mask",)


def load_app(name: str):
    """The module of app `name`."""
    if name not in APP_NAMES:
        raise ValueError(f"unknown app {name!r}; available: {', '.join(APP_NAMES)}")
    return importlib.import_module(f"apps.{name}")
