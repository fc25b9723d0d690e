"""The single-source transitive search in pure Python, for a question whose constant reaches few symbols.

:func:`thinkingdb.engine.reach.single_source` answers ``? c R ?x`` (or ``? ?x R c``, or ``why c R d``)
under a transitive declaration with numpy searches (:class:`thinkingdb.engine.bfs.Search`). When the
constant reaches at most :data:`thinkingdb.engine.bulk.SMALL_REACH` symbols, loading numpy costs more
than the whole question (a cold ``? GO:0006915 is_a ?x.`` with the default rules, 5 answers, spent most
of its ~120 ms importing numpy), so :func:`small_single_source` answers it here: the same layered search
(fewest steps, then the canonically smallest predecessor of the layer before), the same proofs (a
balanced tree over that walk: :class:`WalkProof`, shared with the fast path), the same counts of
derived facts and touched symbols, ``truncated`` and stats. The search stops past the threshold and the
question goes to the numpy path, as does every shape not handled here: a conjunction, a path other than
one relation (maybe inverted) or its ``+`` / ``*`` (answered as ``bulk`` answers it, in lists:
:class:`SmallAnswers`), several closed relations, a confidence or rule weight below 1, a constant the
graph does not hold.
"""

from __future__ import annotations

import sys
from _bisect import insort_right as insort   # = bisect.insort, without loading bisect.py
import time

from ..model import Limits, PathInv, PathRel, PathRepeat, Var
from .answers import _proofs_builder
from .bulk import BulkAnswers, _LabelSource, _tick
from .paths import _simple
from .results import SearchedView

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read: a question's answers do not load it
    from .proofs import Proof

__all__ = ["WalkProof", "closed_fact_proof", "small_single_source"]


def closed_fact_proof(view, key):
    """The proof of ``key`` in a result over closed relations (``view._rels``: relation -> its
    :class:`WalkProof` with ``walk``): the asserted fact's, else the best walk's, else None."""
    from .proofs import Proof
    c = view.asserted(key)
    if c is not None:
        return Proof.asserted(view.ids.triple(key), c)
    if not view.is_derived(key):
        return None
    closed = view._rels[key[1]]
    return closed.proof(view.ids.triple, closed.walk(key[0], key[2], view.ids.sym_rank))


class WalkProof:
    """Proofs over a walk of a closed relation ``r`` (``g``, ``r``, ``w``, ``trule_name``, ``rules``,
    ``sources``: ``(relation, weight, rule index)`` of the relations declared into ``r``)."""

    def edge(self, u: int, v: int):
        """Best leaf for the edge ``u -> v``: ``(score, source relation, rule index | None)``."""
        g, r = self.g, self.r
        if r < len(g._out):
            c = g._out[r].get(u, {}).get(v)
            if c is not None:
                return c, r, None
        best = None
        for s, w, j in self.sources:
            if s < len(g._out):
                c = g._out[s].get(u, {}).get(v)
                if c is not None and (best is None or w * c > best[0]):
                    best = (w * c, s, j)
        return best

    def proof(self, triple_of, path: list[int]) -> Proof:
        """A balanced tree of the transitive rule over ``path``, leaves its asserted (or declared) edges."""
        from .proofs import Proof

        def build(i: int, j: int) -> Proof:
            if j == i + 1:
                score, rel, rule_idx = self.edge(path[i], path[j])
                t = triple_of((path[i], self.r, path[j]))
                if rule_idx is None:
                    return Proof.asserted(t, score)
                leaf = Proof.asserted(triple_of((path[i], rel, path[j])), self.g._out[rel][path[i]][path[j]])
                rule = self.rules[rule_idx]
                return Proof.derived(t, rule.name, rule.weight, (leaf,))
            mid = i + (j - i + 1) // 2
            t = triple_of((path[i], self.r, path[j]))
            return Proof.derived(t, self.trule_name, self.w, (build(i, mid), build(mid, j)))
        return build(0, len(path) - 1)


