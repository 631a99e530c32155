"""Splitting a pipeline's work into chunks of an image (used by polyimage.dask).

halo.split_plan(graph, constraints, values) -> SplitPlan: along every axis of the outputs,
how far each output point reaches into every stage and input (from the polyhedral access
maps), the scale of each stage against the output grid and the alignment that translating a
window by whole pyramid cells needs; or a SplitError saying why the pipeline cannot be split.
windows.Window: the input window and parameter values that compute one block of the output.
"""
