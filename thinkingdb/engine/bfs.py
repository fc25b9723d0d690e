"""Breadth-first search from one symbol, a layer at a time in numpy.

A :class:`Search` walks some relations of a :class:`~thinkingdb.engine.graph.FactGraph` in one
direction from one symbol. Each layer is one vectorized step: over a memory-mapped graph the rows
of the frontier are gathered from the graph file's CSR arrays (no row decoded into a dict); over an
in-memory graph from its dicts. It records each symbol's layer (the fewest steps, at least one, that
reach it) and, when asked, its *predecessor*: the canonically smallest symbol of the layer before
with an edge to it. That is the walk the best-first searches of the engine choose when every step
scores 1 (highest product, then fewest steps, then the smallest predecessor), so a proof is one
search, not a priority queue over the whole region. The search can stop at the layer where a
target first appears (``until``), which is all ``why`` needs.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Fact
>>> g = FactGraph([Fact("a", "r", "b"), Fact("a", "r", "c"), Fact("b", "r", "d"), Fact("c", "r", "d")])
>>> sid = g._sym.__getitem__
>>> s = Search(g, [g.relation_id("r")], sid("a"), forward=True, preds=True)
>>> s.until(sid("d")), [g._syms[x] for x in s.path(sid("d"))]     # d found in layer 2, through b
(True, ['a', 'b', 'd'])
>>> sorted(g._syms[x] for x in s.run())
['b', 'c', 'd']
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["BestSets", "HopSets", "ReachMemo", "Search", "edges", "rank_array", "widest"]


def rank_array(g) -> np.ndarray | None:
    """Canonical rank per symbol id of ``g`` as an array; None when ids are ranks (a mapped graph)."""
    if g.is_mapped:
        return None
    return np.asarray(g.ranks()[0], dtype=np.int64)


_ONES: dict[tuple[int, int, int], tuple[object, bool]] = {}   # (id(graph), version, relation) -> (index, all 1?)


def _all_one(g, r: int) -> bool:
    """Does every asserted fact of relation ``r`` have confidence 1? Cached per graph version; the
    cache holds the relation's index itself and checks it is the same object, so a new graph that
    happens to get a freed graph's id is never answered from the old one's entry."""
    if r >= len(g._out):
        return True
    key = (id(g), g.version, r)
    ix = g._out[r]
    hit = _ONES.get(key)
    if hit is not None and hit[0] is ix:
        return hit[1]
    if len(_ONES) >= 4:
        _ONES.clear()
    # a mapped graph answers from its confidence array, without decoding rows
    v = ix.all_ones() if hasattr(ix, "all_ones") else all(c == 1.0 for row in ix.values() for c in row.values())
    _ONES[key] = (ix, v)
    return v


def edges(indexes, frontier: np.ndarray, want_u: bool, want_c: bool):
    """Every ``(u, v, confidence)`` edge out of ``frontier`` over ``indexes`` (one relation and
    direction each): over a memory-mapped relation gathered from its CSR arrays, else from its rows.
    ``u`` and ``confidence`` are None unless asked for."""
    us, vs, cs = [], [], []
    for ix in indexes:
        if hasattr(ix, "_ptr") and not ix._full:   # a mapped relation (not one read with a delta): its CSR arrays
            keys, ptr, vals = ix.csr()
            if not len(keys):
                continue
            i = np.minimum(np.searchsorted(keys, frontier), len(keys) - 1)
            hit = keys[i] == frontier
            i = i[hit]
            lo = ptr[i].astype(np.int64)
            cnt = ptr[i + 1].astype(np.int64) - lo
            total = int(cnt.sum())
            if not total:
                continue
            at = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(total)
            vs.append(vals[at].astype(np.int64))
            if want_u:
                us.append(np.repeat(frontier[hit], cnt))
            if want_c:
                conf = ix._conf
                cs.append(np.ones(total) if conf is None else np.asarray(conf)[at].astype(np.float64))
        else:
            get = ix.get
            for u in frontier.tolist():
                row = get(u)
                if row:
                    vs.append(np.fromiter(row, dtype=np.int64, count=len(row)))
                    if want_u:
                        us.append(np.full(len(row), u, dtype=np.int64))
                    if want_c:
                        cs.append(np.fromiter(row.values(), dtype=np.float64, count=len(row)))
    if not vs:
        z = np.zeros(0, np.int64)
        return (z if want_u else None), z, (np.zeros(0) if want_c else None)
    return (np.concatenate(us) if want_u else None), np.concatenate(vs), (np.concatenate(cs) if want_c else None)


class Search:
    """Breadth-first search from ``src`` over the relations ``bases`` (ids), following facts from
    subject to object (``forward``) or back. ``preds=True`` records predecessors (for walks)."""

    def __init__(self, g, bases, src: int, *, forward: bool = True, preds: bool = False,
                 deadline: float | None = None) -> None:
        n_rel = len(g._out)
        self.indexes = [(g._out if forward else g._in)[b] for b in bases if 0 <= b < n_rel]
        self.n = n = len(g._syms)
        self.src, self.deadline = src, deadline
        self.dist = np.full(n, -1, dtype=np.int32)   # layer of first arrival (>= 1); -1: not reached
        self.pred = np.full(n, -1, dtype=np.int32) if preds else None
        self.rank = rank_array(g) if preds else None
        self.frontier = np.array([src], dtype=np.int64) if 0 <= src < n else np.zeros(0, np.int64)
        self.layer = 0
        self.count = 0          # symbols reached so far
        self.done = not len(self.frontier)
        self.timed_out = False

    def _edges(self, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(u, v)`` edge out of the frontier (``u`` only when predecessors are kept)."""
        u, v, _ = edges(self.indexes, frontier, self.pred is not None, False)
        return u, v

    def step(self) -> np.ndarray:
        """Expand one layer; the symbols it reached for the first time (ascending ids)."""
        if self.done:
            return np.zeros(0, np.int64)
        u, v = self._edges(self.frontier)
        if self.pred is None:
            new = np.sort(v[self.dist[v] < 0])     # (a sort: np.unique hashes, slower here)
            if len(new):
                new = new[np.concatenate(([True], new[1:] != new[:-1]))]
        else:
            fresh = self.dist[v] < 0
            u, v = u[fresh], v[fresh]
            ru = u if self.rank is None else self.rank[u]
            order = np.lexsort((ru, v))
            v, u = v[order], u[order]
            first = np.ones(len(v), dtype=bool)
            first[1:] = v[1:] != v[:-1]
            new = v[first]
            self.pred[new] = u[first]
        self.layer += 1
        self.dist[new] = self.layer
        self.count += len(new)
        self.frontier = new
        if not len(new):
            self.done = True
        elif self.deadline is not None and time.perf_counter() > self.deadline:
            self.timed_out = self.done = True
        return new

    def until(self, target: int) -> bool:
        """Search until ``target`` is reached (True) or nothing more is (False)."""
        if not 0 <= target < self.n:
            self.run()
            return False
        while self.dist[target] < 0 and not self.done:
            self.step()
        return bool(self.dist[target] >= 0)

    def run(self) -> np.ndarray:
        """Search to the end; every symbol reached, ascending ids."""
        while not self.done:
            self.step()
        return self.reached()

    def reached(self) -> np.ndarray:
        return np.flatnonzero(self.dist >= 0)

    def path(self, target: int) -> list[int]:
        """The walk ``src … target`` through the recorded predecessors (``target`` reached)."""
        out = [target]
        while True:
            p = int(self.pred[out[-1]])
            out.append(p)
            if p == self.src or len(out) > self.n + 1:
                break
        return out[::-1]


