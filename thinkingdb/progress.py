"""A small progress bar on standard error (no dependency): shown only on a terminal, never with --quiet."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Report progress of a long job in bytes (or records) done out of a total.

    >>> p = Progress("ingest", 100, enabled=False)
    >>> p.update(50); p.done()
    """

    def __init__(self, label: str, total: int, *, enabled: bool | None = None, stream: TextIO | None = None):
        self.label, self.total = label, max(total, 1)
        self.stream = stream or sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled)
        self.count = 0
        self.records = 0
        self.start = self._last = time.monotonic()

    def update(self, amount: int, records: int = 0) -> None:
        self.count += amount
        self.records += records
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(self.count / self.total, 1.0)
        bar = "#" * int(frac * 30)
        rate = self.records / max(now - self.start, 1e-9)
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac:6.1%} {self.records:,} records {rate:,.0f}/s")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.count = self.total
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
