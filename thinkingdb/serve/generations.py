"""One store file served as a sequence of generations: the current warm
:class:`~thinkingdb.serve.snapshot.Snapshot`, held by each request that reads it, and its swap for
a snapshot of the store's new state after a write or when another process wrote (noticed within
``poll_seconds``). A new snapshot is derived from the old one where it can be (else read whole),
the :data:`HOT_VIEWS` most recently used (caller, day) views are warmed in it before it is swapped
in, and the old one closes when its last reader is done: a request sees either the old state or the
new one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterator

from ..errors import StoreError, ThinkingDBError
from ..store.access import Caller
from ..store.sqlite import Store

from .snapshot import Snapshot

__all__ = ["Generations", "HOT_VIEWS"]

log = logging.getLogger("thinkingdb.serve")
HOT_VIEWS = 8          # (caller, day) views re-warmed in each new snapshot before it is swapped in


class Generations:
    """The served snapshots of the store at ``path`` (the base of :class:`~thinkingdb.serve.service.Service`)."""

    def __init__(self, path: str, default_rules: bool, poll_seconds: float) -> None:
        self.path = path
        self.default_rules = default_rules
        self.poll_seconds = poll_seconds
        self._probe = Store(path, create=False, readonly=True)
        self._probe_lock = threading.Lock()
        self._lock = threading.Lock()           # the current snapshot and its user counts
        self._refresh_lock = threading.Lock()   # one snapshot build at a time
        self._hot: OrderedDict[tuple, frozenset] = OrderedDict()   # (caller, day) -> the lanes it used
        self._checked = time.monotonic()
        self._current = Snapshot(path, default_rules=default_rules)
        self.refreshes = {"incremental": 0, "full": 0}   # new snapshots derived from the last one, or read whole
        self.closed = False

    @property
    def generation(self) -> int:
        return self._current.generation

    @contextmanager
    def reading(self) -> Iterator[Snapshot]:
        """The current snapshot, held for the duration of one request."""
        if self.closed:
            raise StoreError(f"{self.path}: the service is closed")
        self._poll()
        with self._lock:
            snap = self._current
            snap.users += 1
        try:
            yield snap
        finally:
            with self._lock:
                snap.users -= 1
                if snap.retired and snap.users == 0:
                    snap.close()

    def _poll(self) -> None:
        now = time.monotonic()
        if now - self._checked < self.poll_seconds:
            return
        self._checked = now
        with self._probe_lock:
            gen = self._probe.current_generation()
        if gen != self._current.generation and self._refresh_lock.acquire(blocking=False):
            def run() -> None:
                try:
                    self._swap()
                except ThinkingDBError:
                    pass  # the old snapshot keeps serving; the next poll tries again
                finally:
                    self._refresh_lock.release()
            threading.Thread(target=run, name="thinkingdb-refresh", daemon=True).start()

    def refresh(self) -> int:
        """Open, warm and swap in a snapshot of the store as it is now; returns its generation."""
        with self._refresh_lock:
            with self._probe_lock:
                gen = self._probe.current_generation()
            if gen == self._current.generation:  # a poll already swapped it in
                return gen
            return self._swap()

    def _swap(self) -> int:
        try:
            new, derived = self._current.derive(list(self._hot))
        except ThinkingDBError:
            raise
        except Exception:   # noqa: BLE001 - a failed derivation is logged as a full refresh, never served
            log.exception("deriving the new snapshot failed; reading the store whole")
            new, derived = Snapshot(self.path, default_rules=self.default_rules), False
        self.refreshes["incremental" if derived else "full"] += 1
        try:
            for (caller, day), lanes in list(self._hot.items()):
                new.prepare(caller, day, lanes)
        except BaseException:
            new.close()
            raise
        with self._lock:
            old, self._current = self._current, new
            old.retired = True
            if old.users == 0:
                old.close()
        return new.generation

    def _use(self, snap: Snapshot, caller: Caller, day, lanes: tuple[str, ...]):
        view = snap.prepare(caller, day, lanes)
        key = (caller, day)
        with self._lock:
            self._hot[key] = self._hot.get(key, frozenset()) | frozenset(lanes)
            self._hot.move_to_end(key)
            while len(self._hot) > HOT_VIEWS:
                self._hot.popitem(last=False)
        return view
