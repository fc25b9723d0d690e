"""The lanes' data for one store generation: BM25 and HDC indexes, the access table, fact visibility.

Everything here is built from the store's units on first use, cached in memory for the store
generation it was built at, and persisted in the store (``save_index``/``load_index``) with a params
record — lane, format version, scoring parameters, tokenizer settings, generation, view. A saved
index whose record differs from the one wanted now (another generation, other parameters) is stale
and rebuilt. Writing a rebuilt index is best effort: a read-only store still searches.

Per-caller score statistics. BM25's idf and average lengths are corpus statistics, so an index over
*all* units would let a hidden unit's text change the order of visible units (a hidden unit holding a
term lowers its idf). Instead a search uses the index of its caller's **view** — built from the
visible units only and shared by every caller who sees the same set (views are keyed by the
fingerprint of the visible set; the index over all units serves callers who see everything). View
indexes live in a small in-memory LRU and in ``VIEW_SLOTS`` persisted slots. HDC scores have no corpus
statistics (each unit is scored against the query alone), so one HDC index over all units, searched
with ``allowed`` = the visible ids, is exact.

Facts: a fact is visible iff a visible unit or a source outside units asserted it (see
:mod:`thinkingdb.store.access`); its confidence in a view is the max over its *visible* assertions, so a
hidden unit cannot raise a visible score either. When a view hides nothing the knowledge base's own
graph is used as is.
"""

from __future__ import annotations

import io
import json
import threading
import weakref
from collections import OrderedDict
from typing import Any

from ..store.access import AccessTable, CallerView, FactAccess, View, visible_labels
from ..errors import ThinkingDBError, translate
from ..model import Fact, Triple
from ..progress import Progress

__all__ = ["CallerView", "Lanes", "lanes_for", "VIEW_SLOTS", "FactAccess"]

VIEW_SLOTS = 8          # persisted per-view BM25 indexes (slot = fingerprint mod VIEW_SLOTS)
MEMORY_VIEWS = 8        # per-view indexes and graphs kept in memory

_CACHE: "weakref.WeakKeyDictionary[Any, Lanes]" = weakref.WeakKeyDictionary()


def lanes_for(kb) -> "Lanes":
    """The lanes of ``kb`` for its current store generation (rebuilt after any write).

    Units, facts, provenance and rules all come from ``kb``'s one-generation state (read in one
    read transaction), so a unit written while a search prepares is in every part or in none.
    """
    state = kb._state()
    lanes = _CACHE.get(kb)
    if lanes is None or lanes.state is not state:
        lanes = Lanes(kb, state)
        _CACHE[kb] = lanes
    return lanes


def topic_key(u) -> str | None:
    """The symbol key a unit's topic names (None: no topic, or one naming no symbol)."""
    return _topic_symbol(u.topic)


def _topic_symbol(topic: str | None) -> str | None:
    from ..errors import ValidationError
    from ..normalize import symbol_key
    try:
        return symbol_key(topic) if topic else None
    except ValidationError:   # a topic of quotes and spaces names no symbol
        return None


def _unit_fields(u) -> dict:
    fields = u.text_fields()
    if u.utility_acts:
        fields["utility_acts"] = list(u.utility_acts)
    return fields


def _digest(obj: Any) -> str:
    import hashlib
    return hashlib.blake2b(json.dumps(obj, sort_keys=True, default=str).encode(), digest_size=6).hexdigest()


