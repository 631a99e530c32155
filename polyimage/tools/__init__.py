"""Tools that read a compile: its report, the profiled run, the vectorization verdicts, the
dump of each pass, the exported C library and its loader."""