class _Layers:
    """:class:`thinkingdb.engine.bfs.Search` with predecessors, over dicts: ``dist`` (layer of first
    arrival, at least 1) and ``pred`` (the smallest-ranked symbol of the layer before with an edge)."""

    def __init__(self, g, bases, src: int, forward: bool, deadline, cap: int | None) -> None:
        n_rel = len(g._out)
        indexes = [(g._out if forward else g._in)[b] for b in bases if 0 <= b < n_rel]
        rank = None if g.is_mapped else g.ranks()[0]
        self.dist: dict[int, int] = {}
        self.pred: dict[int, int] = {}
        self.src, self.timed_out, self.over = src, False, False
        frontier, layer = [src], 0
        room = None if cap is None else cap + 1   # symbols found that make the search over the cap
        while frontier:
            best: dict[int, int] = {}
            for u in frontier:
                ru = u if rank is None else rank[u]
                for ix in indexes:
                    row = ix.get(u)
                    if row:
                        for v in row:
                            if v not in self.dist:
                                p = best.get(v)
                                if p is None or ru < (p if rank is None else rank[p]):
                                    best[v] = u
                if room is not None and len(best) >= room:   # over the cap before the layer ends
                    self.over = True
                    return
            layer += 1
            for v, u in best.items():
                self.dist[v], self.pred[v] = layer, u
            if room is not None:
                room = cap + 1 - len(self.dist)
                if room <= 0:
                    self.over = True
                    return
            frontier = sorted(best)
            if frontier and deadline is not None and time.perf_counter() > deadline:
                self.timed_out = True
                return

    def reached(self) -> list[int]:
        return sorted(self.dist)

    def upto(self, target: int) -> list[int]:
        """The symbols reached by the end of ``target``'s layer (all of them when it is not reached)."""
        d = self.dist.get(target)
        return self.reached() if d is None else sorted(v for v, k in self.dist.items() if k <= d)

    def path(self, target: int) -> list[int]:
        out = [target]
        while True:
            p = self.pred[out[-1]]
            out.append(p)
            if p == self.src or len(out) > len(self.dist) + 1:
                break
        return out[::-1]


def _ones(g, r: int) -> bool | None:
    """Is every asserted fact of ``r`` of confidence 1, known without numpy? (None: not known.)"""
    if r >= len(g._out):
        return True
    ix = g._out[r]
    if hasattr(ix, "all_ones"):      # a mapped relation
        conf, ptr = getattr(ix, "_conf", _UNSET), getattr(ix, "_ptr", None)
        if conf is None:             # the file stores no confidences
            return True
        if conf is _UNSET or ptr is None or getattr(conf, "itemsize", 0) != 8:
            return None              # (a graph file read with its delta: not known here)
        if not len(ptr):
            return True
        lo, hi = int(ptr[0]), int(ptr[-1])   # this relation's run of the file's confidences, compared at C speed
        for i in range(lo, hi, _BLOCK):      # a block at a time: a copy of 8 bytes a fact, not of the run
            j = min(hi, i + _BLOCK)
            if bytes(conf[i:j]) != (_ones_block() if j - i == _BLOCK else _ONE * (j - i)):
                return False
        return True
    return all(c == 1.0 for row in ix.values() for c in row.values())


_UNSET = object()
_ONE = 0x3FF0000000000000.to_bytes(8, sys.byteorder)   # 1.0 as a float64 in this machine's byte order
_BLOCK = 1 << 16                                         # confidences compared at a time (512 KiB)
_ONES = b""   # _ONE * _BLOCK, made by the first relation with a whole block (512 KiB: not at import)


def _ones_block() -> bytes:
    global _ONES
    if len(_ONES) != _BLOCK * 8:
        _ONES = _ONE * _BLOCK
    return _ONES


class _Small(WalkProof):
    """One closed relation, searched from the question's constant (``reach``) and per proof (``walk``)."""

    def __init__(self, g, r, trule, sources, rules, deadline) -> None:
        self.g, self.r, self.w, self.trule_name = g, r, trule.weight, trule.name
        self.sources, self.rules, self.deadline = sources, rules, deadline
        self.bases = [b for b in [r] + [s for s, _, _ in sources] if b < len(g._out)]
        self.all_ones = True
        self._walks: dict[int, _Layers] = {}
        self.timed_out = False

    def search(self, u: int, forward: bool, cap: int | None) -> _Layers:
        s = _Layers(self.g, self.bases, u, forward, self.deadline, cap)
        self.timed_out = self.timed_out or s.timed_out
        return s

    def walk(self, x: int, y: int, rank) -> list[int]:
        s = self._walks.get(x)
        if s is None:    # a proof is read after the question's deadline: its walk is not bounded by it
            s = self._walks[x] = _Layers(self.g, self.bases, x, True, None, None)
        return s.path(y)


