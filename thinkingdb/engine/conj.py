"""Conjunctions answered as arrays (issue 20): ``? n5 depends_on ?x, ?x depends_on ?y.``

Under a transitive declaration the second pattern asks for the reach set of every ``x`` the first
one found — 200,000 searches on a 1M-fact store with cycles, if done one by one. Here the patterns
run in the evaluator's order (:func:`pattern_order`) over a table of bindings held as
arrays: each pattern takes the distinct values of its known end, gets one set per value, and joins
them to the rows in numpy. The sets come from a :class:`~thinkingdb.engine.bfs.ReachMemo`, shared
across each strongly connected component, so asking for all 200,000 members of a component costs
two searches; what is left is the answer count. Proofs are built only when read, by the general
evaluator's own walks, so answers, scores, order, proofs and ``truncated`` are those of
:func:`thinkingdb.engine.query.evaluate` over the same closure (tested against it and against the
full closure).

A pattern is one relation ``R`` (maybe inverted), plain or ``+`` / ``*``, with a known end (a constant
or a variable bound by an earlier pattern): ``R`` transitively closed by the single-source path with
every step scoring 1 (its reach sets), or not derived at all (one asserted step, any confidence; ``+``
/ ``*`` by breadth-first search, or by the best-walk search when its facts score below 1). Anything
else, or a node bound, leaves the question to the general evaluator.

**Bounds.** ``max_derived`` counts the distinct derived facts the question looks at: a start's whole
reach set less its asserted facts, each start counted once per relation and direction, less the facts
already counted from their other end (a relation read both ways: ``x R y`` is looked at from ``x``'s
forward set and from ``y``'s backward set, and counts once). Starts are taken pattern by pattern, in
canonical order within a
pattern; the first start whose facts would take the count past ``max_derived`` stops the evaluation
there: its rows and the later ones are dropped, ``truncated`` is ``"derived"``, and the answers are
those found before it — each with its exact score and proof. The deadline stops it the same way
(``"time"``). So a question with 40 billion answers stops at the bound in well under a second.

A conjunction whose starts reach few symbols runs the same steps in pure Python
(:mod:`thinkingdb.engine.smallconj`); here the array path is called directly:

>>> from thinkingdb.engine.conjanswers import table_answers
>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.engine.reach import single_source
>>> from thinkingdb.engine.results import Ids
>>> from thinkingdb.engine.rules import compile_declarations
>>> from thinkingdb.model import Declaration, Fact, PathRel, QueryPattern
>>> g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "t", "d", 0.5)])
>>> rules = compile_declarations([Declaration("r", "transitive")])
>>> q = Query((QueryPattern("a", PathRel("r"), Var("x")), QueryPattern(Var("x"), PathRel("t"), Var("y"))))
>>> res = single_source(g, Ids(g), rules, [q], Limits(), 0, None)
>>> answers = table_answers(res, res.table, "best")
>>> type(answers).__name__, [(a.bindings, a.score) for a in answers]
('TableAnswers', [({'x': 'c', 'y': 'd'}, 0.5)])
>>> print(answers[0].proof.premises[0].to_text())   # built when read
a r c  [score 1, depth 1, rule r_transitive @1]
├── a r b  [score 1, asserted]
└── b r c  [score 1, asserted]
"""

from __future__ import annotations

import time

from ..model import Limits, Query, Var
from .answers import pattern_order
from .paths import _simple

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # numpy and the searches load when a conjunction runs as arrays (a plain lookup
    import numpy as np   # loads neither them nor this module: issue 20)

__all__ = ["Table", "plan_conjunction", "run_conjunction"]


