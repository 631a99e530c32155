"""A small C program for an exported pipeline, written from its manifest: it reads the inputs
from raw files, calls the entry (twice, on one workspace) with the thread count, parameters and
extents given on its command line, prints the status and message, and writes the outputs."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import numpy as np

from polyimage.dsl.serial import type_named


def harness_source(manifest: dict) -> str:
    name = manifest["name"]
    lines = [
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <stdint.h>",
        f'#include "{name}.h"',
        "",
        "static void *load(const char *path, size_t bytes)",
        "{",
        "    void *data = malloc(bytes ? bytes : 1);",
        '    FILE *f = fopen(path, "rb");',
        "    if (data == NULL || f == NULL || fread(data, 1, bytes, f) != bytes) exit(3);",
        "    fclose(f);",
        "    return data;",
        "}",
        "",
        "int main(int argc, char **argv)",
        "{",
        "    int k = 1;",
        "    int nthreads = atoi(argv[k++]);",
    ]
    args = []
    for n, (_, typ) in enumerate(manifest["params"]):
        t = type_named(typ)
        parse = "strtoll(argv[k++], NULL, 10)" if t.is_int else "strtod(argv[k++], NULL)"
        lines.append(f"    {t.c_name} p{n} = ({t.c_name}){parse};")
        args.append(f"p{n}")
    stages = {s["name"]: s for s in manifest["stages"] if "name" in s}
    buffers = [(b, True) for b in manifest["inputs"]]
    buffers += [(stages[name], False) for name in manifest["outputs"]]
    for n, (b, is_input) in enumerate(buffers):
        t = type_named(b["type"])
        rank = len(b["extents"] if is_input else b["intervals"])
        lines += [
            f"    const char *path{n} = argv[k++];",
            f"    int64_t e{n}[{rank}];",
            f"    size_t n{n} = 1;",
            f"    for (int d = 0; d < {rank}; d++) {{",
            f"        e{n}[d] = strtoll(argv[k++], NULL, 10);",
            f"        n{n} *= e{n}[d] > 0 ? (size_t)e{n}[d] : 0;",
            "    }",
        ]
        if is_input:
            lines.append(f"    {t.c_name} *b{n} = load(path{n}, n{n} * sizeof({t.c_name}));")
        else:
            lines.append(f"    {t.c_name} *b{n} = calloc(n{n} ? n{n} : 1, sizeof({t.c_name}));")
        args += [f"b{n}", f"e{n}"]
    call = ", ".join(["workspace", "nthreads"] + args)
    lines += [
        f"    void *workspace = {name}_workspace_new();",
        f"    int status = {name}({call});",
        f"    if (status == 0) status = {name}({call});",
        f'    printf("%d\\n%s\\n", status, {name}_error());',
        f"    {name}_workspace_free(workspace);",
    ]
    for n, (b, is_input) in enumerate(buffers):
        if not is_input:
            lines += [
                "    if (status == 0) {",
                f'        FILE *out{n} = fopen(path{n}, "wb");',
                f"        fwrite(b{n}, sizeof(*b{n}), n{n}, out{n});",
                f"        fclose(out{n});",
                "    }",
            ]
    lines += [f"    free(b{n});" for n in range(len(buffers))]
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def build_harness(folder: Path, program: Path, cc="cc", flags=(), link=None) -> Path:
    """Build the harness of the export in `folder` into `program`, linked with `link` (a list
    of files or flags; default: the static library and OpenMP)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    source = program.with_suffix(".c")
    source.write_text(harness_source(manifest))
    if link is None:
        link = [str(folder / manifest["static"]), "-fopenmp", "-lm"]
    argv = (
        shlex.split(cc) + list(flags) + ["-I", str(folder), str(source), *link, "-o", str(program)]
    )
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stdout}{done.stderr}"
    return program


def run_harness(program, manifest, threads, params, inputs, output_shapes, tmp, runner=()):
    """(status, message, outputs) of one run: `params` by name, `inputs` arrays by name (their
    shapes as extents), `output_shapes` the extents passed for each output."""
    argv = list(runner) + [str(program), str(threads)]
    argv += [str(params[n]) for n, _ in manifest["params"]]
    for spec in manifest["inputs"]:
        array = np.ascontiguousarray(inputs[spec["name"]])
        path = Path(tmp) / f"in_{spec['name']}.bin"
        array.tofile(path)
        argv += [str(path)] + [str(x) for x in array.shape]
    paths = []
    for name, shape in zip(manifest["outputs"], output_shapes):
        paths.append(Path(tmp) / f"out_{name}.bin")
        argv += [str(paths[-1])] + [str(x) for x in shape]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stdout}{done.stderr}"
    status_line, _, message = done.stdout.partition("\n")
    outputs = []
    if int(status_line) == 0:
        types = {s["name"]: s["type"] for s in manifest["stages"] if "name" in s}
        for name, shape, path in zip(manifest["outputs"], output_shapes, paths):
            dtype = type_named(types[name]).dtype
            outputs.append(np.fromfile(path, dtype).reshape(shape))
    return int(status_line), message.strip(), outputs
