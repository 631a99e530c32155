"""The C syntax tree (codegen.ctree): its printer and loop map, loop structure asserted on the
tree of compiled pipelines, outlined nests whose parameters come from the tree's free buffers,
and no module that parses the C it generated."""

import ast
import re
from pathlib import Path

from helpers import loop_structure, stage_trees

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.codegen import ctree
from polyimage.codegen.cprint import print_c
from polyimage.codegen.ctree import (
    Assign,
    Block,
    Call,
    Declare,
    For,
    If,
    Line,
    Parallel,
    Return,
    Stage,
    names_used,
    statements,
)

PACKAGE = Path(polyimage.__file__).resolve().parent


def _blur3d():
    K, R, C = Parameter(Int, "K"), Parameter(Int, "R"), Parameter(Int, "C")
    c, x, y = Variable(Int, "c"), Variable(Int, "x"), Variable(Int, "y")
    img = Image(Float, "img", [K, R + 2, C + 2])
    box = [Interval(Int, 0, K - 1), Interval(Int, 1, R), Interval(Int, 0, C + 1)]
    bx = Function(([c, x, y], box), Float, "bx")
    bx.defn = [img(c, x - 1, y) + img(c, x, y) + img(c, x + 1, y)]
    box = [Interval(Int, 0, K - 1), Interval(Int, 1, R), Interval(Int, 1, C)]
    by = Function(([c, x, y], box), Float, "by")
    by.defn = [bx(c, x, y - 1) + bx(c, x, y) + bx(c, x, y + 1)]
    return by


def test_the_printer_lays_out_blocks_branches_and_pragmas():
    inner = For("j", "0", "n - 1", Block((Assign("a[j]", "b[j] + 1"),)), simd=True)
    tree = Block(
        (
            Declare("int64_t", (("n", "8"), ("m", None)), const=False),
            If("n > 0", Assign("m", "n"), Block((Line("m = 0;"),))),
            Parallel(For("i", "0", "n", inner, inclusive=False, parallel="for"), "t", "n > 1"),
            Call("f", ("a", "b")),
        )
    )
    assert print_c(tree).text == (
        "{ int64_t n = 8, m;\n"
        "    if (n > 0) m = n;\n"
        "    else {\n"
        "        m = 0;\n"
        "    }\n"
        "    #pragma omp parallel num_threads(t) if(parallel: n > 1)\n"
        "    #pragma omp for\n"
        "    for (int64_t i = 0; i < n; i++)\n"
        "        #pragma omp simd\n"
        "        for (int64_t j = 0; j <= n - 1; j++) {\n"
        "            a[j] = b[j] + 1;\n"
        "        }\n"
        "    f(a, b);\n"
        "}\n"
    )
    assert statements(tree) == 8  # declare, if, two assignments, line, two loops, call


def test_the_printer_lays_out_the_runtime_and_helpers():
    """Functions on one line (helpers), with their brace on the head's line or below it,
    preprocessor lines at the line's start, a statement below its branch, a struct, a list
    wrapped onto a line of its own, and a prototype's declaration for the cdef."""
    helper = ctree.Function(
        "int",
        "pim_h",
        ("int a",),
        (ctree.If("a < 0", Return("0")), Return("a")),
        "PIM_INLINE",
        form=ctree.ONE_LINE,
    )
    assert (
        print_c(helper).text == "PIM_INLINE int pim_h(int a) { if (a < 0) return 0; return a; }\n"
    )
    guarded = ctree.Function(
        "void *",
        "f",
        ("size_t n", "\n       int k"),
        (ctree.Directive("#if X"), If("n", ctree.Below(Return("NULL"))), ctree.Directive("#endif")),
        "static",
        form=ctree.BRACE_ON_HEAD,
    )
    assert print_c(guarded).text == (
        "static void *f(size_t n,\n       int k) {\n#if X\n    if (n)\n        return NULL;\n"
        "#endif\n}\n"
    )
    struct = ctree.Typedef("s", (Declare("int", (("*p", None),)),))
    assert print_c(ctree.separated((struct, guarded.prototype))).text == (
        "typedef struct {\n    int *p;\n} s;\n\nstatic void *f(size_t n,\n       int k);\n"
    )
    pointer = ctree.Prototype("int", "g", (ctree.Pointer("float", "x", True),))
    assert pointer.declaration(restrict=False) == "int g(const float *x);"


def test_a_loop_property_is_one_field():
    loop = For("k", "0", "n", Line("x();"), parallel="parallel for", schedule="dynamic, 4")
    assert loop.pragma() == "#pragma omp parallel for schedule(dynamic, 4)"
    assert For("k", "0", "n", Line("x();")).pragma() == ""


