"""Expression algebra shared by every layer above the DSL: evaluation with NumPy at known
values (evaluate), affine forms (affine), simplification (simplify) and interval bounds
(intervals). It imports only the DSL."""