class _LRU(OrderedDict):
    """A small LRU that concurrent readers may share: lookups and evictions run under a lock; a value
    is built outside it (two threads may both build one; the first kept wins)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def get_or(self, key, build, size: int = MEMORY_VIEWS):
        with self._lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
        value = build()
        with self._lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
            self[key] = value
            while len(self) > size:
                self.popitem(last=False)
            return value


class Lanes:
    """Lane indexes and views of one knowledge base at one store generation."""

    def __init__(self, kb, state, access: AccessTable | None = None) -> None:
        self.kb = kb
        self.state = state
        self.generation = state.generation
        self.units = state.units      # read whole on first use (the lexical lanes; a question never needs them)
        self._by_id: dict | None = None
        self.access = access if access is not None else _access_table(state)
        self._tokenizer = None
        self._bm25_views: _LRU = _LRU()
        self._graphs: _LRU = _LRU()
        self._ids_views: _LRU = _LRU()
        self._hdc = None
        self._matchers: _LRU = _LRU()
        self._symbol_table = None     # the matcher file's tables (retrieval/symboltable.py)
        self._rules: _LRU = _LRU()
        self._labels: _LRU = _LRU()
        self._all_labels: dict[str, str] | None = None
        self._readers: _LRU = _LRU()
        self._topics: dict[str, list[str]] | None = None
        self._topics_all: dict[str, list[str]] | None = None
        self._facts: FactAccess = state.facts
        self.built: dict[str, float] = {}   # lane -> seconds spent (re)building in this process
        self.carried: dict[str, bool] = {}  # lane -> carried from an earlier state (True: patched or re-keyed)

    @property
    def by_id(self):
        """Unit id -> unit: a dict over the units once they are read whole; before, a mapping that reads
        the units asked for one at a time (a server's unit page need not read 100,000 units)."""
        if self._by_id is None or (not isinstance(self._by_id, dict) and getattr(self.units, "loaded", True)):
            reader = getattr(self.state, "reader", None)
            if reader is None or getattr(self.units, "loaded", True):
                self._by_id = {u.id: u for u in self.units}
            else:
                from ..store.stateread import LazyMapping
                whole = lambda need: {u.id: u for u in self.units} if need else None  # noqa: E731
                self._by_id = LazyMapping(lambda uid: reader.read(lambda conn: reader.store.unit(uid))
                                      if isinstance(uid, str) else None, whole)
        return self._by_id

    @property
    def tokenizer(self):
        """The lanes' tokenizer (made on first use: a query never needs it)."""
        if self._tokenizer is None:
            from lexical import Tokenizer
            self._tokenizer = Tokenizer()
        return self._tokenizer

    def _with_progress(self, label: str, items, total: int):
        """Yield ``items``, drawing a progress bar on stderr when it is a terminal (builds of 100k units
        take from seconds to minutes, on the first search that needs the index)."""
        prog = Progress(f"building {label}", total)
        for item in items:
            prog.update(1, 1)
            yield item
        prog.done()

    def prepare(self, view: View, lanes: tuple[str, ...] = ("bm25", "hdc", "closure")) -> dict[str, dict]:
        """Load or build what searches of ``view`` through ``lanes`` need, ahead of the first search.

        Returns, per part, the seconds it took and its state: the persisted indexes (BM25, HDC) are
        ``built``, ``loaded`` (from the store, or already in memory) or ``carried`` (an index of an
        earlier store state, patched where units changed: :mod:`~thinkingdb.retrieval.lexcarry`,
        :mod:`~thinkingdb.retrieval.hdccarry`); the other parts are ``computed`` in memory for this process.
        """
        import time
        steps = []
        if "bm25" in lanes:
            steps.append(("bm25", f"bm25:{'all' if view.everything else view.fingerprint}", lambda: self.bm25(view)))
        if "hdc" in lanes:
            steps.append(("hdc", "hdc", self.hdc))
            steps.append(("view ids", None, lambda: self.view_ids(view)))
        if "closure" in lanes:
            steps += [("fact graph", None, lambda: self.state.graph), ("fact provenance", None, lambda: self.facts),
                      ("view graph", None, lambda: self.graph(view)), ("symbol matcher", None,
                                                                        lambda: self.matcher(view)),
                      ("question reader", None, lambda: self.question_reader(view)),
                      ("topic units", None, self.topic_units)]
        out = {}
        for name, key, step in steps:
            t0 = time.perf_counter()
            step()
            took = round(time.perf_counter() - t0, 3)
            state = ("computed" if key is None else "built" if key in self.built
                     else "carried" if key in self.carried else "loaded")
            out[name] = {"state": state, "seconds": took}
        return out

    # -- persistence -------------------------------------------------------------------------------
    def _record(self, lane: str, extra: dict) -> dict:
        return {"lane": lane, "generation": self.generation, "tokenizer": self.tokenizer.params(), **extra}

    def _stamped(self, record: dict) -> None:
        """Add the store state the index is built at to its ``record``: a later state may carry it
        (retrieval/lexcarry.py, retrieval/hdccarry.py)."""
        stamp = getattr(getattr(self.state, "reader", None), "stamp", None)
        if stamp is not None:
            record["stamp"] = [stamp.generation, stamp.token, stamp.max_fact]

    def _load(self, name: str, record: dict):
        """The saved blob of ``name`` if it was saved with ``record`` at this generation, else None.

        The record is read first and the blob only when it matches: after a write the carry modules
        read a stale blob themselves, and reading it here too cost 0.23-0.30 s more for the 158 MB HDC
        blob of 100,000 units (the record alone: 0.035 s)."""
        import sqlite3
        want = json.loads(json.dumps(record, sort_keys=True))
        try:
            head = self.kb.store.conn.execute("SELECT params, generation FROM lane_indexes WHERE name = ?",
                                              (name,)).fetchone()
            if head is None or json.loads(head[0]) != want or head[1] != self.generation:
                return None
            saved = self.kb.store.load_index(name)
        except (ThinkingDBError, sqlite3.Error, ValueError):   # ValueError: a corrupt record
            return None
        if saved is None:
            return None
        params, data, generation = saved
        if params != want or generation != self.generation:   # replaced between the two reads
            return None
        return data

    def _save(self, name: str, record: dict, obj) -> None:
        buf = io.BytesIO()
        obj.save(buf)
        try:
            self.kb.store.save_index(name, record, buf.getvalue())
        except Exception:  # noqa: BLE001 - a read-only or busy store still searches
            pass

    # -- BM25 ------------------------------------------------------------------------------------------
    def _bm25_record(self, view: View) -> dict:
        from lexical import FORMAT_VERSION, BM25Params
        return self._record("bm25", {"format": FORMAT_VERSION, "params": BM25Params().record(),
                                     "view": "all" if view.everything else view.fingerprint,
                                     "units": view.count})

    def _bm25_version(self, view: View) -> str:
        return f"bm25:g{self.generation}:{_digest(self._bm25_record(view))}"

    def _hdc_record(self) -> dict:
        from hdc import FORMAT_VERSION, HDCParams
        return self._record("hdc", {"format": FORMAT_VERSION, "params": HDCParams().to_dict(), "units": len(self.units)})

    def _hdc_version(self) -> str:
        return f"hdc:g{self.generation}:{_digest(self._hdc_record())}"

    def bm25(self, view: View):
        """``(index, version)`` of the BM25 index over the units of ``view``."""
        key = "all" if view.everything else view.fingerprint
        return self._bm25_views.get_or(key, lambda: self._bm25_build(view, key))

    def _bm25_build(self, view: View, key: str):
        import time
        from lexical import BM25Index
        record = self._bm25_record(view)
        self._stamped(record)
        name = "bm25" if key == "all" else f"bm25/view/{int(key, 16) % VIEW_SLOTS}"
        data = self._load(name, record)
        version = self._bm25_version(view)
        if data is not None:
            try:
                return BM25Index.load(io.BytesIO(data), tokenizer=self.tokenizer), version
            except Exception:  # noqa: BLE001 - a corrupt saved index is rebuilt, never trusted
                pass
        from .lexcarry import carry
        carried = carry(self, view, name, record, _unit_fields)
        if carried is not None:
            idx, save = carried
            self.carried[f"bm25:{key}"] = save
            if save:
                self._save(name, record, idx)
            return idx, version
        t0 = time.perf_counter()
        idx = BM25Index(tokenizer=self.tokenizer)
        mask = view.mask
        idx.rebuild(self._with_progress("BM25 index", ((u.id, _unit_fields(u)) for i, u in enumerate(self.units)
                                                        if mask[i]), view.count))
        self.built[f"bm25:{key}"] = time.perf_counter() - t0
        self._save(name, record, idx)
        return idx, version

    # -- HDC -------------------------------------------------------------------------------------------
    def hdc(self):
        """``(index, version)`` of the HDC index over all units (searched with ``allowed``)."""
        if self._hdc is None:
            self._hdc = self._hdc_build()
        return self._hdc

    def _hdc_build(self):
        import time
        from hdc import HDCIndex, HDCParams
        params = HDCParams()
        record = self._hdc_record()
        self._stamped(record)
        version = self._hdc_version()
        data = self._load("hdc", record)
        if data is not None:
            try:
                return HDCIndex.load(io.BytesIO(data), tokenizer=self.tokenizer, params=params), version
            except Exception:  # noqa: BLE001
                pass
        from .hdccarry import carry
        try:
            carried = carry(self, record, _unit_fields)
        except Exception as exc:  # a leaf error becomes a ThinkingDB error at this boundary
            raise translate(exc) from exc
        if carried is not None:
            idx, save = carried
            self.carried["hdc"] = save
            if save:
                self._save("hdc", record, idx)
            return idx, version
        t0 = time.perf_counter()
        idx = HDCIndex(params, tokenizer=self.tokenizer)
        try:
            idx.add_many(self._with_progress("HDC index", ((u.id, _unit_fields(u)) for u in self.units),
                                             len(self.units)))
        except Exception as exc:  # a leaf error becomes a ThinkingDB error at this boundary
            raise translate(exc) from exc
        self.built["hdc"] = time.perf_counter() - t0
        self._save("hdc", record, idx)
        return idx, version

    def view_ids(self, view: View) -> frozenset[str]:
        """The visible unit ids of ``view`` (cached: the ``allowed`` filter of the HDC lane)."""
        return self._ids_views.get_or(view.fingerprint, lambda: frozenset(view.visible_ids(self.access.ids)))

    def matcher(self, view: View):
        """The :class:`~thinkingdb.retrieval.expansion.SymbolMatcher` over the symbols and relations
        ``view`` may see — built from visible labels only, so a hidden multi-word symbol cannot change
        which words of a query match (nor, through that, a trace or a score); read from the store's
        matcher file where there is one (:mod:`~thinkingdb.retrieval.symboltable`)."""
        from .symboltable import matcher
        return self._matchers.get_or("all" if view.everything else view.fingerprint, lambda: matcher(self, view))

    def labels(self, view: View) -> dict[str, str]:
        """Labels of the symbols of the graph ``view`` may see."""
        key = "all" if view.everything else view.fingerprint

        def build():
            if self._all_labels is None:
                self._all_labels = self.kb.store.labels()
            return visible_labels(self._all_labels, self.graph(view))
        return self._labels.get_or(key, build)

    def rules(self, view: View) -> tuple:
        """The rules ``view`` may use: public ones and those of its visible restricted units."""
        key = "all" if view.everything else view.fingerprint
        return self._rules.get_or(key, lambda: self.state.rules_for(self.visible_unit(view)))

    def question_reader(self, view: View):
        """The :class:`~thinkingdb.retrieval.question.QuestionReader` of ``view``: its symbol matcher,
        the relations of its graph and rules, the store's aliases, inverse names and extraction phrases."""
        key = "all" if view.everything else view.fingerprint

        def build():
            from .question import QuestionReader
            vocab = self.kb.store.vocabulary()
            relations = set(self.graph(view).relations()) | {r.head.relation for r in self.rules(view)}
            return QuestionReader(self.matcher(view), sorted(relations), aliases=vocab.aliases,
                                  inverses=vocab.inverses)
        return self._readers.get_or(key, build)

    def topic_units(self) -> dict[str, list[str]]:
        """Symbol key → the units whose topic is that symbol (the units *about* it; filtered by the
        caller's visibility where used)."""
        if self._topics is None:
            index = self.topic_index()
            from ..store.topicfile import TopicMap
            if isinstance(index, TopicMap):     # read from its file: each key looked up when asked
                self._topics = _KnownTopics(index, self.state.graph)
            else:
                known = self.state.graph.known_symbols(index)   # one set intersection, not a search per key
                self._topics = {k: ids for k, ids in index.items() if k in known}
        return self._topics

    def topic_index(self) -> dict[str, list[str]]:
        """Symbol key → the units whose topic names it, whether or not a fact holds the symbol (in a
        process that reads the store lazily, a :class:`~thinkingdb.store.topicfile.TopicMap` of the
        file beside the store, patched through the change log after a write or written again)."""
        if self._topics_all is None:
            reader = getattr(self.state, "reader", None)
            if reader is not None and reader.stamp is not None and not getattr(self.units, "loaded", True):
                from ..store import topicfile
                from ..store.stateread import read_changed_topics
                path, stamp = self.kb.store.path, reader.stamp
                got = topicfile.load(path, stamp)
                if got is None:
                    got = topicfile.derive(path, stamp, lambda old: reader.read(
                        lambda conn: read_changed_topics(conn, old, stamp)), _topic_symbol)
                    if got is None:
                        got = self._topics_read()
                    topicfile.save(path, stamp, got)
                self._topics_all = got
            else:
                self._topics_all = self._topics_read()
        return self._topics_all

    def _topics_read(self) -> dict[str, list[str]]:
        """The topic index made from the units' ids and topics."""
        topics: dict[str, list[str]] = {}
        units = self.units
        reader = getattr(self.state, "reader", None)
        if reader is not None and not getattr(units, "loaded", True):   # ids and topics only, not the text
            from types import SimpleNamespace
            units = [SimpleNamespace(id=i, topic=t or "") for i, t in reader.read(
                lambda conn: conn.execute("SELECT id, topic FROM units ORDER BY id").fetchall())]
        for u in units:
            key = topic_key(u)
            if key is not None:
                topics.setdefault(key, []).append(u.id)
        return topics

    def caller_view(self, caller, day) -> CallerView:
        """The :class:`CallerView` of ``caller`` on ``day``."""
        view = self.access.view(caller, day)
        return CallerView(view, self.graph(view), self.rules(view), self.visible_unit(view),
                          lambda: self.labels(view))

    # -- facts -------------------------------------------------------------------------------------------
    @property
    def facts(self) -> FactAccess:
        return self._facts

    def visible_unit(self, view: View):
        """A predicate: is this unit id visible in ``view``?"""
        access, mask = self.access, view.mask    # (the id -> row table is made on the first call)
        return lambda uid: (i := access.row.get(uid)) is not None and bool(mask[i])

    def graph(self, view: View):
        """The fact graph a caller with this view may reason over (the KB's graph when nothing differs)."""
        key = "all" if view.everything else view.fingerprint
        return self._graphs.get_or(key, lambda: self._graph_build(view))

    def _graph_build(self, view: View):
        from ..engine.graph import FactGraph
        full = self.state.graph
        if view.everything:
            return full
        base = full.file if full.is_mapped else None
        if base is not None:     # the view's differences persisted beside the graph file (store/viewfile.py)
            from ..store import viewfile
            from ..store.graphdelta import entry_orders
            stamp = self._stamp()
            got = viewfile.open_view(self.kb.store.path, view.fingerprint, stamp, base)
            if got is viewfile.SAME:
                return full
            if got is not None:
                return _over(full, base, *got)
            derived = self._derive(view, stamp, base)
            if derived is not None:
                orders = entry_orders(base.n_symbols, derived[1])
                viewfile.save_view(self.kb.store.path, view.fingerprint, stamp, base, *derived, orders, view.mask)
                return _over(full, base, *derived, orders)
        changes = self._changes(view)
        if base is not None:
            from ..store.graphdelta import compose
            if not changes:
                viewfile.save_view(self.kb.store.path, view.fingerprint, stamp, base, None, None, None, view.mask)
                return full
            header, arrays = compose(base, full.overlay, changes)
            orders = entry_orders(base.n_symbols, arrays)
            viewfile.save_view(self.kb.store.path, view.fingerprint, stamp, base, header, arrays, orders, view.mask)
            return _over(full, base, header, arrays, orders)
        if not changes:
            return full
        drop = {Triple(s, r, o): c for s, r, o, c in changes}
        g = FactGraph()
        g.add_many(f if f.triple not in drop else Fact(f.subject, f.relation, f.object, drop[f.triple])
                   for f in full.facts() if drop.get(f.triple, f.confidence) is not None)
        return g

    def _derive(self, view: View, stamp, base):
        """The view's differences derived from a view file of this or an earlier store state and the
        change log (:func:`~thinkingdb.store.viewderive.derive`); None when they cannot be."""
        reader = getattr(self.state, "reader", None)
        if reader is None or reader.stamp is None:
            return None
        from ..store.viewderive import derive
        return derive(self.kb.store.path, stamp, base, self.state.graph.overlay, self.access, view.mask, reader.read)

    def _stamp(self):
        """The store stamp of this generation (read again on a pinned connection when not recorded)."""
        stamp = getattr(self.state, "stamp", None)
        if stamp is None:
            from ..store.graphfile import store_stamp
            stamp = store_stamp(self.kb.store)
        return stamp

    def _changes(self, view: View) -> list[tuple]:
        """The facts ``view`` sees differently from the full graph: ``(s, r, o, confidence or None)``,
        from the provenance rows when this process holds them all, else one SQL statement."""
        fa = self.facts
        if getattr(fa, "lazy", False) and fa._full is None:
            from ..store.viewfile import hidden_changes
            import numpy as np
            ids = self.access.ids
            hidden = [ids[i] for i in np.flatnonzero(~np.asarray(view.mask)).tolist()]
            reader = getattr(self.state, "reader", None)
            if reader is not None:
                return reader.read(lambda conn: hidden_changes(conn, hidden))
            return hidden_changes(self.kb.store.conn, hidden)
        import numpy as np
        full, visible = self.state.graph, self.visible_unit(view)
        changes: dict[Triple, float | None] = {}
        for i in np.flatnonzero(~view.mask).tolist():
            for t, _ in fa.unit_facts.get(self.access.ids[i], ()):
                if t in changes:
                    continue
                c = fa.visible_confidence(t, visible)
                if c is None or c != full.confidence(t):
                    changes[t] = c
        return [(t.subject, t.relation, t.object, c) for t, c in changes.items()]


class _KnownTopics:
    """``Lanes.topic_units`` over a :class:`~thinkingdb.store.topicfile.TopicMap`: a key's units when
    the graph holds the symbol (``get`` only, what the answers ask)."""

    def __init__(self, index, graph) -> None:
        self._index, self._graph = index, graph

    def get(self, key, default=None):
        ids = self._index.get(key)
        return default if ids is None or self._graph.symbol_id(key) is None else ids

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key):
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def items(self):
        known = self._graph.known_symbols(self._index.keys())
        return [(k, v) for k, v in self._index.items() if k in known]

    def keys(self):
        return [k for k, _ in self.items()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __eq__(self, other) -> bool:
        return isinstance(other, (dict, _KnownTopics)) and dict(self.items()) == dict(other.items())

    __hash__ = None   # type: ignore[assignment]


def _access_table(state) -> AccessTable:
    """The access table of ``state``: from the access file beside the store, patched by the change log
    when that file is of an earlier state (store/viewfile.py ``load_access``), when the state reads
    its units lazily; else ``state.access_table()`` or the table of its units."""
    if not hasattr(state, "access_table"):
        return AccessTable(state.units)
    reader = getattr(state, "reader", None)
    units = state.units
    if state.access is None and reader is not None and reader.stamp is not None and \
            not isinstance(units, list) and not getattr(units, "loaded", False):
        from ..store.stateread import read_access, read_changed_access
        from ..store.viewfile import load_access
        stamp = reader.stamp
        state.access = load_access(reader.store.path, stamp, lambda: reader.read(read_access),
                                   lambda old: reader.read(lambda conn: read_changed_access(conn, old, stamp)))
    return state.access_table()


def _over(full, base, header: dict, arrays: dict, orders: dict | None = None):
    """``full``'s graph file with a view's differences laid over it (a new read-only graph)."""
    from ..store.overlay import Overlay
    return type(full).mapped(base.arrays, base.relations, base.n_symbols, base.n_facts, base.path,
                             overlay=Overlay(base, header, arrays, orders), file=base)