class _Step:
    """One pattern's turn (written by hand, not a dataclass: a class made by ``dataclass`` costs a
    fresh process ~0.4 ms to create, issue 20)."""

    __slots__ = ("i", "kind", "r", "direction", "lo", "start", "other", "s_known", "o_known", "from_subject")

    def __init__(self, i: int, kind: str, r: int, direction: bool, lo: int, start: tuple, other: tuple,
                 s_known: bool, o_known: bool, from_subject: bool) -> None:
        self.i = i                   # the pattern's index in the query
        self.kind = kind             # "closed": reach sets of a closed relation; "hop": one asserted step;
                                     # "walk": r+ / r* over asserted facts scoring 1; "best": r+ / r* over
                                     # asserted facts of any confidence
        self.r = r                   # relation id
        self.direction = direction   # graph direction walked from the start end (True: subject -> object)
        self.lo = lo                 # 0: the start matches itself (r*)
        self.start = start           # ("const", id) or ("var", name): the end the sets are taken from
        self.other = other           # ("const", id), ("var", name) bound earlier, or ("new", name)
        self.s_known = s_known       # the subject was known at this pattern's turn (the evaluator walks from it)
        self.o_known = o_known
        self.from_subject = from_subject

    def __repr__(self) -> str:
        return f"_Step({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


class Table:
    """The bound rows of a conjunction: a column of symbol ids per variable and, per pattern whose
    matches can score below 1, its scores (arrays, or lists from :mod:`thinkingdb.engine.smallconj`)."""

    __slots__ = ("query", "steps", "cols", "scores", "n", "truncated", "derived", "nodes")

    def __init__(self, query: Query, steps: list, cols: dict, scores: dict, n: int, truncated: str | None,
                 derived: int, nodes: int) -> None:
        self.query, self.steps, self.cols, self.scores, self.n = query, steps, cols, scores, n
        self.truncated, self.derived, self.nodes = truncated, derived, nodes


def plan_conjunction(view, query: Query, limits: Limits, ones=None) -> list[_Step] | None:
    """The steps of ``query`` over ``view`` (a single-source result), or None when this module does
    not answer it (see the module docstring). ``ones(g, r)``: do all of ``r``'s asserted facts score
    1 (True: ``r+`` walks breadth first; False: best walks; None: not known, no plan)? Default
    :func:`thinkingdb.engine.bfs._all_one` (numpy)."""
    if limits.max_nodes is not None or len(query.patterns) < 2:
        return None
    ids, g = view.ids, view.g
    rels = view._rels
    n = len(g._syms)
    bound: set[str] = set()
    steps = []
    for i in pattern_order(query.patterns):
        p = query.patterns[i]
        simple = _simple(p.path)
        if simple is None:
            return None
        rel, fwd, lo, hi = simple
        if not (lo == hi == 1 or (lo in (0, 1) and hi is None)):
            return None
        r = ids.find_rel(rel)
        if r is None or r >= len(g._out) or r in view._layers:   # (a layer rule derives it: not asserted only)
            return None
        ends = []
        for t in (p.subject, p.object):
            if isinstance(t, Var):
                ends.append(("var", t.name) if t.name in bound else ("new", t.name))
            else:
                sid = ids.find_sym(t)
                if sid is None or sid >= n:
                    return None
                ends.append(("const", sid))
        s_end, o_end = ends
        s_known, o_known = s_end[0] != "new", o_end[0] != "new"
        if not (s_known or o_known):
            return None
        from_subject = s_known and not (o_known and o_end[0] == "const" and s_end[0] == "var")
        start, other = (s_end, o_end) if from_subject else (o_end, s_end)
        direction = fwd == from_subject
        c = rels.get(r)
        if c is not None:
            if not c.all_ones:
                return None
            kind = "closed"
        elif lo == hi == 1:
            kind = "hop"
        else:
            if ones is None:
                from .bfs import _all_one as ones
            one = ones(g, r)
            if one is None:
                return None
            kind = "walk" if one else "best"
        steps.append(_Step(i, kind, r, direction, lo, start, other, s_known, o_known, from_subject))
        bound.update(v.name for v in p.variables())
    return steps


def _degrees(index, us: np.ndarray) -> np.ndarray:
    """Asserted facts per start in ``index`` (one relation, one direction)."""
    import numpy as np
    if hasattr(index, "_ptr") and not index._full:    # a mapped relation: its CSR arrays
        keys, ptr, _ = index.csr()
        if not len(keys):
            return np.zeros(len(us), np.int64)
        i = np.minimum(np.searchsorted(keys, us), len(keys) - 1)
        hit = keys[i] == us
        return np.where(hit, ptr[i + 1].astype(np.int64) - ptr[i].astype(np.int64), 0)
    return np.fromiter((len(index.get(u) or ()) for u in us.tolist()), dtype=np.int64, count=len(us))