class ReachMemo:
    """Reach sets of many sources in one direction, shared across each strongly connected component.

    ``get(u)`` is the slot of ``u``'s reach set in ``sets`` (ascending ids, at least one step), one
    breadth-first search the first time. When ``u`` reaches itself it is on a cycle: the search the
    other way (``twin``, the memo of the opposite direction) gives what reaches ``u``; the two sets'
    common members are ``u``'s component, and every member gets the same two slots (they reach, and
    are reached by, exactly the same symbols). So asking for every symbol of a 200,000-symbol
    component costs two searches, not 200,000. A search cut by the deadline is kept for its source
    only and sets ``timed_out``.

    >>> from thinkingdb.engine.graph import FactGraph
    >>> from thinkingdb.model import Fact
    >>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "a"), Fact("b", "r", "c")])
    >>> fwd, bwd = ReachMemo.pair(g, [0], None)
    >>> sid = g._sym.__getitem__
    >>> _ = fwd.get(sid("a"), share=True)
    >>> [g._syms[x] for x in fwd.reach(sid("a"))], bool(fwd.slot[sid("b")] == fwd.slot[sid("a")]), fwd.searches
    (['a', 'b', 'c'], True, 1)
    """

    def __init__(self, g, bases, forward: bool, deadline: float | None) -> None:
        self.g, self.bases, self.forward, self.deadline = g, bases, forward, deadline
        self.n = len(g._syms)
        self.slot = np.full(self.n, -1, dtype=np.int64)
        self.sets: list[np.ndarray] = []
        self.twin: ReachMemo | None = None
        self.timed_out = False
        self.searches = 0

    @classmethod
    def pair(cls, g, bases, deadline: float | None) -> tuple["ReachMemo", "ReachMemo"]:
        fwd, bwd = cls(g, bases, True, deadline), cls(g, bases, False, deadline)
        fwd.twin, bwd.twin = bwd, fwd
        return fwd, bwd

    def get(self, u: int, share: bool = False) -> int:
        """``u``'s slot; ``share``: when ``u`` is on a cycle, give its whole component the set (one
        more search, the other way: worth it when more members will be asked for)."""
        if not 0 <= u < self.n:
            self.sets.append(np.zeros(0, np.int64))
            return len(self.sets) - 1
        k = int(self.slot[u])
        if k >= 0:
            return k
        s = Search(self.g, self.bases, u, forward=self.forward, deadline=self.deadline)
        got = s.run()
        self.searches += 1
        k = len(self.sets)
        self.sets.append(got)
        self.slot[u] = k
        if s.timed_out:
            self.timed_out = True
            return k
        i = int(np.searchsorted(got, u)) if share else 0
        if share and i < len(got) and int(got[i]) == u and self.twin is not None:   # on a cycle
            kt = self.twin.get(u, share=False)
            if not self.twin.timed_out:
                comp = np.intersect1d(got, self.twin.sets[kt], assume_unique=True)
                self.slot[comp] = k
                self.twin.slot[comp] = kt
        return k

    def reach(self, u: int) -> np.ndarray:
        return self.sets[self.get(u)]

    def cached(self, u: int) -> np.ndarray | None:
        """``u``'s reach set if already known, else None (no search)."""
        k = int(self.slot[u]) if 0 <= u < self.n else -1
        return None if k < 0 else self.sets[k]

    def put(self, u: int, reached: np.ndarray) -> None:
        """Record a complete search from ``u`` made elsewhere."""
        if 0 <= u < self.n and self.slot[u] < 0:
            self.slot[u] = len(self.sets)
            self.sets.append(reached)


