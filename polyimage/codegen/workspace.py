"""The workspace: memory a pipeline keeps between calls. Full buffers live in slots (buffers whose
lifetimes do not overlap share one, schedule.memory.buffer_slots) and scratchpads per thread;
a slot is reallocated only when a call needs more than it holds, so back-to-back calls map no
fresh pages. Each thread allocates (and so first touches) its own scratchpads. A call given no
workspace uses a temporary one and frees it on return.
"""

from __future__ import annotations

from .names import PREFIX

WORKSPACE = f"{PREFIX}w"  # the entry's pointer to the workspace in use


def workspace_source(function: str, n_full: int, n_scratch: int) -> str:
    """The workspace type of one pipeline, its helpers, and the exported functions
    `<function>_workspace_new` and `<function>_workspace_free`."""
    p = PREFIX
    return f"""\
typedef struct {{
    void *full[{max(n_full, 1)}];
    size_t full_bytes[{max(n_full, 1)}];
    int threads;
    void **scratch;
    size_t *scratch_bytes;
}} {p}workspace;

static void *{p}reserve(void **slot, size_t *held, size_t bytes)
{{
    if (*slot != NULL && *held >= bytes)
        return *slot;
    free(*slot);
    *slot = {p}alloc(bytes);
    *held = *slot != NULL ? bytes : 0;
    return *slot;
}}

static int {p}reserve_threads({p}workspace *w, int threads)
{{
    if (threads <= w->threads)
        return 1;
    size_t n = (size_t)threads * {n_scratch}, old = (size_t)w->threads * {n_scratch};
    void **scratch = calloc(n ? n : 1, sizeof(void *));
    size_t *bytes = calloc(n ? n : 1, sizeof(size_t));
    if (scratch == NULL || bytes == NULL) {{
        free(scratch);
        free(bytes);
        return 0;
    }}
    for (size_t k = 0; k < old; k++) {{
        scratch[k] = w->scratch[k];
        bytes[k] = w->scratch_bytes[k];
    }}
    free(w->scratch);
    free(w->scratch_bytes);
    w->scratch = scratch;
    w->scratch_bytes = bytes;
    w->threads = threads;
    return 1;
}}

static void {p}clear({p}workspace *w)
{{
    for (int k = 0; k < {max(n_full, 1)}; k++)
        free(w->full[k]);
    for (size_t k = 0; k < (size_t)w->threads * {n_scratch}; k++)
        free(w->scratch[k]);
    free(w->scratch);
    free(w->scratch_bytes);
}}

void *{function}_workspace_new(void)
{{
    return calloc(1, sizeof({p}workspace));
}}

void {function}_workspace_free(void *w)
{{
    if (w != NULL)
        {p}clear(({p}workspace *)w);
    free(w);
}}
"""


def workspace_cdef(function: str) -> str:
    return f"void *{function}_workspace_new(void);\nvoid {function}_workspace_free(void *);"
