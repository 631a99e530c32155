"""Progress of a tuning on stderr: a bar over the schedules to measure (it grows as candidates
are found), naming what is being done, with an ETA and the budget left; one line per step
where tqdm is not installed."""

from __future__ import annotations

import sys


class Progress:
    """The bar (or the lines) of one tuning."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=0, unit="schedule", file=self.stream, dynamic_ncols=True)

    def add(self, count: int) -> None:
        """`count` more schedules to measure."""
        if self.bar is not None:
            self.bar.total += count
            self.bar.refresh()

    def start(self, what: str, clock) -> None:
        """Say what is being done now, and the budget left."""
        left = max(clock.budget - clock.elapsed(), 0.0)
        if self.bar is None:
            print(f"[{clock.elapsed():.0f} s, {left:.0f} s left] {what}", file=self.stream)
            return
        self.bar.set_description_str(what[:60], refresh=False)
        self.bar.set_postfix_str(f"{left:.0f} s of budget left")

    def done(self) -> None:
        """One schedule measured."""
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
