"""The NumPy reference interpreter (the oracle of every test)."""

from .interpreter import interpret

__all__ = ["interpret"]
