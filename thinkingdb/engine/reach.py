"""Single-source transitive closure: the goal-directed form of the transitive fast path.

When the rules are a pure transitive closure (:func:`thinkingdb.engine.transitive.fast_path_plan`),
the full closure's facts ``x R ?`` are the symbols reachable from ``x`` over the ``R`` and ``S``
edges, and their scores and proofs come from the best walk from ``x`` alone (a per-source search,
see :class:`~thinkingdb.engine.transitive._Closed`). So a question about ``n5 R ?x`` needs one
breadth-first search from ``n5``, not the reach sets of everything ``n5`` reaches: this module
computes reach sets per source (and reverse reach per target) on first use, with exactly the
scores and proofs of the full fast path. A pattern with both ends free falls back to the full SCC
closure, built on first use.

Used when the fast path is exact (no depth bound, no alternatives, every asserted ``R`` fact of
confidence 1). ``max_derived`` counts the facts of the reach sets the question's constants ask for
and ``max_nodes`` the symbols they hold; over either, the general goal-directed engine runs and cuts.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..model import Limits, PathInv, PathRel, Var
from .results import SearchedView
from .bfs import ReachMemo, Search, _all_one
from .layer import Layers, split
from .rules import fast_path_plan
from .smallsource import closed_fact_proof
from .transitive import _Closed

class _Lazy(_Closed):
    """Reach sets of one relation, computed per source on first use (no SCC pass)."""

    def __init__(self, g, ids, r, trule, sources, rules, deadline) -> None:   # noqa: D107 (no eager closure)
        self.r, self.w, self.trule_name = r, trule.weight, trule.name
        self.sources, self.rules, self.g, self.scope = sources, rules, g, None
        self.ids, self.deadline = ids, deadline
        self.bases = [b for b in [r] + [s for s, _, _ in sources] if b < len(g._out)]
        self.all_ones = self.w == 1.0 and all(w == 1.0 for _, w, _ in sources) and all(
            _all_one(g, s) for s, _, _ in sources)
        self._walks: dict[int, dict[int, int]] = {}
        # reach sets per source and per target, shared across each strongly connected component
        self.fwd, self.bwd = ReachMemo.pair(g, self.bases, deadline)
        self._searches: dict[int, Search] = {}     # source -> layered search with predecessors
        self._asked: set[int] = set()              # targets `has` was asked about
        self._full: _Closed | None = None
        self._timed_out = False

    @property
    def timed_out(self) -> bool:
        return self._timed_out or self.fwd.timed_out or self.bwd.timed_out

    @timed_out.setter
    def timed_out(self, value: bool) -> None:
        self._timed_out = value

    def _search(self, u: int, forward: bool, preds: bool) -> Search:
        return Search(self.g, self.bases, u, forward=forward, preds=preds, deadline=self.deadline)

    def reach_array(self, u: int) -> np.ndarray:
        """The symbols ``u`` reaches, ascending ids (one breadth-first search per component, cached)."""
        return self.fwd.reach(u)

    def reverse_array(self, v: int) -> np.ndarray:
        """The symbols that reach ``v``, ascending ids (cached)."""
        return self.bwd.reach(v)

    def reach(self, u: int) -> list[int]:
        return self.reach_array(u).tolist()

    def reverse(self, v: int) -> list[int]:
        return self.reverse_array(v).tolist()

    def has(self, u: int, v: int) -> bool:
        """Is ``v`` reachable from ``u``? From whichever search is cached; the first time ``v`` is
        asked about, a search from ``u`` that stops at the layer ``v`` appears in; after that, the
        reverse search of ``v`` (in a conjunction ``?x R c`` the constant end is the one that repeats)."""
        for got, x in ((self.fwd.cached(u), v), (self.bwd.cached(v), u)):
            if got is not None:
                return _member(got, x)
        if self._full is not None and self._full.sets.complete:   # the whole closure is at hand
            return self._full.has(u, v)
        if v in self._asked:
            return _member(self.reverse_array(v), u)
        self._asked.add(v)
        s = self._walk_search(u)
        found = s.until(v)
        self.timed_out = self.timed_out or s.timed_out
        if s.done and not s.timed_out:
            self.fwd.put(u, s.reached())
        return found

    def _walk_search(self, u: int) -> Search:
        s = self._searches.get(u)
        if s is None:
            if len(self._searches) > 64:
                self._searches.clear()
            s = self._searches[u] = self._search(u, True, True)
        return s

    def walk(self, x: int, y: int, rank) -> list[int]:
        """The best walk ``x … y``: when every step scores 1, the layered search's (fewest steps, then
        the smallest predecessor, layer by layer, stopping at ``y``'s layer); else the best-first one."""
        if not self.all_ones:
            return super().walk(x, y, rank)
        s = self._walk_search(x)
        if s.timed_out:   # a proof is read after the query's deadline: its walk is not bounded by it
            s = self._searches[x] = self._search(x, True, True)
        s.deadline = None
        s.until(y)
        return s.path(y)

    def touched(self) -> np.ndarray:
        """Every symbol a search of this relation has reached or started from (repeats possible)."""
        parts = [np.flatnonzero(self.fwd.slot >= 0), np.flatnonzero(self.bwd.slot >= 0)]
        parts += self.fwd.sets + self.bwd.sets
        parts += [np.fromiter(self._searches, dtype=np.int64)] + [s.reached() for s in self._searches.values()]
        return np.concatenate(parts)

    def full(self) -> _Closed:
        """The whole closure (SCCs), for questions with both ends free."""
        if self._full is None:
            from .transitive import deadline_stop
            trule = next(r for r in self.rules if r.name == self.trule_name)
            stop = deadline_stop(self.deadline)
            self._full = _Closed(self.g, self.ids, self.r, trule, self.sources, self.rules, None, stop)
            self.timed_out = self.timed_out or stop.hit
        return self._full


