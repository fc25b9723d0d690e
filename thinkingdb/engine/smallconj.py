"""A conjunction over a closed relation in pure Python, for a question whose starts reach few symbols.

:mod:`thinkingdb.engine.conj` answers ``? c R ?x, ?x R ?y.`` under a transitive declaration over
arrays (numpy searches and joins). When the reach sets are small, loading numpy costs more than the
whole question: a cold ``? GO:0006915 is_a ?x, ?x is_a ?y.`` on GO with the default rules and
``relation is_a transitive.`` (10 answers) took ~70 ms, about 60 of them numpy's, where pyoxigraph
takes ~11 ms. :func:`small_conjunction` runs the same steps
(:func:`thinkingdb.engine.conj.plan_conjunction`) over lists and sets: the same rows, the same
``max_derived`` count (per start, pattern by pattern, in canonical order), the same ``truncated`` and
touched symbols, so the same :class:`~thinkingdb.engine.conj.Table`, and its answers and proofs are
made by :func:`thinkingdb.engine.conjanswers.table_answers` as the array path's are (in lists).

It hands the question to the array path (returns None) once the reach sets it built and the rows it
made pass :data:`SMALL_CONJ` — measured, so the work spent before giving up is bounded — and for every
shape it does not handle: a rule weight or a confidence of a closed relation below 1 (or not known
without numpy), a node bound, a relation a layer rule derives. A best walk (``t+`` over confidences
below 1) is the general evaluator's own (:class:`~thinkingdb.engine.paths.PathWalk`), as the array
path's :func:`~thinkingdb.engine.bfs.widest` is tested to be. Several closed relations (``is_a`` and ``part_of`` both transitive) are handled, each with its
own searches, as the array path does.

>>> from thinkingdb.engine.conjanswers import table_answers
>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.engine.results import Ids
>>> from thinkingdb.engine.rules import compile_declarations
>>> from thinkingdb.model import Declaration, Fact, PathRel, Query, QueryPattern, Var
>>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "t", "d", 0.5)])
>>> rules = compile_declarations([Declaration("r", "transitive")])
>>> q = Query((QueryPattern("a", PathRel("r"), Var("x")), QueryPattern(Var("x"), PathRel("t"), Var("y"))))
>>> res = small_conjunction(g, Ids(g), rules, [q], Limits(), 0, None, budget=1_000)
>>> answers = table_answers(res, res.table, "best")
>>> type(answers).__name__, [(a.bindings, a.score) for a in answers], res.table.derived
('SmallTableAnswers', [({'x': 'c', 'y': 'd'}, 0.5)], 2)
>>> small_conjunction(g, Ids(g), rules, [q], Limits(), 0, None, budget=5) is None   # a's set (3) and its rows (3)
True
"""

from __future__ import annotations

import time

from ..model import Limits, PathInv, PathRel, PathRepeat
from .conj import Table, plan_conjunction
from .rules import fast_path_plan
from .paths import PathWalk
from .results import SearchedView
from .smallsource import OnesView, _Layers, _ones, _Small

__all__ = ["SMALL_CONJ", "SmallConjResult", "small_conjunction"]

# members of the reach sets built plus rows made: past this, the array path runs. Measured (issue 20):
# every `? T is_a ?x, ?x is_a ?y.` on GO needs at most 2,660 (median 82, 99.9% 1,900), in a few ms
# where the array path imports numpy (~60 ms); a question past it (1M random facts, one component of
# 200,000 symbols) loses ~2-4 ms finding out, as the first search stops at the threshold
SMALL_CONJ = 4_096


class _Over(Exception):
    """The work passed :data:`SMALL_CONJ`."""


