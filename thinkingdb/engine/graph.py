"""The in-memory fact graph the closure and the queries run on.

Symbols and relations are interned as small integers so the hot paths (joins, path walks) hash ints,
not strings. Asserted facts live in two indexes per relation, by subject and by object, each mapping a
bound position to ``{other end: confidence}``; those are the indexes joins use on bound positions.
A relation's by-object index is built from its by-subject one the first time it is read, then kept
up to date (:class:`_ByObject`): a closure over whole relations never reads it, and it is half of
the graph's memory. A duplicate triple keeps the highest confidence (SPEC §3).

Most subjects have one fact per relation, mostly at confidence 1 (``x type student``), and a dict of
one entry costs about 220 bytes. A subject's first fact at 1.0 therefore gets the row ``{object: 1.0}``
that every such subject shares (one per object, kept in ``_one``, with how many subjects hold it in
``_one_n``). A shared row is copied before it changes, unless only the changing subject holds it:
then it leaves ``_one`` and is that subject's own (a DAG whose nodes have two parents keeps no row per
object that no subject uses). After :meth:`FactGraph.patched` the two graphs share rows: each copies a
row before it changes it (``_cow``), ``_one`` rows included, so neither sees the other's later adds. The LUBM benchmark's
75,835 facts took 15.4 MB as one dict per row, 7.3 MB with shared rows (tracemalloc). Readers see
plain dicts either way.

A graph opened from a graph file (:meth:`FactGraph.mapped`, see :mod:`thinkingdb.engine.mapped`) keeps
the same indexes as read-only views over the memory-mapped arrays: a row, a symbol or a relation is
decoded when first touched, so a question costs what it reads. Its symbols are interned in sorted
order, so an id is its canonical rank. Adding a fact to such a graph first decodes it whole.

>>> from thinkingdb.model import Fact, Triple
>>> g = FactGraph()
>>> g.add_many([Fact("nginx", "depends_on", "openssl", 0.8), Fact("nginx", "depends_on", "openssl", 0.9)])
>>> len(g), g.confidence(Triple("nginx", "depends_on", "openssl"))
(1, 0.9)
>>> sorted(g.objects("nginx", "depends_on"))
['openssl']
"""

from __future__ import annotations

from itertools import chain

from ..model import Fact, Triple

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator, Mapping, Sequence

__all__ = ["FactGraph", "relation_arrays"]


