"""The package version, read by setup.cfg and folded into the build-cache key."""

__version__ = "0.1.0"
