"""argparse value types shared by the sub-commands' options: counts and seeds, checked as the
command line is parsed."""

from __future__ import annotations

import argparse


def at_least(minimum: int):
    """An argparse type: an integer of at least `minimum`."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


COUNT, SEED = at_least(1), at_least(0)
