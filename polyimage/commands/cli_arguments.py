"""The command line's shared arguments, checked before any work: the pipeline (an app or a
user's FILE.py:function), a schedule choice, estimates and parameter values, an input photo,
an output path."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

import polyimage
from polyimage.apps import APP_NAMES, app_schedules, default_schedule, load_app
from polyimage.errors import ArgumentError
from polyimage.io import load_image, save_format

USER_PIPELINE = (
    "a pipeline of your own is given as FILE.py:function, the function of your file that "
    "returns its outputs"
)


def resolve_schedule(app, choice=None):
    """The schedule to compile `app` (None: a user's pipeline) with: None (the default, auto),
    "naive", the name of one of the app's schedules, or a file holding a schedule's text or
    JSON."""
    choice = choice or default_schedule(app)
    if choice == "measured":
        return choice
    known = app_schedules(app)
    if choice in known:
        return known[choice]
    if os.path.exists(choice):
        with open(choice) as fh:
            return polyimage.Schedule.parse(fh.read())
    raise ArgumentError(
        f"--schedule {choice!r}: not a file, nor one of {', '.join([*known, 'measured'])}"
    )


def parse_params(app, pairs) -> dict:
    """`["weight=2.5", ...]` -> {"weight": 2.5} with values typed as the app's parameters, over
    its defaults."""
    _, params = app.build()
    return {**app.DEFAULTS, **typed_values(params, pairs)}


def typed_values(params: dict, pairs) -> dict:
    """`["weight=2.5", ...]` -> {"weight": 2.5}, typed as `params` ({name: Parameter})."""
    values = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or name not in params:
            raise ArgumentError(
                f"--param {pair!r}: expected NAME=VALUE with NAME one of "
                f"{', '.join(sorted(params))}"
            )
        try:
            values[name] = int(text) if params[name].typ.is_int else float(text)
        except ValueError:
            raise ArgumentError(
                f"--param {name}: {text!r} is not a valid {params[name].typ} value"
            ) from None
    return values


def check_output_path(path) -> None:
    """Reject an output that could not be saved (unsupported extension, missing directory)
    before anything is compiled or run."""
    save_format(path)
    folder = Path(path).parent
    if not folder.is_dir():
        raise ArgumentError(
            f"cannot save {os.fspath(path)!r}: folder {str(folder)!r} does not exist"
        )


def load_input(path):
    """An input photo, any failure to read it a one-line ValueError naming the file."""
    try:
        return load_image(path)
    except OSError as exc:  # missing, a folder, unreadable
        reason = exc.strerror or str(exc)
        raise ArgumentError(f"cannot read input {os.fspath(path)!r}: {reason}") from None


def check_folder(option: str, path) -> None:
    """Reject a file to be written whose folder is missing or not writable, before any work."""
    folder = Path(path).parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ArgumentError(
            f"{option} {os.fspath(path)}: its folder does not exist or is not writable"
        )


def pipeline_source(target: str):
    """(outputs, default estimates, the app module or None) of an app name or `FILE.py:function`
    (a function of no arguments returning the outputs: a Function or a list of them)."""
    path, sep, function = target.rpartition(":")
    if not sep or not path.endswith(".py"):
        refuse_file_as_app(target)
        app = load_app(target)
        return app.build()[0], dict(app.PAPER_SIZE), app
    if not os.path.isfile(path):
        raise ArgumentError(
            f"{target}: no file {path!r} (give an app, {', '.join(APP_NAMES)}, or FILE.py:function)"
        )
    spec = importlib.util.spec_from_file_location(f"_polyimage_user_{Path(path).stem}", path)
    assert spec is not None and spec.loader is not None  # a .py file has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).resolve().parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    make = getattr(module, function, None)
    if not callable(make):
        raise ArgumentError(
            f"{target}: {path} has no function {function!r}{_functions_hint(path, '; try ')}"
        )
    outputs = make()
    if isinstance(outputs, polyimage.Function):
        outputs = [outputs]
    if not (
        isinstance(outputs, (list, tuple))
        and outputs
        and all(isinstance(f, polyimage.Function) for f in outputs)
    ):
        raise ArgumentError(
            f"{target}: {function}() must return the pipeline's outputs (a Function or a list "
            f"of them), got {type(outputs).__name__}"
        )
    return list(outputs), {}, None


def refuse_file_as_app(target: str) -> None:
    """Refuse a file named where an app is expected: a pipeline of one's own is given as
    FILE.py:function, and the message names the functions of the file that could be meant."""
    if target in APP_NAMES or not (target.endswith(".py") or os.path.isfile(target)):
        return
    if not target.endswith(".py"):
        raise ArgumentError(f"{target} is a file, not an app: {USER_PIPELINE}")
    if not os.path.isfile(target):
        raise ArgumentError(f"{target}: no such file; {USER_PIPELINE}")
    raise ArgumentError(
        f"{target}: {USER_PIPELINE}"
        + (_functions_hint(target, "; here, ") or f"; {target} defines none without arguments")
    )


def _functions_hint(path, lead: str) -> str:
    """`lead` and the functions of Python file `path` that take no arguments, as
    `FILE.py:function` (one of them builds the pipeline), or "" when it has none."""
    names = file_functions(path)
    choices = ", ".join(f"{path}:{name}" for name in names)
    return f"{lead}{'one of ' if len(names) > 1 else ''}{choices}" if names else ""


def file_functions(path) -> list:
    """The functions defined at the top of Python file `path` that can be called without
    arguments, read from its source without running it (none if it does not parse)."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and len(node.args.posonlyargs) + len(node.args.args) == len(node.args.defaults)
        and None not in node.args.kw_defaults
    ]


def note_bundled_photos(target: str, photos, images=()) -> None:
    """Say on stderr, in one line, which bundled photos `target` reads for want of INPUT
    (`images`: the input images of a user's pipeline that the photo fills)."""
    readers = ", ".join(images) or "it"
    verb = "read" if len(images) > 1 else "reads"
    noun = "photo" if len(photos) == 1 else "photos"
    print(
        f"polyimage: note: {target}: no INPUT given, so {readers} {verb} the bundled {noun} "
        f"{', '.join(photos)} (give photos after {target} to use yours)",
        file=sys.stderr,
        flush=True,
    )


def parse_estimates(pairs) -> dict:
    """`["R=2048,C=3072", "K=4"]` -> {"R": 2048, "C": 3072, "K": 4}."""
    estimates = {}
    for pair in ",".join(pairs or ()).split(","):
        if not pair:
            continue
        name, sep, text = pair.partition("=")
        try:
            value = int(text)
        except ValueError:
            value = None
        if not sep or not name or value is None or value < 1:
            raise ArgumentError(
                f"--estimates {pair!r}: expected NAME=VALUE with a positive integer VALUE"
            )
        estimates[name] = value
    return estimates