def test_the_loop_map_places_every_loop_and_its_stages():
    simd = For("y", "0", "n", Block((Assign("out[y]", "1"),)), simd=True)
    stage = Stage("function", "out", (For("x", "0", "m", Block((simd,))),))
    nest = ctree.Function("void", "nest", ("int n",), (simd,), stages=("a", "b"))
    printed = print_c(Block((stage,)), first_line=5)
    outer, inner = printed.loops
    lines = printed.text.splitlines()
    assert lines[outer.line - 5].strip().startswith("for (int64_t x")
    assert lines[inner.line - 5].strip().startswith("for (int64_t y")
    assert outer.line < inner.line <= inner.end < outer.end
    assert outer.stages == inner.stages == ("out",)
    assert print_c(nest).loops[0].stages == ("a", "b")


def test_loop_structure_of_a_naive_stage_is_read_off_the_tree():
    pipe = polyimage.compile([_blur3d()], schedule="naive", build=False)
    (tree,) = stage_trees(pipe, "bx")
    shown = loop_structure(tree)
    assert shown[0] == "c:parallel for:collapse(2)" and shown[1] == "x"
    assert shown[2:] and all(s == "y:simd" or s == "y" for s in shown[2:]), shown
    assert "y:simd" in shown


def test_outlined_nests_take_exactly_the_buffers_their_trees_use():
    pipe = polyimage.compile(
        [_blur3d()], schedule="group 0: bx, by [1x8x16]", inline=False, build=False
    )
    nests = [f for f in pipe.cmodule.functions if f.name.startswith("pim_nest")]
    assert nests
    for nest in nests:
        used = {name for kind, name in names_used(Block(nest.body)) if kind in ("read", "write")}
        written = {name for kind, name in names_used(Block(nest.body)) if kind == "write"}
        pointers = {p.split("*restrict ")[1]: p for p in nest.params if "*restrict " in p}
        assert set(pointers) == used, nest.name
        for name, param in pointers.items():
            assert param.startswith("const ") == (name not in written), param
    calls = [n for n in ctree.walk(pipe.cmodule.functions[-1]) if isinstance(n, Call)]
    assert {c.function for c in calls} >= {f.name for f in nests}


def test_the_trees_of_two_compiles_are_equal():
    first = polyimage.compile([_blur3d()], schedule="auto", build=False)
    second = polyimage.compile([_blur3d()], schedule="auto", build=False)
    assert first.cmodule.functions == second.cmodule.functions
    assert first.cmodule.loops == second.cmodule.loops


# what only generated C holds: a line directive, a restrict qualifier, a prototype's head
_C_TOKENS = re.compile(r"#line|\brestrict\b|^(int|const|void|static|float|double) ")


def _names_c(arg) -> bool:
    """Whether a call's argument is a text (or a tuple of texts) only C would hold."""
    texts = arg.elts if isinstance(arg, ast.Tuple) else [arg]
    return any(
        isinstance(t, ast.Constant) and isinstance(t.value, str) and _C_TOKENS.search(t.value)
        for t in texts
    )


def _reads_generated_c(node) -> bool:
    """Whether an expression searches C text: `... in X.source`, a regular expression over
    it, or a find/index/split/splitlines of it (X.source, X.c_source, X.units, X.header, a
    header or source variable, a function's signature()), or any search or replace for what
    only C holds (`#line`, `restrict `, `int `...) whatever the text's name."""
    names = ("source", "c_source", "units", "header")

    def is_c(expr):
        if isinstance(expr, ast.Attribute):
            return expr.attr in names
        if isinstance(expr, ast.Name):
            return expr.id in ("header", "source", "c_source")
        return (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "signature"
        )

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        searching = ("find", "index", "split", "startswith", "endswith", "replace", "count")
        regex = isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
        if (regex or node.func.attr in searching) and any(_names_c(a) for a in node.args):
            return True

    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
        return any(is_c(c) for c in node.comparators)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "re":
            return any(is_c(a) for a in node.args)
        searches = ("find", "index", "split", "splitlines", "count", "rfind", "startswith")
        return node.func.attr in searches + ("replace",) and is_c(owner)
    return False


def test_no_module_parses_the_c_it_generated():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        offenders += [
            f"{path.relative_to(PACKAGE)}:{node.lineno}"
            for node in ast.walk(tree)
            if _reads_generated_c(node)
        ]
    assert offenders == []
    # every form a module once read its own C back with is caught
    caught = [
        "'pim_case' in pipe.c_source",
        "re.findall('x', cmodule.source)",
        "[line for line in header.splitlines() if line.startswith(('int ', 'const ', 'void '))]",
        "entry.signature().replace('restrict ', '')",
        "[line for line in text.splitlines() if not line.startswith('#line ')]",
        "[int(m[1]) for m in re.finditer(r'^#line (\\d+) \"', text, re.M)]",
        "code.header.index('int ')",
    ]
    for form in caught:
        tree = ast.parse(form, mode="eval")
        assert any(_reads_generated_c(node) for node in ast.walk(tree)), form
    assert not _reads_generated_c(ast.parse("log.splitlines()", mode="eval").body)