def _member(arr: np.ndarray, x: int) -> bool:
    i = int(np.searchsorted(arr, x))
    return i < len(arr) and int(arr[i]) == x


class SingleSourceResult(SearchedView):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike over per-source reach sets."""

    def __init__(self, g, ids, rules, rels: dict[int, _Lazy], goals, layers: Layers | None = None) -> None:
        self.g, self.ids, self.rules, self._rels, self._goals = g, ids, rules, rels, goals
        self._layers = layers if layers is not None else Layers()   # one-premise rules over a closed R
        self.stats = None
        self.table = None     # a conjunction's bound rows (thinkingdb.engine.conj), run with the closure

    @property
    def nodes(self) -> int:
        if self.table is not None:
            return self.table.nodes
        seen = np.zeros(self.ids.n_syms, dtype=bool)
        for c in self._rels.values():
            seen[c.touched()] = True
        return int(seen.sum())

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        if self.table is not None:
            return self.table.derived
        n = self.bulk_count()
        return sum(1 for _ in self.derived_keys()) if n is None else n

    def bulk_count(self) -> int | None:
        """The number of derived facts one goal pattern asks for, counted over its reach array (both
        ends free: the whole closure's reach sets; None: several patterns, count ``derived_keys``)."""
        specs = {(r, sid, oid) for r, _c, sid, oid in _goal_specs(self)}
        if len(specs) != 1:
            return 0 if not specs else None
        (r, sid, oid), = specs
        c, g = self._rels[r], self.g
        if sid is not None and oid is not None:
            return int(c.has(sid, oid) and self.asserted((sid, r, oid)) is None)
        if sid is None and oid is None:   # the whole closure, counted over its reach sets
            return max(0, c.full().derived_count)
        arr = c.reach_array(sid) if oid is None else c.reverse_array(oid)
        index = (g._out if oid is None else g._in)[r] if r < len(g._out) else {}
        row = index.get(sid if oid is None else oid)
        mine = np.fromiter(row, dtype=np.int64, count=len(row)) if row else np.zeros(0, np.int64)
        return len(arr) - int(np.isin(mine, arr).sum())

    def closed_ones(self, r: int) -> bool:
        """True when every fact of ``r`` scores 1 (then ``r+`` from a source is its reach set)."""
        c = self._rels.get(r)
        return c is not None and c.all_ones

    def derived_keys(self):
        """The derived facts the goals asked for (their constant ends' reach sets)."""
        seen = set()
        for key in itertools.chain(_goal_keys(self), self._layers.keys(self, self._goals)):
            if key not in seen and self.asserted(key) is None:
                seen.add(key)
                yield key

    def is_derived(self, key) -> bool:
        if key[1] in self._layers:
            return self.asserted(key) is None and self.fact_score(self._layers.premise(key)) is not None
        c = self._rels.get(key[1])
        return c is not None and c.has(key[0], key[2]) and self.asserted(key) is None

    def fact_score(self, key):
        if key[1] in self._layers:
            return self._layers.score(self, key)
        c = self.asserted(key)
        if c is not None:
            return c
        if not self.is_derived(key):
            return None
        return 1.0 if self._rels[key[1]].all_ones else self.fact_proof(key).score

    def fact_proof(self, key):
        if key[1] in self._layers:
            return self._layers.proof(self, key)
        return closed_fact_proof(self, key)

    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        if r in self._layers:
            return self._layers.row(self, r, s, True, res)
        c = self._rels.get(r)
        if c is not None:
            for o in c.reach(s):
                if o not in res:
                    res[o] = 1.0 if c.all_ones else self.fact_score((s, r, o))
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        if r in self._layers:
            return self._layers.row(self, r, o, False, res)
        c = self._rels.get(r)
        if c is not None:
            for s in c.reverse(o):
                if s not in res:
                    res[s] = 1.0 if c.all_ones else self.fact_score((s, r, o))
        return res

    def subjects(self, r: int) -> list[int]:
        if r in self._layers:
            return sorted(set(super().subjects(r)) | self._layers.ends(self, r, True))
        c = self._rels.get(r)
        extra = set() if c is None else {u for b in c.bases for u, row in self.g._out[b].items() if row}
        return sorted(set(super().subjects(r)) | extra)

    def objects(self, r: int) -> list[int]:
        if r in self._layers:
            return sorted(set(super().objects(r)) | self._layers.ends(self, r, False))
        c = self._rels.get(r)
        extra = set() if c is None else {v for b in c.bases for v, col in self.g._in[b].items() if col}
        return sorted(set(super().objects(r)) | extra)


def _goal_specs(res: SingleSourceResult):
    """``(relation, reach, subject or None, object or None)`` per goal pattern over a closed
    relation; a pattern whose constant the graph does not hold asks for nothing."""
    ids = res.ids
    for q in res._goals:
        for p in q.patterns:
            path, fwd = p.path, True
            while isinstance(path, PathInv):
                path, fwd = path.path, not fwd
            if not isinstance(path, PathRel):
                continue
            r = ids.find_rel(path.relation)
            c = res._rels.get(r)
            if c is None:
                continue
            s, o = (p.subject, p.object) if fwd else (p.object, p.subject)
            sid = None if isinstance(s, Var) else ids.find_sym(s)
            oid = None if isinstance(o, Var) else ids.find_sym(o)
            if (sid is None and not isinstance(s, Var)) or (oid is None and not isinstance(o, Var)):
                continue
            yield r, c, sid, oid


def _goal_keys(res: SingleSourceResult):
    for r, c, sid, oid in _goal_specs(res):
        if sid is not None and oid is not None:
            if c.has(sid, oid):
                yield sid, r, oid
        elif sid is not None:
            yield from ((sid, r, v) for v in c.reach(sid))
        elif oid is not None:
            yield from ((u, r, oid) for u in c.reverse(oid))
        else:
            full = c.full()
            yield from ((u, r, v) for u in full.sources_of().tolist() for v in full.reach(u))


def _conjunction_nodes_at_least(res: SingleSourceResult) -> int:
    """For a conjunction the array path left (a node bound): a lower bound of the symbols its
    patterns' reach sets hold, read from the indexes' sizes — a pattern with both ends free touches
    every subject of its relation's facts. (One pattern with both ends free is answered from the
    whole closure, its node bound applying to the evaluator's walks: :mod:`thinkingdb.engine.pairs`.)"""
    g, most = res.g, 0
    if not any(len(q.patterns) > 1 for q in res._goals):
        return 0
    for r, c, sid, oid in _goal_specs(res):
        if sid is None and oid is None:
            most = max([most] + [len(g._out[b]) for b in c.bases])
    return most


def single_source(g, ids, rules, goals, limits: Limits, alternatives: int, deadline,
                  layers: bool = True) -> SingleSourceResult | None:
    """The single-source result for ``goals``, or None when it would not be the full closure's
    (``layers``: one-premise rules over a closed relation ride on it, as they do on the full closure's
    fast path: :func:`thinkingdb.engine.closure.closure` says when).

    >>> from thinkingdb.engine.graph import FactGraph
    >>> from thinkingdb.engine.results import Ids
    >>> from thinkingdb.engine.rules import compile_declarations
    >>> from thinkingdb.model import Declaration, Fact, Query, QueryPattern
    >>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("x", "r", "y")])
    >>> ids = Ids(g)
    >>> res = single_source(g, ids, compile_declarations([Declaration("r", "transitive")]),
    ...                     [Query((QueryPattern("a", PathRel("r"), Var("v")),))], Limits(), 0, None)
    >>> [str(t) for t in res.derived], res.nodes     # x and y are never looked at
    (['a r c'], 3)
    """
    base, layered = split(rules) if layers else (rules, {})
    plan = fast_path_plan(base, Limits(max_depth=limits.max_depth), alternatives)
    if plan is None or any(r not in plan for r, _, _ in layered.values()):
        return None
    if layered and limits.max_nodes is not None and limits.max_nodes < ids.n_syms:
        return None   # (the symbols of H facts are not counted here: the general engine counts and cuts)
    rels = {}
    for r_key, (t_idx, sources) in plan.items():
        r = ids.rel(r_key)
        if not _all_one(g, r):
            return None
        src = [(ids.rel(s), base[j].weight, j) for s, j in sources]
        rels[r] = _Lazy(g, ids, r, base[t_idx], src, base, deadline)
    lay = Layers({ids.rel(h): (ids.rel(r), swap, rule) for h, (r, swap, rule) in layered.items()})
    res = SingleSourceResult(g, ids, rules, rels, goals, lay)
    if len(goals) == 1 and len(goals[0].patterns) > 1:   # a conjunction: bindings passed on as arrays
        from .conj import plan_conjunction, run_conjunction
        steps = plan_conjunction(res, goals[0], limits)
        if steps is not None:
            res.table = run_conjunction(res, goals[0], steps, limits, deadline)
            return res
    if limits.max_nodes is not None and _conjunction_nodes_at_least(res) > limits.max_nodes:
        return None    # (known before any reach set is built: counting would build the whole closure)
    if limits.max_derived is not None or limits.max_nodes is not None:
        n = res.bulk_count() if not lay else None   # (with layers: distinct keys, both kinds)
        if n is None:
            n = 0
            for _ in res.derived_keys():
                n += 1
                if limits.max_derived is not None and n > limits.max_derived:
                    return None
        if limits.max_derived is not None and n > limits.max_derived:
            return None
        if limits.max_nodes is not None and res.nodes > limits.max_nodes:
            return None
    return res