def run_conjunction(view, query: Query, steps: list[_Step], limits: Limits, deadline: float | None) -> Table:
    """Evaluate ``steps`` over ``view`` into a :class:`Table` (see the module docstring)."""
    import numpy as np
    from .bfs import BestSets, HopSets, ReachMemo, rank_array
    from .reachsets import _distinct, _gather
    g = view.g
    rank = rank_array(g)
    cap = limits.max_derived
    cols: dict[str, np.ndarray] = {}
    scores: dict[int, np.ndarray] = {}
    n_rows, count, truncated = 1, 0, None
    counted: dict[tuple[int, bool], np.ndarray] = {}
    walks: dict[int, tuple] = {}
    touched = np.zeros(len(g._syms), dtype=bool)
    for st in steps:
        if st.kind == "closed":
            c = view._rels[st.r]
            src = c.fwd if st.direction else c.bwd
        elif st.kind == "walk":
            if st.r not in walks:
                walks[st.r] = ReachMemo.pair(g, [st.r], deadline)
            src = walks[st.r][0 if st.direction else 1]
        elif st.kind == "best":
            src = BestSets(g, st.r, st.direction, st.lo, deadline)
        else:
            src = HopSets((g._out if st.direction else g._in)[st.r])
        K = _column(st.start, cols, n_rows)
        us = _distinct(K.copy())    # (a sort: np.unique hashes, 5x slower on 2M ids)
        if rank is not None and len(us):
            us = us[np.argsort(rank[us], kind="stable")]
        keep, chunk, a = len(us), 16, 0
        seen: dict[int, int] = {}    # slot -> its members counted from the other end (this step)
        while a < len(us):
            part = us[a:a + chunk]
            slots = np.fromiter((src.get(u, share=True) for u in part.tolist()), dtype=np.int64, count=len(part))
            if getattr(src, "timed_out", False) or (deadline is not None and time.perf_counter() > deadline):
                keep, truncated = a, truncated or "time"
                break
            if st.kind == "closed":
                done = counted.setdefault((st.r, st.direction), np.zeros(len(g._syms), dtype=bool))
                lens = np.fromiter((len(src.sets[k]) for k in slots.tolist()), dtype=np.int64, count=len(slots))
                index = (g._out if st.direction else g._in)[st.r]
                need = np.where(done[part], 0, lens - _degrees(index, part))
                other = counted.get((st.r, not st.direction))
                if other is not None:   # facts counted from their other end already
                    need -= _seen_from_the_other_end(src, index, part, slots, done, other, seen)
                cum = count + np.cumsum(need)
                over = np.flatnonzero(cum > cap) if cap is not None else ()
                if len(over):
                    p = int(over[0])
                    done[part[:p]] = True
                    count = int(cum[p - 1]) if p else count
                    keep, truncated = a + p, truncated or "derived"
                    break
                done[part] = True
                count = int(cum[-1]) if len(cum) else count
            a += len(part)
            chunk = min(chunk * 2, 1 << 14)
        if keep < len(us):
            rows = np.isin(K, us[:keep])
            cols = {k: v[rows] for k, v in cols.items()}
            scores = {k: v[rows] for k, v in scores.items()}
            K = K[rows]
            n_rows = len(K)
        used = us[:keep]
        touched[used] = True
        slot_of = np.fromiter((src.get(u) for u in used.tolist()), dtype=np.int64, count=len(used))
        # one sorted buffer of the distinct sets, each tagged by its position: key = position * n + value
        order = np.argsort(slot_of, kind="stable")
        sorted_slots = slot_of[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = sorted_slots[1:] != sorted_slots[:-1]
        distinct = sorted_slots[first]
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.cumsum(first) - 1
        sets = [src.sets[k] for k in distinct.tolist()]
        lens = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
        buf = np.concatenate(sets).astype(np.int64) if sets else np.zeros(0, np.int64)
        touched[buf] = True
        conf = np.concatenate([src.confs[k] for k in distinct.tolist()]) if hasattr(src, "confs") and sets else None
        off = np.cumsum(lens) - lens
        order = np.argsort(used)
        row_pos = where[order[np.searchsorted(used, K, sorter=order)]] if len(K) else np.zeros(0, np.int64)
        n = max(len(g._syms), 1)
        if st.other[0] != "new":     # both ends known: keep the rows whose other end is in the set
            P = _column(st.other, cols, n_rows)
            tagged = np.repeat(np.arange(len(sets), dtype=np.int64), lens) * n + buf
            probe = row_pos * n + P
            i = np.minimum(np.searchsorted(tagged, probe), max(len(tagged) - 1, 0))
            hit = (tagged[i] == probe) if len(tagged) else np.zeros(len(probe), bool)
            if st.lo == 0:
                hit |= K == P
            sc = conf[i[hit]] if conf is not None else None
            cols = {k: v[hit] for k, v in cols.items()}
            scores = {k: v[hit] for k, v in scores.items()}
            if sc is not None:
                scores[st.i] = sc
            n_rows = int(hit.sum())
            continue
        row_len = lens[row_pos]
        idx = np.repeat(np.arange(n_rows, dtype=np.int64), row_len)
        vals = _gather(buf, off[row_pos], row_len)
        sc = _gather(conf, off[row_pos], row_len) if conf is not None else None
        if st.lo == 0 and st.kind != "best":    # r*: the start itself, unless its set already holds it
            tagged = np.repeat(np.arange(len(sets), dtype=np.int64), lens) * n + buf
            probe = row_pos * n + K
            i = np.minimum(np.searchsorted(tagged, probe), max(len(tagged) - 1, 0))
            has = (tagged[i] == probe) if len(tagged) else np.zeros(len(probe), bool)
            extra = np.flatnonzero(~has)
            idx, vals = np.concatenate([idx, extra]), np.concatenate([vals, K[extra]])
        cols = {k: v[idx] for k, v in cols.items()}
        scores = {k: v[idx] for k, v in scores.items()}
        if sc is not None:
            scores[st.i] = sc
        cols[st.other[1]] = vals
        n_rows = len(idx)
    for st in steps:    # a variable first bound after the rows ran out
        if st.other[0] == "new" and st.other[1] not in cols:
            cols[st.other[1]] = np.zeros(0, np.int64)
    return Table(query, steps, cols, scores, n_rows, truncated, count, int(touched.sum()))


def _seen_from_the_other_end(src, index, part: np.ndarray, slots: np.ndarray, done: np.ndarray,
                             other: np.ndarray, seen: dict) -> np.ndarray:
    """Per start ``u`` of ``part`` not counted yet in this direction: its derived facts already counted
    as starts of the other direction (``other``, a flag per symbol) — the members of its set counted
    there, less those ``u`` has an asserted fact with (asserted facts are never counted)."""
    import numpy as np
    for k in set(slots.tolist()) - seen.keys():
        seen[k] = int(np.count_nonzero(other[src.sets[k]]))
    got = np.fromiter((seen[k] for k in slots.tolist()), dtype=np.int64, count=len(slots))
    return np.where(done[part] | (got == 0), 0, got - _asserted_flagged(index, part, other))


def _asserted_flagged(index, us: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Per start, its asserted facts in ``index`` whose other end is flagged."""
    import numpy as np
    if hasattr(index, "_ptr") and not index._full:    # a mapped relation: its CSR arrays
        from .reachsets import _gather
        keys, ptr, vals = index.csr()
        if not len(keys):
            return np.zeros(len(us), np.int64)
        i = np.minimum(np.searchsorted(keys, us), len(keys) - 1)
        hit = keys[i] == us
        lo = ptr[i].astype(np.int64)
        lens = np.where(hit, ptr[i + 1].astype(np.int64) - lo, 0)
        marks = np.concatenate([[0], np.cumsum(flag[_gather(vals, lo, lens)], dtype=np.int64)])
        ends = np.cumsum(lens)
        return marks[ends] - marks[ends - lens]
    return np.fromiter((sum(1 for v in (index.get(u) or ()) if flag[v]) for u in us.tolist()),
                       dtype=np.int64, count=len(us))


def _column(end: tuple, cols: dict, n_rows: int) -> np.ndarray:
    import numpy as np
    return np.full(n_rows, end[1], dtype=np.int64) if end[0] == "const" else cols[end[1]]
