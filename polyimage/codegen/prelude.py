"""The runtime every kernel.c begins with (the prelude: includes, OpenMP's stand-ins, the
allocation and chunking functions) and the schedule clauses of parallel loops, which call its
pim_chunk."""

from __future__ import annotations

# parallel loops hand out their iterations to the threads that come for them, in chunks of about
# 1/CHUNKS_PER_THREAD of a thread's share: a thread the OS takes its core from then holds the
# others up by one chunk at most, not by all of its share (static shares did)
CHUNKS_PER_THREAD = 8
ONE_AT_A_TIME = "dynamic, 1"


# tiles of little work (their points times their members) go to a thread several at a time,
# consecutive ones, up to a chunk of pim_chunk: one hand-out then serves several, and a
# thread's rows stay adjacent for the prefetcher (histogram_equalize's one-row tiles of luma,
# one at a time, took 0.23 us each more than one loop over the rows)
TILE_CHUNK_POINTS = 65536


def tile_schedule(tiles: str, threads: str, tile_work: int) -> str:
    """The schedule clause of the loop over `tiles` (a C expression) of `tile_work` points
    each (over all members): one tile at a time, or as many as make TILE_CHUNK_POINTS."""
    per_chunk = -(-TILE_CHUNK_POINTS // max(tile_work, 1))
    if per_chunk <= 1:
        return ONE_AT_A_TIME
    chunk = f"pim_chunk({tiles}, {threads})"
    return f"dynamic, ({chunk} < {per_chunk} ? {chunk} : {per_chunk})"


def shared_schedule(iterations: str, threads: str) -> str:
    """The schedule clause of a parallel loop of `iterations` (a C expression) on `threads`:
    dynamic, in chunks of about CHUNKS_PER_THREAD per thread (pim_chunk in the prelude)."""
    return f"dynamic, pim_chunk({iterations}, {threads})"