class SmallConjResult(OnesView, SearchedView):
    """:class:`thinkingdb.engine.reach.SingleSourceResult` for a conjunction run with its closure (its
    :class:`~thinkingdb.engine.conj.Table` of rows) over the relations the rules close (``_rels``:
    relation -> its :class:`~thinkingdb.engine.smallsource._Small`), in pure Python."""

    def __init__(self, g, ids, rules, rels: dict[int, _Small]) -> None:
        self.g, self.ids, self.rules, self._rels = g, ids, rules, rels
        self._layers: dict = {}
        self.stats = None
        self.table: Table | None = None
        self._reach: dict[tuple[int, int, bool], _Layers] = {}   # (relation, start, forward) -> its search
        self._counted: dict[tuple[int, bool], set[int]] = {}

    @property
    def nodes(self) -> int:
        return 0 if self.table is None else self.table.nodes

    @property
    def derived_count(self) -> int:
        return 0 if self.table is None else self.table.derived

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    def search(self, r: int, u: int, forward: bool, cap: int | None = None, deadline=None) -> _Layers:
        """``u``'s reach set over the closed relation ``r`` (``forward``) or the set reaching it, built once."""
        got = self._reach.get((r, u, forward))
        if got is None:
            closed = self._rels[r]
            got = _Layers(self.g, closed.bases, u, forward, deadline, cap)
            closed.timed_out = closed.timed_out or got.timed_out
            if got.over:
                raise _Over
            if not got.timed_out:
                self._reach[(r, u, forward)] = got
                if forward:
                    closed._walks[u] = got   # its predecessors give the proofs' walks
        return got

    def closed_ones(self, r: int) -> bool:
        return r in self._rels

    def is_derived(self, key) -> bool:
        s, r, o = key
        return r in self._rels and o in self.search(r, s, True).dist and self.asserted(key) is None


    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        if r in self._rels:
            for o in self.search(r, s, True).reached():
                res.setdefault(o, 1.0)
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        if r in self._rels:
            for s in self.search(r, o, False).reached():
                res.setdefault(s, 1.0)
        return res

    def subjects(self, r: int) -> list[int]:
        c = self._rels.get(r)
        extra = set() if c is None else {u for b in c.bases for u, row in self.g._out[b].items() if row}
        return sorted(set(super().subjects(r)) | extra)

    def objects(self, r: int) -> list[int]:
        c = self._rels.get(r)
        extra = set() if c is None else {v for b in c.bases for v, col in self.g._in[b].items() if col}
        return sorted(set(super().objects(r)) | extra)

    def derived_keys(self):
        """The derived facts of the closed relations the conjunction looked at (its starts' sets; as
        many as ``stats.derived``)."""
        seen = set()
        for (r, forward), starts in self._counted.items():
            for u in starts:
                for v in self._reach[(r, u, forward)].dist:
                    key = (u, r, v) if forward else (v, r, u)
                    if key not in seen and self.asserted(key) is None:
                        seen.add(key)
                        yield key


def small_conjunction(g, ids, rules, goals, limits: Limits, alternatives: int, deadline,
                      budget: int | None = None) -> SmallConjResult | None:
    """The single-source result of a conjunction over the relations the rules close, with its rows, in
    pure Python; None when it is not handled here or its work passes ``budget`` (default
    :data:`SMALL_CONJ`; the array path then decides)."""
    budget = SMALL_CONJ if budget is None else budget
    if budget <= 0 or len(goals) != 1 or len(goals[0].patterns) < 2 or limits.max_nodes is not None:
        return None
    plan = fast_path_plan(rules, Limits(max_depth=limits.max_depth), alternatives)
    if plan is None:
        return None
    rels = {}
    for r_key, (t_idx, sources) in plan.items():
        r = ids.rel(r_key)
        src = [(ids.rel(x), rules[j].weight, j) for x, j in sources]
        trule = rules[t_idx]
        if trule.weight != 1.0 or any(w != 1.0 for _, w, _ in src) or \
                any(_ones(g, b) is not True for b in [r] + [x for x, _, _ in src]):
            return None
        rels[r] = _Small(g, r, trule, src, rules, deadline)
    res = SmallConjResult(g, ids, rules, rels)
    steps = plan_conjunction(res, goals[0], limits, ones=_ones)
    if steps is None:
        return None
    try:
        res.table = _run(res, goals[0], steps, limits, deadline, budget)
    except _Over:
        return None
    return res


