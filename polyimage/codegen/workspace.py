"""The workspace: memory a pipeline keeps between calls. Full buffers live in slots (buffers whose
lifetimes do not overlap share one, schedule.memory.buffer_slots) and scratchpads per thread;
a slot is reallocated only when a call needs more than it holds, so back-to-back calls map no
fresh pages. Each thread allocates (and so first touches) its own scratchpads. A call given no
workspace uses a temporary one and frees it on return.
"""

from __future__ import annotations

from .ctree import (
    Assign,
    Below,
    Block,
    Call,
    Declare,
    For,
    Function,
    If,
    Node,
    Prototype,
    Return,
    Typedef,
    defined,
    separated,
)
from .names import PREFIX

P = PREFIX

WORKSPACE = f"{PREFIX}w"  # the entry's pointer to the workspace in use
# what a node whose text reads the workspace uses (ctree `uses`): code that does stays in the
# entry, which alone knows the workspace's type
WORKSPACE_USE = frozenset({("workspace", WORKSPACE)})


def workspace_code(function: str, n_full: int, n_scratch: int) -> Node:
    """The workspace type of one pipeline, its helpers, and the exported functions
    `<function>_workspace_new` and `<function>_workspace_free`."""
    full = max(n_full, 1)
    fields = (
        Declare("void", ((f"*full[{full}]", None),)),
        Declare("size_t", ((f"full_bytes[{full}]", None),)),
        Declare("int", (("threads", None),)),
        Declare("void", (("**scratch", None),)),
        Declare("size_t", (("*scratch_bytes", None),)),
    )
    new, free = workspace_prototypes(function)
    made = Return(f"calloc(1, sizeof({P}workspace))")
    freed = (
        If("w != NULL", Below(Call(f"{P}clear", (f"({P}workspace *)w",)))),
        Call("free", ("w",)),
    )
    return separated(
        (
            Typedef(f"{P}workspace", fields),
            _reserve(),
            _reserve_threads(n_scratch),
            _clear(full, n_scratch),
            defined(new, (made,)),
            Function(free.returns, free.name, ("void *w",), freed, ""),
        )
    )


def _reserve() -> Function:
    """A slot's memory, reallocated only when it holds less than `bytes`."""
    return Function(
        "void *",
        f"{P}reserve",
        ("void **slot", "size_t *held", "size_t bytes"),
        (
            If("*slot != NULL && *held >= bytes", Below(Return("*slot"))),
            Call("free", ("*slot",)),
            Assign("*slot", f"{P}alloc(bytes)"),
            Assign("*held", "*slot != NULL ? bytes : 0"),
            Return("*slot"),
        ),
        "static",
    )


def _reserve_threads(n_scratch: int) -> Function:
    """Room for the scratchpads of `threads` threads, keeping those already allocated."""
    copied = Block(
        (Assign("scratch[k]", "w->scratch[k]"), Assign("bytes[k]", "w->scratch_bytes[k]"))
    )
    body = (
        If("threads <= w->threads", Below(Return("1"))),
        Declare(
            "size_t",
            (("n", f"(size_t)threads * {n_scratch}"), ("old", f"(size_t)w->threads * {n_scratch}")),
        ),
        Declare("void", (("**scratch", "calloc(n ? n : 1, sizeof(void *))"),)),
        Declare("size_t", (("*bytes", "calloc(n ? n : 1, sizeof(size_t))"),)),
        If(
            "scratch == NULL || bytes == NULL",
            Block((Call("free", ("scratch",)), Call("free", ("bytes",)), Return("0"))),
        ),
        For("k", "0", "old", copied, c_type="size_t", inclusive=False),
        Call("free", ("w->scratch",)),
        Call("free", ("w->scratch_bytes",)),
        Assign("w->scratch", "scratch"),
        Assign("w->scratch_bytes", "bytes"),
        Assign("w->threads", "threads"),
        Return("1"),
    )
    return Function(
        "int", f"{P}reserve_threads", (f"{P}workspace *w", "int threads"), body, "static"
    )


def _clear(full: int, n_scratch: int) -> Function:
    """Every buffer and scratchpad of a workspace freed."""
    threads = f"(size_t)w->threads * {n_scratch}"
    body = (
        For(
            "k", "0", str(full), Below(Call("free", ("w->full[k]",))), c_type="int", inclusive=False
        ),
        For(
            "k",
            "0",
            threads,
            Below(Call("free", ("w->scratch[k]",))),
            c_type="size_t",
            inclusive=False,
        ),
        Call("free", ("w->scratch",)),
        Call("free", ("w->scratch_bytes",)),
    )
    return Function("void", f"{P}clear", (f"{P}workspace *w",), body, "static")


def workspace_prototypes(function: str) -> tuple:
    """The declarations of `<function>_workspace_new` and `<function>_workspace_free`, as the
    cdef and the export take them."""
    return (
        Prototype("void *", f"{function}_workspace_new", ("void",)),
        Prototype("void", f"{function}_workspace_free", ("void *",)),
    )
