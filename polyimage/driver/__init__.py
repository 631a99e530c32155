"""The driver: `compile` (compiling.py) resolves what was asked into a request
(request.py), loads its record from the compile cache (record.py) or runs the passes
(lower.py), builds the module and wraps both in a callable `Pipeline` (pipeline.py); in a
thread (background.py), or timing candidates on the first call (measured.py, trial.py)."""