def _run(view: SmallConjResult, query, steps, limits: Limits, deadline, budget: int) -> Table:
    """:func:`thinkingdb.engine.conj.run_conjunction` over lists: the same rows, count and bounds."""
    g = view.g
    rank = None if g.is_mapped else g.ranks()[0]
    cap = limits.max_derived
    left = [budget]
    cols: dict[str, list[int]] = {}
    scores: dict[int, list[float]] = {}
    n_rows, count, truncated = 1, 0, None
    counted = view._counted
    touched: set[int] = set()
    sets: dict[tuple, tuple] = {}
    late: set[tuple] = set()   # (kind, relation, direction) whose search the deadline cut (as the array
                               # path's, each memo stops there for good)
    best: dict[tuple, PathWalk] = {}

    def members(st, u: int):
        """``u``'s set for step ``st``: (ascending ids, a set of them or, for one asserted step, a
        dict of their confidences, those confidences in order or None)."""
        key = (st.kind, st.r, st.direction, u, st.lo if st.kind == "best" else 0)   # (t+ and t* walks differ)
        got = sets.get(key)
        if got is None:
            if st.kind == "hop":
                row = (g._out if st.direction else g._in)[st.r].get(u) or {}
                ends = sorted(row)
                conf = {v: row[v] for v in ends}
                got = (ends, conf, list(conf.values()))
            elif st.kind == "best":   # r+ / r* over asserted facts of any confidence: the evaluator's best walks
                walk = best.get((st.r, st.direction, st.lo))
                if walk is None:
                    rel = PathRel(view.ids.rel_key(st.r))
                    path = PathRepeat(rel if st.direction else PathInv(rel), st.lo, None)
                    walk = best[(st.r, st.direction, st.lo)] = PathWalk(view, path, max_nodes=left[0], deadline=deadline)
                walk.max_nodes = left[0]
                found = walk.run(u)
                if walk.truncated == "nodes":
                    raise _Over
                if walk.truncated == "time":
                    late.add(key[:3])
                ends = sorted(found)
                conf = {v: found[v][0] for v in ends}
                got = (ends, conf, list(conf.values()))
            else:
                if st.kind == "closed":
                    s = view.search(st.r, u, st.direction, left[0], deadline)
                else:    # r+ / r* over asserted facts scoring 1
                    s = _Layers(g, [st.r], u, st.direction, deadline, left[0])
                    if s.over:
                        raise _Over
                if s.timed_out:
                    late.add(key[:3])
                ends = s.reached()
                got = (ends, set(ends), None)
            left[0] -= len(ends)
            if left[0] < 0:
                raise _Over
            sets[key] = got
        return got

    for st in steps:
        K = [st.start[1]] * n_rows if st.start[0] == "const" else cols[st.start[1]]
        us = sorted(set(K), key=None if rank is None else rank.__getitem__)
        index = (g._out if st.direction else g._in)[st.r]
        done = counted.setdefault((st.r, st.direction), set()) if st.kind == "closed" else None
        other = counted.get((st.r, not st.direction)) if st.kind == "closed" else None
        keep = len(us)
        for a, u in enumerate(us):
            ends = members(st, u)[0]
            if (st.kind, st.r, st.direction) in late or (deadline is not None and time.perf_counter() > deadline):
                keep, truncated = a, truncated or "time"
                break
            if done is None or u in done:
                continue
            row = index.get(u) or {}
            need = len(ends) - len(row)
            if other is not None:   # facts counted from their other end already
                got = sum(1 for v in ends if v in other)
                if got:
                    need -= got - sum(1 for v in row if v in other)
            if cap is not None and count + need > cap:
                keep, truncated = a, truncated or "derived"
                break
            count += need
            done.add(u)
        if keep < len(us):
            kept = set(us[:keep])
            rows = [j for j, k in enumerate(K) if k in kept]
            cols = {k: [v[j] for j in rows] for k, v in cols.items()}
            scores = {k: [v[j] for j in rows] for k, v in scores.items()}
            K = [K[j] for j in rows]
            n_rows = len(K)
        for u in us[:keep]:
            touched.add(u)
            touched.update(members(st, u)[0])
        if st.other[0] != "new":     # both ends known: keep the rows whose other end is in the set
            P = [st.other[1]] * n_rows if st.other[0] == "const" else cols[st.other[1]]
            hit, sc = [], []
            for j in range(n_rows):
                ends, found, conf = members(st, K[j])
                if P[j] in found:
                    hit.append(j)
                    if conf is not None:
                        sc.append(found[P[j]])
                elif st.lo == 0 and K[j] == P[j]:
                    hit.append(j)
            cols = {k: [v[j] for j in hit] for k, v in cols.items()}
            scores = {k: [v[j] for j in hit] for k, v in scores.items()}
            if st.kind in ("hop", "best"):
                scores[st.i] = sc
            n_rows = len(hit)
            continue
        idx: list[int] = []
        vals: list[int] = []
        sc = [] if st.kind in ("hop", "best") else None
        for j in range(n_rows):
            ends, _, conf = members(st, K[j])
            idx.extend([j] * len(ends))
            vals.extend(ends)
            if sc is not None:
                sc.extend(conf)
        if st.lo == 0 and st.kind != "best":    # r*: the start itself, unless its set already holds it
            extra = [j for j in range(n_rows) if K[j] not in members(st, K[j])[1]]
            idx.extend(extra)
            vals.extend(K[j] for j in extra)
        left[0] -= len(idx)
        if left[0] < 0:
            raise _Over
        cols = {k: [v[j] for j in idx] for k, v in cols.items()}
        scores = {k: [v[j] for j in idx] for k, v in scores.items()}
        if sc is not None:
            scores[st.i] = sc
        cols[st.other[1]] = vals
        n_rows = len(idx)
    for st in steps:    # a variable first bound after the rows ran out
        if st.other[0] == "new" and st.other[1] not in cols:
            cols[st.other[1]] = []
    return Table(query, steps, cols, scores, n_rows, truncated, count, len(touched))
