"""Building generated C into a shared library cffi opens (ABI mode), through a verified disk
cache."""
