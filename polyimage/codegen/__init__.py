"""C code generation: expressions, loop nests of stages, overlapped tiled groups, the module."""