class OnesView:
    """Scores and proofs of a view over closed relations whose facts all score 1 (mixed in before a
    :class:`~thinkingdb.engine.results.FactView` that has ``is_derived``): an asserted fact keeps its
    confidence, a derived one scores 1 with the closed fact's proof."""

    def fact_score(self, key):
        c = self.asserted(key)
        if c is not None:
            return c
        return 1.0 if self.is_derived(key) else None

    def fact_proof(self, key):
        return closed_fact_proof(self, key)


class SmallSourceResult(OnesView, SearchedView):
    """:class:`thinkingdb.engine.reach.SingleSourceResult` for one pattern ``s R o`` with a constant end."""

    def __init__(self, g, ids, rules, r: int, closed: _Small, sid, oid, layers: _Layers) -> None:
        self.g, self.ids, self.rules, self.r = g, ids, rules, r
        self._rels = {r: closed}
        self.sid, self.oid, self.layers = sid, oid, layers
        self.stats = None
        if sid is not None and oid is not None:
            self.ends = layers.reached() if oid in layers.dist else []   # only `has` is asked
        else:
            self.ends = layers.reached()
        self.nodes = 0       # as the numpy path's: the symbols its counting searches touched
        self.repeat = False  # the goal is R+ / R*: no derived fact asked for (as the numpy path counts)

    def has(self, u: int, v: int) -> bool:
        sid, oid = self.sid, self.oid
        if (u == sid and (oid is None or v == oid)) or (sid is None and v == oid):
            return (v if sid is not None else u) in self.layers.dist
        return v in self._rels[self.r].search(u, True, None).dist

    def count(self) -> int:
        """:meth:`SingleSourceResult.bulk_count` for the pattern: derived facts it asks for."""
        sid, oid, r = self.sid, self.oid, self.r
        if self.repeat:
            return 0
        if sid is not None and oid is not None:
            return int(oid in self.layers.dist and self.asserted((sid, r, oid)) is None)
        index = (self.g._out if oid is None else self.g._in)[r] if r < len(self.g._out) else {}
        row = index.get(sid if oid is None else oid) or {}
        return len(self.layers.dist) - sum(1 for x in row if x in self.layers.dist)

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        return self.count()

    def closed_ones(self, r: int) -> bool:
        return r == self.r

    def _reach_of(self, u: int) -> list[int]:
        if u == self.sid and self.oid is None:
            return self.ends
        return self._rels[self.r].search(u, True, None).reached()

    def _reverse_of(self, v: int) -> list[int]:
        if v == self.oid and self.sid is None:
            return self.ends
        return self._rels[self.r].search(v, False, None).reached()

    def derived_keys(self):
        sid, oid, r = self.sid, self.oid, self.r
        if self.repeat:
            keys = []
        elif sid is not None and oid is not None:
            keys = [(sid, r, oid)] if oid in self.layers.dist else []
        elif sid is not None:
            keys = [(sid, r, v) for v in self.ends]
        else:
            keys = [(u, r, oid) for u in self.ends]
        return (k for k in keys if self.asserted(k) is None)

    def is_derived(self, key) -> bool:
        return key[1] == self.r and self.has(key[0], key[2]) and self.asserted(key) is None


    def closed_answers(self, pat, var: str, const: int, forward: bool, lo: int, limits: Limits, deadline):
        """``bulk._finish`` for ``const R+ ?x`` / ``R*`` (or the other way) over the closed relation,
        in lists: the reach set in canonical order, every score 1, each proof the closed fact's."""
        reach = self._reach_of(const) if forward else self._reverse_of(const)
        ends, r = list(reach), self.r
        has = const in set(reach)
        if lo == 0 and not has:
            insort(ends, const)
        truncated = self.truncated or _tick(len(ends), limits, deadline)
        if not self.g.is_mapped:
            rank = self.g.ranks()[0]
            ends.sort(key=rank.__getitem__)

        def proofs(end: int):
            a, b = (const, end) if not isinstance(pat.subject, Var) else (end, const)
            if lo == 0 and end == const:
                steps = list
            else:
                key = (const, r, end) if forward else (end, r, const)
                steps = (lambda key=key: [key])
            return _proofs_builder(self, pat.path, a, b, 1.0, steps, 1)
        return SmallAnswers(self.ids, var, ends, [1.0] * len(ends), proofs), truncated

    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        if r == self.r:
            for o in self._reach_of(s):
                res.setdefault(o, 1.0)
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        if r == self.r:
            for s in self._reverse_of(o):
                res.setdefault(s, 1.0)
        return res

    def subjects(self, r: int) -> list[int]:
        extra = set() if r != self.r else {u for b in self._rels[r].bases for u, row in self.g._out[b].items() if row}
        return sorted(set(super().subjects(r)) | extra)

    def objects(self, r: int) -> list[int]:
        extra = set() if r != self.r else {v for b in self._rels[r].bases for v, col in self.g._in[b].items() if col}
        return sorted(set(super().objects(r)) | extra)


