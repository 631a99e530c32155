"""Other implementations of the apps for `polyimage bench`: OpenCV and Halide, both optional."""

from .halide_runner import halide_variants
from .opencv_versions import opencv_variants

__all__ = ["halide_variants", "opencv_variants"]
