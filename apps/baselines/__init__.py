"""Other implementations of the apps for `polyimage bench`: NumPy and SciPy library calls, OpenCV
and Halide (all but NumPy optional)."""

from .halide_runner import halide_variants
from .library_versions import library_variants
from .opencv_versions import opencv_variants

__all__ = ["halide_variants", "library_variants", "opencv_variants"]
