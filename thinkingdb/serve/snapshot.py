"""One generation of the knowledge base, pinned and kept warm for the readers of a server.

A :class:`Snapshot` opens the store read-only and holds one SQLite read transaction for its whole life,
so every statement it runs sees the same generation (WAL keeps that state for it while writers commit
newer ones). The fact graph, the rules and the lane indexes it builds belong to that generation; a
request runs entirely on one snapshot, so it sees the old state or the new one, never a mix.

Caller views: what a caller may see is decided by the access table of the search pipeline
(:class:`~thinkingdb.store.access.AccessTable`); ``query``, ``why``, provenance, stats, units and symbol
neighbourhoods all go through the same view — the fact graph of the view (a fact only hidden units
assert is not in it), and provenance rows of visible units or of sources outside units only.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections import OrderedDict
from typing import Callable

from ..api import KnowledgeBase
from ..model import Triple
from ..store.access import Caller, View

__all__ = ["Snapshot"]


class Snapshot:
    """A read-only, pinned view of the store at one generation, with its warm caches."""

    def __init__(self, path: str, *, default_rules: bool = True) -> None:
        self.path, self.default_rules = path, default_rules
        self.kb = KnowledgeBase(path, create=False, readonly=True, default_rules=default_rules)
        conn = self.kb.store.conn
        conn.execute("BEGIN")  # deferred: the first read below takes the snapshot
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        self.generation = int(row[0]) if row else 0
        self.users = 0
        self.retired = False
        self._closed = False
        self._prep = threading.RLock()
        self._ready: dict[str, set[str]] = {}
        self._labels: dict[str, str] | None = None
        self._prov_counts: dict[str | None, int] | None = None
        self._store_stats: dict | None = None

    def derive(self, views: list[tuple]) -> tuple["Snapshot", bool]:
        """A snapshot of the store as it is now, and whether it was derived from this one plus what the
        writes since changed (:mod:`thinkingdb.retrieval.incremental`) rather than left to be read and
        built whole. ``views``: the ``(caller, day)`` pairs whose prepared parts are carried over."""
        from ..retrieval.incremental import derive, read_changes
        from ..retrieval.lanes import _CACHE
        new = Snapshot(self.path, default_rules=self.default_rules)
        try:
            old_lanes = _CACHE.get(self.kb)
            if old_lanes is None or old_lanes.state is not self.kb._cache or new.generation < self.generation:
                return new, False
            old_conn, new_conn = self.kb.store.conn, new.kb.store.conn
            ch = read_changes(old_conn, new_conn, self.generation, new.generation)
            if ch is None:
                return new, False
            today = _dt.date.today()
            derive(old_lanes, new.kb, ch, [(Caller(), today)] + [v for v in views if v != (Caller(), today)])
            if self._labels is not None:
                new._labels = new.kb.labels()
            if self._prov_counts is not None:
                counts = dict(self._prov_counts)
                if ch.origins:
                    ph = ",".join("?" * len(ch.origins))
                    sql = f"SELECT unit_id, count(*) FROM provenance WHERE origin IN ({ph}) GROUP BY unit_id"
                    for conn, sign in ((old_conn, -1), (new_conn, 1)):
                        for uid, n in conn.execute(sql, sorted(ch.origins)).fetchall():
                            counts[uid] = counts.get(uid, 0) + sign * n
                new._prov_counts = {u: n for u, n in counts.items() if n}
        except BaseException:
            new.close()
            raise
        return new, True

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self.kb.store.conn.execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - closing anyway
                pass
            self.kb.close()

    # -- views ------------------------------------------------------------------------------------
    @property
    def lanes(self):
        from ..retrieval.lanes import lanes_for
        return lanes_for(self.kb)

    def view(self, caller: Caller, day: _dt.date) -> View:
        return self.lanes.access.view(caller, day)

    def prepare(self, caller: Caller, day: _dt.date, lanes: tuple[str, ...]) -> View:
        """The caller's view, with what ``lanes`` need built (once per view; builders take turns)."""
        view = self.view(caller, day)
        want = set(lanes)
        done = self._ready.get(view.fingerprint)
        if done is None or not want <= done:
            with self._prep:
                done = self._ready.setdefault(view.fingerprint, set())
                missing = tuple(lane for lane in ("bm25", "hdc", "closure") if lane in want - done)
                if missing:
                    self.lanes.prepare(view, missing)
                    self.kb.rules  # noqa: B018 - compiled once, here, not by racing readers
                    done.update(missing)
        return view

    def graph(self, view: View):
        """The fact graph of ``view``: facts only hidden units assert are not in it."""
        return self.lanes.graph(view)

    def visible_unit(self, view: View) -> Callable[[str], bool]:
        return self.lanes.visible_unit(view)

    def provenance(self, t: Triple, view: View) -> list[dict]:
        """The provenance rows of ``t`` the view may see (visible units, sources outside units)."""
        visible = self.visible_unit(view)
        return [row for row in self.kb.store.provenance(t)
                if row.get("unit_id") is None or visible(row["unit_id"])]

    def labels(self) -> dict[str, str]:
        if self._labels is None:
            with self._prep:
                if self._labels is None:
                    self._labels = self.kb.labels()
        return self._labels

    def labels_for(self, keys) -> dict[str, str]:
        labels = self.labels()
        return {k: labels.get(k, k) for k in sorted(set(keys))}

    def stats(self, view: View) -> dict:
        """The CLI's ``stats --json`` keys, counted over what ``view`` may see where the number is about
        knowledge (facts, provenance, symbols, relations, units); rules, declarations, aliases and sources
        are the store's."""
        with self._prep:
            if self._prov_counts is None:
                self._prov_counts = dict(self.kb.store.conn.execute(
                    "SELECT unit_id, count(*) FROM provenance GROUP BY unit_id").fetchall())
            if self._store_stats is None:   # the store-wide counts the view does not replace (small tables)
                from ..store.sqlite import SCHEMA_VERSION
                q = lambda sql: self.kb.store.conn.execute(sql).fetchone()[0]  # noqa: E731
                self._store_stats = {
                    "rules": q("SELECT count(DISTINCT name) FROM rules"),
                    "declarations": q("SELECT count(*) FROM (SELECT DISTINCT relation, kind, other FROM declarations)"),
                    "aliases": q("SELECT count(DISTINCT phrase) FROM aliases"), "sources": q("SELECT count(*) FROM sources"),
                    "schema_version": SCHEMA_VERSION}
        visible = self.visible_unit(view)
        prov = sum(n for uid, n in self._prov_counts.items() if uid is None or visible(uid))
        g = self.graph(view)
        relations = [r for r in g.relations() if g.relation_size(g.relation_id(r)) > 0]
        out = dict(self._store_stats)
        out.update({"facts": len(g), "provenance": prov, "symbols": g.symbol_count, "relations": len(relations),
                    "units": view.count, "generation": self.generation})
        return out