class SmallAnswers(BulkAnswers):
    """:class:`~thinkingdb.engine.bulk.BulkAnswers` over lists (no numpy)."""

    def keys(self) -> list[str]:
        if self._keys is None:
            self._keys = [self.ids.sym_key(e) for e in self.ends]
        return self._keys

    def _slice(self, i: slice) -> "SmallAnswers":
        out = SmallAnswers(self.ids, self.var, self.ends[i], self.scores[i], self._proofs, self._labels)
        out._keys = self.keys()[i]
        return out

    def with_labels(self, fetch) -> "SmallAnswers":
        out = SmallAnswers(self.ids, self.var, self.ends, self.scores, self._proofs, _LabelSource(fetch, self.keys))
        out._keys = self._keys
        return out


def small_single_source(g, ids, rules, goals, limits: Limits, alternatives: int, deadline):
    """The single-source result of one pattern over one closed relation whose constant reaches at most
    ``bulk.SMALL_REACH`` symbols, in pure Python; None for anything else (the numpy path decides)."""
    from . import bulk
    from .rules import fast_path_plan
    if bulk.SMALL_REACH <= 0 or len(goals) != 1 or len(goals[0].patterns) != 1 or \
            (limits.max_rows is not None and limits.max_rows <= bulk.SMALL_REACH + 1):
        return None    # (the numpy path's answers are arrays, which max_rows does not cut; the evaluator's rows)
    pat = goals[0].patterns[0]
    path, fwd = pat.path, True
    repeat = isinstance(path, PathRepeat)   # R+ / R*: answered as bulk's arrays are (closed_answers)
    if repeat:
        simple = _simple(path)
        if simple is None or simple[3] is not None or simple[2] not in (0, 1) or \
                isinstance(pat.subject, Var) == isinstance(pat.object, Var):
            return None
        path, fwd = PathRel(simple[0]), simple[1]
    while isinstance(path, PathInv):
        path, fwd = path.path, not fwd
    if not isinstance(path, PathRel):
        return None
    plan = fast_path_plan(rules, Limits(max_depth=limits.max_depth), alternatives)
    if plan is None or len(plan) != 1:
        return None
    (r_key, (t_idx, sources)), = plan.items()
    r = ids.find_rel(path.relation)
    if r is None or r != ids.rel(r_key):
        return None
    s, o = (pat.subject, pat.object) if fwd else (pat.object, pat.subject)
    sid = None if isinstance(s, Var) else ids.find_sym(s)
    oid = None if isinstance(o, Var) else ids.find_sym(o)
    n = len(g._syms)
    if (sid is None and oid is None) or any(x is not None and not 0 <= x < n for x in (sid, oid)) or \
            (sid is None and not isinstance(s, Var)) or (oid is None and not isinstance(o, Var)):
        return None
    src = [(ids.rel(x), rules[j].weight, j) for x, j in sources]
    trule = rules[t_idx]
    if trule.weight != 1.0 or any(w != 1.0 for _, w, _ in src) or \
            any(_ones(g, b) is not True for b in [r] + [x for x, _, _ in src]):
        return None
    closed = _Small(g, r, trule, src, rules, deadline)
    forward = sid is not None
    layers = closed.search(sid if forward else oid, forward, bulk.SMALL_REACH)
    if layers.over:
        return None
    if forward:
        closed._walks[sid] = layers
    res = SmallSourceResult(g, ids, rules, r, closed, sid, oid, layers)
    if repeat:    # the numpy path's goal patterns are relations: it counts nothing, touches nothing
        res.repeat = True
        return res
    # the symbols the numpy path's counting searches touch (its stats read them after the count)
    both = sid is not None and oid is not None
    touched = set(layers.upto(oid) if both else layers.reached()) | {sid if forward else oid}
    if limits.max_derived is not None or limits.max_nodes is not None:   # counted once here
        if limits.max_derived is not None and res.count() > limits.max_derived:
            return None
        if limits.max_nodes is not None and len(touched) > limits.max_nodes:
            return None
        if both and oid in layers.dist:   # and again for the stats: the second `has` reads what reaches `oid`
            touched |= set(closed.search(oid, False, None).dist) | {oid}
    res.nodes = len(touched)
    return res