def widest(g, bases, src: int, *, forward: bool, lo: int, deadline: float | None = None):
    """The best walks of ``r+`` (``lo`` 1) or ``r*`` (``lo`` 0) from ``src`` over facts of any
    confidence: ``(ends ascending, scores, timed out)``. Best as the general evaluator's best-first
    walk (:class:`thinkingdb.engine.paths.PathWalk`) defines it — the highest product of confidences
    (multiplied along the walk, so the same floats), then the fewest steps, then the canonically
    smallest predecessor — found by label correcting a frontier at a time in numpy: a symbol whose
    label improves is expanded again, until no label does. Labels only improve and every extension
    is strictly worse (one more step, a product no higher), so the fixpoint is the one Dijkstra's
    order gives: each label the best extension of its predecessors' final labels.

    >>> from thinkingdb.engine.graph import FactGraph
    >>> from thinkingdb.model import Fact
    >>> g = FactGraph([Fact("a", "r", "b", 0.5), Fact("a", "r", "c"), Fact("c", "r", "b", 0.9), Fact("b", "r", "a")])
    >>> ends, scores, _ = widest(g, [0], g._sym["a"], forward=True, lo=1)
    >>> sorted((g._syms[e], s) for e, s in zip(ends.tolist(), scores.tolist()))
    [('a', 0.9), ('b', 0.9), ('c', 1.0)]
    """
    n = len(g._syms)
    indexes = [(g._out if forward else g._in)[b] for b in bases if 0 <= b < len(g._out)]
    rank = rank_array(g)
    score = np.full(n, -1.0)
    hops = np.zeros(n, dtype=np.int64)
    pred = np.full(n, -1, dtype=np.int64)
    timed_out = False
    if not 0 <= src < n:
        return np.zeros(0, np.int64), np.zeros(0), False
    # the start at zero steps is not a label (r+ needs a step; a walk back to it is one)
    frontier, f_score, f_hops = np.array([src], np.int64), np.array([1.0]), np.array([0], np.int64)
    while len(frontier):
        u, v, c = edges(indexes, frontier, True, True)
        if not len(v):
            break
        at = np.searchsorted(frontier, u)        # the frontier is ascending: each edge's source label
        cs, ch = f_score[at] * c, f_hops[at] + 1
        old = score[v]
        maybe = (cs > old) | ((cs == old) & (ch <= hops[v]))    # (only these can improve a label)
        u, v, cs, ch = u[maybe], v[maybe], cs[maybe], ch[maybe]
        ru = u if rank is None else rank[u]
        order = np.lexsort((ru, ch, -cs, v))      # per target: best score, fewest steps, smallest predecessor
        v, cs, ch, u, ru = v[order], cs[order], ch[order], u[order], ru[order]
        first = np.ones(len(v), dtype=bool)
        first[1:] = v[1:] != v[:-1]
        v, cs, ch, u, ru = v[first], cs[first], ch[first], u[first], ru[first]
        old, oh, op = score[v], hops[v], pred[v]
        orank = np.where(op >= 0, op if rank is None else rank[np.maximum(op, 0)], -1)
        better = (cs > old) | ((cs == old) & ((ch < oh) | ((ch == oh) & (ru < orank))))
        v = v[better]
        score[v], hops[v], pred[v] = cs[better], ch[better], u[better]
        frontier, f_score, f_hops = v, score[v], hops[v]     # v is ascending (sorted above)
        if deadline is not None and time.perf_counter() > deadline:
            timed_out = True
            break
    ends = np.flatnonzero(score >= 0)
    scores = score[ends]
    if lo == 0:
        i = int(np.searchsorted(ends, src))
        if i < len(ends) and int(ends[i]) == src:
            scores[i] = 1.0
        else:
            ends, scores = np.insert(ends, i, src), np.insert(scores, i, 1.0)
    return ends, scores, timed_out


