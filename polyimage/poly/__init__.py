"""Polyhedral analysis with isl: domains, access maps, bounds checks."""