class FactGraph:
    """Asserted facts with confidences, symbols and relations interned as ints.

    The graph only grows (``add``); a closure or a query never mutates it, so it can be shared by
    concurrent readers once built. ``version`` changes on every change.
    """

    __slots__ = ("_sym", "_syms", "_rel", "_rels", "_out", "_in", "_count", "_rel_sizes", "version", "_rank_cache",
                 "_mapped", "source", "file", "overlay", "_one", "_one_n", "_cow")

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self._sym: dict[str, int] = {}
        self._syms: list[str] = []
        self._rel: dict[str, int] = {}
        self._rels: list[str] = []
        self._out: list[dict[int, dict[int, float]]] = []   # rel -> subject -> {object: confidence}
        self._in: _ByObject = _ByObject(self._out)          # rel -> object -> {subject: confidence}
        self._count = 0
        self._rel_sizes: list[int] = []                      # rel -> number of asserted facts
        self._one: dict[int, dict[int, float]] = {}          # object -> the shared row {object: 1.0}
        self._one_n: dict[int, int] = {}                     # object -> how many subjects hold that row
        # None: every row is this graph's own. A set once patched() shared the rows with another graph:
        # the (direction, relation, key) rows this graph has copied since; any other is copied before
        # it changes, so neither graph sees the other's later adds
        self._cow: set[tuple[int, int, int]] | None = None
        self.version = 0
        self._rank_cache: tuple[int, Sequence[int], Sequence[int]] | None = None
        self._mapped = False
        self.source: str | None = None   # the graph file a mapped graph reads
        self.file: Any = None            # its GraphArrays, when a caller gave them
        self.overlay: Any = None         # the delta read over that file (an Overlay), if any
        self.add_many(facts)

    @classmethod
    def mapped(cls, arrays: Mapping[str, Any], relations: Sequence[str], n_symbols: int, n_facts: int,
               source: str = "<arrays>", overlay: Any = None, file: Any = None) -> "FactGraph":
        """A read-only graph over graph-file arrays (:class:`thinkingdb.store.graphfile.GraphArrays`
        holds them): symbols sorted, per direction CSR indexes; nothing is decoded until touched.

        >>> import numpy as np
        >>> from thinkingdb.model import Triple
        >>> i = lambda *v: np.array(v)
        >>> arrays = {"sym_off": i(0, 1, 2), "sym_blob": np.frombuffer(b"ab", dtype=np.uint8),
        ...           "out_rel": i(0, 1), "out_keys": i(0), "out_ptr": i(0, 1), "out_vals": i(1),
        ...           "in_rel": i(0, 1), "in_keys": i(1), "in_ptr": i(0, 1), "in_vals": i(0), "rel_sizes": i(1)}
        >>> g = FactGraph.mapped(arrays, ["r"], 2, 1)
        >>> g.objects("a", "r"), g.subjects("r", "b"), g.confidence(Triple("a", "r", "b")), len(g)
        ({'b': 1.0}, {'a': 1.0}, 1.0, 1)

        ``overlay`` (a :class:`thinkingdb.store.overlay.Overlay`): the file's delta, read with it;
        ids stay ranks in the combined graph (docs/storage.md). ``file``: the
        :class:`~thinkingdb.store.graphfile.GraphArrays` these arrays come from, kept as ``g.file`` so a
        restricted copy can be laid over the same file (:func:`thinkingdb.store.graphdelta.restricted`).
        """
        if overlay is not None:
            g = cls._overlaid(overlay, source)
            g.file, g.overlay = file, overlay
            return g
        from .mapped import RelationIndex, SymbolIndex, SymbolTable, column
        g = cls()
        g._syms = SymbolTable(arrays, n_symbols)
        g._sym = SymbolIndex(arrays, n_symbols, g._syms)
        g._rels = list(relations)
        g._rel = {r: i for i, r in enumerate(g._rels)}
        g._out = [None] * len(g._rels)
        g._in = [None] * len(g._rels)
        for rid in range(len(g._rels)):
            g._out[rid] = RelationIndex(arrays, "out", rid, n_symbols, source, g._out, rid)
            g._in[rid] = RelationIndex(arrays, "in", rid, n_symbols, source, g._in, rid)
        g._count = n_facts
        g._rel_sizes = [int(x) for x in column(arrays, "rel_sizes")]
        g._mapped, g.source, g.file, g.overlay = True, source, file, None
        # ids are ranks: symbols and relations are stored sorted
        g._rank_cache = (n_symbols + (len(g._rels) << 40), range(n_symbols), range(len(g._rels)))
        return g

    @classmethod
    def _overlaid(cls, ov: Any, source: str) -> "FactGraph":
        from .mapped import OverlayRelationIndex, OverlaySymbolIndex, OverlaySymbolTable
        g = cls()
        g._syms = OverlaySymbolTable(ov)
        g._sym = OverlaySymbolIndex(ov, g._syms)
        g._rels = list(ov.relations)
        g._rel = {r: i for i, r in enumerate(g._rels)}
        g._out = [None] * len(g._rels)
        g._in = [None] * len(g._rels)
        for rid, e in enumerate(ov.rel_ext):
            g._out[rid] = OverlayRelationIndex(ov, "out", e, g._out, rid)
            g._in[rid] = OverlayRelationIndex(ov, "in", e, g._in, rid)
        g._count = ov.n_facts
        g._rel_sizes = list(ov.rel_sizes)
        g._mapped, g.source, g.file, g.overlay = True, source, None, ov
        g._rank_cache = (ov.n + (len(g._rels) << 40), range(ov.n), range(len(g._rels)))
        return g

    @property
    def is_mapped(self) -> bool:
        """True while the graph reads a graph file (nothing added since it was opened)."""
        return self._mapped

    def _unmap(self) -> None:
        """Decode a mapped graph whole into plain dicts and lists, so it can grow."""
        self._syms = list(self._syms)
        self._sym = {k: i for i, k in enumerate(self._syms)}
        self._out = [dict(ix.items()) for ix in self._out]
        self._in = _ByObject(self._out, [dict(ix.items()) for ix in self._in])
        self._mapped, self.file, self.overlay = False, None, None

    def key_rank(self, key: str) -> float:
        """Where ``key`` sorts among the graph's symbols: its rank if present, else a half-step
        before the first symbol sorting after it (for symbols the graph has never seen)."""
        if self._mapped:
            sid = self._sym.get(key)
            return sid if sid is not None else self._sym.insertion_point(key) - 0.5
        from bisect import bisect_left
        sid = self._sym.get(key)
        if sid is not None:
            return self.ranks()[0][sid]
        order = sorted(self._syms)
        return bisect_left(order, key) - 0.5

    # -- interning -------------------------------------------------------------------------------
    def intern_symbol(self, key: str) -> int:
        if self._mapped:
            self._unmap()
        sid = self._sym.get(key)
        if sid is None:
            sid = self._sym[key] = len(self._syms)
            self._syms.append(key)
        return sid

    def intern_relation(self, key: str) -> int:
        if self._mapped:
            self._unmap()
        rid = self._rel.get(key)
        if rid is None:
            rid = self._rel[key] = len(self._rels)
            self._rels.append(key)
            self._out.append({})
            self._in.append(None)   # built when first read
            self._rel_sizes.append(0)
        return rid

    def symbol_id(self, key: str) -> int | None:
        """The int of a symbol key, or None when the graph has never seen it."""
        return self._sym.get(key)

    def known_symbols(self, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` that are symbols of the graph. Many keys against a graph file: its
        symbol table decoded once and intersected, not a binary search per key (200,000 answer keys
        on a 1M-fact store: 5 s one by one).

        >>> FactGraph([Fact("a", "r", "b")]).known_symbols(["b", "c"])
        {'b'}
        """
        keys = set(keys)
        if self._mapped and len(keys) * 16 > len(self._syms):
            return keys.intersection(self._syms.all())
        return {k for k in keys if self._sym.get(k) is not None}

    def relation_id(self, key: str) -> int | None:
        return self._rel.get(key)

    def symbol(self, sid: int) -> str:
        return self._syms[sid]

    def relation(self, rid: int) -> str:
        return self._rels[rid]

    @property
    def symbol_count(self) -> int:
        return len(self._syms)

    @property
    def relation_count(self) -> int:
        return len(self._rels)

    # -- adding ----------------------------------------------------------------------------------
    def add(self, fact: Fact) -> None:
        """Assert one fact; a duplicate triple keeps the maximum confidence."""
        self._add(self.intern_symbol(fact.subject), self.intern_relation(fact.relation),
                  self.intern_symbol(fact.object), float(fact.confidence))

    def add_many(self, facts: Iterable[Fact]) -> None:
        for f in facts:
            self.add(f)

    def _add(self, s: int, r: int, o: int, conf: float) -> None:
        if self._mapped:
            self._unmap()
        rows, cow = self._out[r], self._cow
        row = rows.get(s)
        old = None if row is None else row.get(o)
        if old is not None and old >= conf:
            return
        if old is None:
            self._count += 1
            self._rel_sizes[r] += 1
        if row is None:
            if conf == 1.0:
                row = self._one.get(o)
                if row is None:
                    row = self._one[o] = {o: conf}
                rows[s] = row
                self._one_n[o] = self._one_n.get(o, 0) + 1
                if cow is not None:
                    cow.discard((0, r, s))   # (a row the patch copied for s and then removed: now shared)
            else:
                rows[s] = {o: conf}
                if cow is not None:
                    cow.add((0, r, s))
        else:
            if cow is not None and (0, r, s) not in cow:   # shared with a patched graph
                row = rows[s] = dict(row)
                cow.add((0, r, s))
            elif len(row) == 1 and self._one.get(key := next(iter(row))) is row:
                n = self._one_n[key] = self._one_n[key] - 1
                if n:
                    row = rows[s] = dict(row)   # shared: other subjects keep theirs
                else:
                    del self._one[key], self._one_n[key]   # this subject's alone: it becomes its own row
            row[o] = conf
        by_o = self._in.built(r)
        if by_o is not None:
            col = by_o.get(o)
            if col is None:
                col = by_o[o] = {}
                if cow is not None:
                    cow.add((1, r, o))
            elif cow is not None and (1, r, o) not in cow:
                col = by_o[o] = dict(col)
                cow.add((1, r, o))
            col[s] = conf
        self.version += 1

    def patched(self, changes: Mapping[Triple, float | None]) -> "FactGraph":
        """A new graph: this one with each triple of ``changes`` set to its confidence (None: removed).

        This graph is left as it is (readers may share it): the new one shares every row the changes do
        not touch and copies those they do, so the cost follows the changes, not the graph. A symbol
        left without facts is dropped and the last symbol takes its id, so the ids stay ``0..n-1``
        like those of a graph built from the same facts.

        >>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c", 0.5)])
        >>> h = g.patched({Triple("a", "r", "b"): None, Triple("c", "r", "d"): 0.7})
        >>> sorted((f.subject, f.object, f.confidence) for f in h.facts()), h.symbol_count, len(h)
        ([('b', 'c', 0.5), ('c', 'd', 0.7)], 3, 2)
        >>> len(g), g.symbol_count
        (2, 3)
        """
        if self._mapped:
            self._unmap_copy_required()
        g = FactGraph.__new__(FactGraph)
        g._sym, g._syms = dict(self._sym), list(self._syms)
        g._rel, g._rels = dict(self._rel), list(self._rels)
        g._out = [dict(d) for d in self._out]
        g._in = _ByObject(g._out, [dict(d) for d in self._in])   # (reading builds every by-object index)
        g._count, g._rel_sizes = self._count, list(self._rel_sizes)
        g._one, g._one_n = self._one, {}   # (never taken over once shared: every row is copied first, _cow)
        self._cow = set()    # from now on both graphs hold every row the patch does not copy
        g.version, g._rank_cache, g._mapped, g.source, g.file, g.overlay = self.version + 1, None, False, None, None, None
        own: set[tuple[int, int, int]] = set()   # (direction, relation, key) rows copied already

        def row(d: int, r: int, k: int, make: bool) -> dict | None:
            idx = (g._out, g._in)[d][r]
            cur = idx.get(k)
            if (d, r, k) in own and cur is not None:
                return cur
            if cur is None and not make:
                return None
            cur = idx[k] = dict(cur) if cur is not None else {}
            own.add((d, r, k))
            return cur

        touched: set[int] = set()
        for t, c in changes.items():
            if c is None:
                r, s, o = g._rel.get(t.relation), g._sym.get(t.subject), g._sym.get(t.object)
                if r is None or s is None or o is None or o not in g._out[r].get(s, {}):
                    continue
                out, inn = row(0, r, s, False), row(1, r, o, False)
                del out[o], inn[s]
                if not out:
                    del g._out[r][s]
                if not inn:
                    del g._in[r][o]
                g._count -= 1
                g._rel_sizes[r] -= 1
                touched.update((s, o))
            else:
                r = g.intern_relation(t.relation)
                s, o = g.intern_symbol(t.subject), g.intern_symbol(t.object)
                out = row(0, r, s, True)
                if o not in out:
                    g._count += 1
                    g._rel_sizes[r] += 1
                out[o] = float(c)
                row(1, r, o, True)[s] = float(c)
        for sid in sorted(touched, reverse=True):   # highest first: a moved id is never one still to check
            if not any(sid in g._out[r] or sid in g._in[r] for r in range(len(g._rels))):
                g._drop_symbol(sid, row, own)
        g._cow = own
        return g

    def _unmap_copy_required(self) -> None:
        raise TypeError("a graph-file graph is patched through its delta file, not in memory")

    def _drop_symbol(self, sid: int, row, own: set) -> None:
        """Forget a symbol without facts; the last symbol moves into its id (its rows re-keyed, and
        ``own``, the rows this patch copied, follows them: a moved row is still shared unless it was)."""
        last = len(self._syms) - 1
        del self._sym[self._syms[sid]]
        if sid != last:
            key = self._syms[last]
            for r in range(len(self._rels)):
                for d in (0, 1):
                    idx, other = (self._out, self._in)[d][r], 1 - d
                    moved = idx.pop(last, None)
                    if moved is None:
                        continue
                    for x in list(moved):
                        if x != last:    # the far end's row names the moved symbol: re-key it
                            far = row(other, r, x, True)
                            far[sid] = far.pop(last)
                    if (d, r, last) in own:
                        own.discard((d, r, last))
                        own.add((d, r, sid))
                    else:
                        own.discard((d, r, sid))
                    if last in moved:    # a self-loop: the row names the symbol itself
                        moved = dict(moved)
                        moved[sid] = moved.pop(last)
                        own.add((d, r, sid))
                    idx[sid] = moved
            self._syms[sid] = key
            self._sym[key] = sid
        self._syms.pop()

    # -- reading ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    def __contains__(self, triple: object) -> bool:
        return isinstance(triple, Triple) and self.confidence(triple) is not None

    def confidence(self, triple: Triple) -> float | None:
        """The asserted confidence of a triple, or None if it is not asserted."""
        r = self._rel.get(triple.relation)
        s = self._sym.get(triple.subject)
        o = self._sym.get(triple.object)
        if r is None or s is None or o is None:
            return None
        return self._out[r].get(s, {}).get(o)

    def relations(self) -> list[str]:
        """Relation keys that have at least one fact, sorted."""
        return sorted(self._rels[r] for r in range(len(self._rels)) if self._out[r])

    def relation_size(self, rid: int) -> int:
        return self._rel_sizes[rid]

    def objects(self, subject: str, relation: str) -> dict[str, float]:
        """``{object: confidence}`` of the asserted facts ``subject relation ?``."""
        r, s = self._rel.get(relation), self._sym.get(subject)
        if r is None or s is None:
            return {}
        return {self._syms[o]: c for o, c in self._out[r].get(s, {}).items()}

    def subjects(self, relation: str, obj: str) -> dict[str, float]:
        """``{subject: confidence}`` of the asserted facts ``? relation obj``."""
        r, o = self._rel.get(relation), self._sym.get(obj)
        if r is None or o is None:
            return {}
        return {self._syms[s]: c for s, c in self._in[r].get(o, {}).items()}

    def facts(self) -> Iterator[Fact]:
        """Every asserted fact, in canonical (sorted) order."""
        out = []
        for r, by_s in enumerate(self._out):
            for s, row in by_s.items():
                for o, c in row.items():
                    out.append(Fact(self._syms[s], self._rels[r], self._syms[o], c))
        out.sort()
        return iter(out)

    def ranks(self) -> tuple[Sequence[int], list[int]]:
        """Canonical ranks: ``sym_rank[id]`` and ``rel_rank[id]`` order ids as their keys sort.

        Interned ids depend on insertion order; ranks do not, so every tie-break goes through them
        (that is what makes results independent of the order facts were added). Cached per version.
        The symbols' ranks are an ``array('q')`` (8 bytes a symbol; a list of ints held 36).

        >>> g = FactGraph([Fact("b", "r", "a"), Fact("c", "r", "b")])   # ids: b 0, a 1, c 2
        >>> list(g.ranks()[0]), g.ranks()[1]
        ([1, 0, 2], [0])
        """
        cache = self._rank_cache
        if cache is not None and cache[0] == len(self._syms) + (len(self._rels) << 40):
            return cache[1], cache[2]
        from array import array   # (a mapped graph's ranks are its ids: a cold question does not load it)
        sym_rank = array("q", bytes(8 * len(self._syms)))
        for rank, sid in enumerate(sorted(range(len(self._syms)), key=self._syms.__getitem__)):
            sym_rank[sid] = rank
        rel_rank = [0] * len(self._rels)
        for rank, rid in enumerate(sorted(range(len(self._rels)), key=self._rels.__getitem__)):
            rel_rank[rid] = rank
        self._rank_cache = (len(self._syms) + (len(self._rels) << 40), sym_rank, rel_rank)
        return sym_rank, rel_rank


class _ByObject(list):
    """The by-object indexes of a plain graph, one per relation id (``None`` until built): reading
    ``ix[r]`` builds relation ``r``'s ``{object: {subject: confidence}}`` from the by-subject index
    ``out[r]`` the first time, in the by-subject index's order.

    >>> out = [{1: {2: 1.0, 3: 0.5}, 4: {2: 1.0}}]
    >>> ix = _ByObject(out, [None])
    >>> ix.built(0) is None, ix[0], ix.built(0) is ix[0]
    (True, {2: {1: 1.0, 4: 1.0}, 3: {1: 0.5}}, True)
    """

    __slots__ = ("_out",)

    def __init__(self, out: list, items: Iterable = ()) -> None:
        super().__init__(items)
        self._out = out

    def built(self, r: int) -> dict | None:
        """Relation ``r``'s index if it was built, else None (without building it)."""
        return list.__getitem__(self, r)

    def __getitem__(self, r):   # an int: relation ids are never sliced
        ix = list.__getitem__(self, r)
        if ix is None:
            ix = {}
            for s, row in self._out[r].items():
                for o, c in row.items():
                    col = ix.get(o)
                    if col is None:
                        col = ix[o] = {}
                    col[s] = c
            list.__setitem__(self, r, ix)   # one assignment: a concurrent reader sees all or nothing
        return ix

    def __iter__(self):
        return (self[r] for r in range(len(self)))


def relation_arrays(g: FactGraph, r: int, scope=None, members=None):
    """The asserted facts of relation id ``r`` as numpy arrays ``(subjects, objects, confidences)``
    (int32, int32, float64), only those with both ends in ``scope`` (a bool array per symbol id;
    None: all). A graph-file relation is read from its arrays, never decoded into dicts.

    ``members``: the ids set in ``scope`` (a sequence). When the scope holds fewer symbols than the
    relation has subjects, the rows of the members are read instead of the whole relation (a goal's
    scope of a few hundred symbols in a 43k-term ontology); the facts are the same, subjects in
    the order of ``members`` (callers that care sort them).

    >>> import numpy as np
    >>> g = FactGraph([Fact("a", "r", "b", 0.5), Fact("a", "r", "c"), Fact("c", "r", "a")])
    >>> s, o, c = relation_arrays(g, 0)
    >>> [(g.symbol(x), g.symbol(y), z) for x, y, z in zip(s.tolist(), o.tolist(), c.tolist())]
    [('a', 'b', 0.5), ('a', 'c', 1.0), ('c', 'a', 1.0)]
    >>> relation_arrays(g, 0, np.array([True, False, True]))[0].tolist()   # b out of scope
    [0, 2]
    >>> g.add(Fact("b", "r", "c"))            # three subjects: two members read by their rows
    >>> [a.tolist() for a in relation_arrays(g, 0, np.array([True, False, True]), members=[2, 0])]
    [[2, 0], [0, 2], [1.0, 1.0]]
    """
    import numpy as np   # noqa: PLC0415 (the graph module stays importable without numpy's start-up)
    ix = g._out[r] if r < len(g._out) else None
    if ix is None or not len(ix):
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float64)
    if scope is not None and members is not None and len(members) < len(ix):
        rows = [(sid, row) for sid in members if (row := ix.get(sid))]
        s = np.repeat(np.fromiter((sid for sid, _ in rows), np.int32, len(rows)),
                      np.fromiter((len(row) for _, row in rows), np.int64, len(rows)))
        o = np.fromiter(chain.from_iterable(row for _, row in rows), np.int32, len(s))
        c = np.fromiter(chain.from_iterable(row.values() for _, row in rows), np.float64, len(s))
    elif hasattr(ix, "edges"):
        s, o, c = ix.edges()
        s, o = s.astype(np.int32), o.astype(np.int32)
    else:
        lens = np.fromiter(map(len, ix.values()), np.int64, len(ix))
        s = np.repeat(np.fromiter(ix.keys(), np.int32, len(ix)), lens)
        o = np.fromiter(chain.from_iterable(ix.values()), np.int32, len(s))
        c = np.fromiter(chain.from_iterable(map(dict.values, ix.values())), np.float64, len(s))
    if scope is not None:
        keep = scope[s] & scope[o]
        s, o, c = s[keep], o[keep], c[keep]
    return s, o, c