class BestSets:
    """Best walks (:func:`thinkingdb.engine.bfs.widest`) from each start: ``sets``/``confs`` per slot
    (``r*``: the start itself at 1, as the best-first walk has it)."""

    def __init__(self, g, r: int, forward: bool, lo: int, deadline) -> None:
        self.g, self.r, self.forward, self.lo, self.deadline = g, r, forward, lo, deadline
        self.slots: dict[int, int] = {}
        self.sets: list = []
        self.confs: list = []
        self.timed_out = False

    def get(self, u: int, share: bool = False) -> int:
        k = self.slots.get(u)
        if k is None:
            ends, scores, cut = widest(self.g, [self.r], u, forward=self.forward, lo=self.lo, deadline=self.deadline)
            self.timed_out = self.timed_out or cut
            k = self.slots[u] = len(self.sets)
            self.sets.append(ends)
            self.confs.append(scores)
        return k


class HopSets:
    """One asserted step from each start: ``sets``/``confs`` per slot, like a :class:`ReachMemo`."""

    def __init__(self, index) -> None:
        self.index = index
        self.slots: dict[int, int] = {}
        self.sets: list[np.ndarray] = []
        self.confs: list[np.ndarray] = []
        self.timed_out = False

    def get(self, u: int, share: bool = False) -> int:
        k = self.slots.get(u)
        if k is None:
            row = self.index.get(u) or {}
            vals = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            conf = np.fromiter(row.values(), dtype=np.float64, count=len(row))
            order = np.argsort(vals)
            k = self.slots[u] = len(self.sets)
            self.sets.append(vals[order])
            self.confs.append(conf[order])
        return k
