"""Fast path for rule sets that are pure transitive closure.

When every rule is either ``?x R ?y, ?y R ?z => ?x R ?z`` or a subrelation ``?x S ?y => ?x R ?y``
into such an ``R`` (with ``S`` derived by no rule), the closure of ``R`` is reachability over the
``R`` and ``S`` edges, computed over whole arrays by :mod:`thinkingdb.engine.reachsets` (cycles
condensed, then reach sets propagated layer by layer from the sinks; 4 bytes a fact).

Scores and proofs are rebuilt lazily, per source, from the graph itself: the best walk (highest
product, then fewest steps, then canonical predecessor) from a best-first search, split into a
balanced tree of transitive steps whose leaves are the asserted ``R`` facts or the ``S`` facts
lifted by their subrelation rule. Any such tree over a walk of ``L`` edges has ``L - 1`` transitive
steps, so its score is the walk's product — the same as the semi-naive engine's best score.

Used only when it is exact: no depth bound, no alternatives, not more derived facts than
``max_derived`` (the closure falls back to the semi-naive engine, which admits a canonical prefix), and every asserted ``R``
fact has confidence 1 (a lower asserted confidence would pin a shortcut below its derivations,
which reachability cannot express); otherwise the semi-naive engine runs.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from .graph import relation_arrays
from .layer import Layers
from .reachsets import reach_sets
from .results import FactView
from .smallsource import WalkProof, closed_fact_proof


def deadline_stop(deadline: float | None):
    """A ``stop()`` for :func:`~thinkingdb.engine.reachsets.reach_sets`: True once ``deadline``
    (``time.perf_counter()`` seconds, None: never) has passed, and from then on; ``stop.hit`` says."""
    def stop() -> bool:
        if deadline is not None and not stop.hit and time.perf_counter() > deadline:
            stop.hit = True
        return stop.hit
    stop.hit = False
    return stop


def run_transitive(g, ids, rules, plan, scope, deadline, layered=None):
    """Compute the closure of each planned relation (``rules``: the plan's, without the layer rules
    ``layered`` of :func:`thinkingdb.engine.layer.split`); None when the fast path would not be exact."""
    scope_np = None if scope is None else np.frombuffer(bytes(scope), dtype=np.uint8).astype(bool)
    stop = deadline_stop(deadline)
    rels = {}
    for r_key, (t_idx, sources) in plan.items():
        r = ids.rel(r_key)
        edges = relation_arrays(g, r, scope_np)
        if not np.all(edges[2] == 1.0):
            return None
        src = [(ids.rel(s), rules[j].weight, j) for s, j in sources]
        rels[r] = _Closed(g, ids, r, rules[t_idx], src, rules, scope, stop, edges)
    layers = Layers({ids.rel(h): (ids.rel(r), swap, rule) for h, (r, swap, rule) in (layered or {}).items()})
    return TransitiveResult(g, ids, rules, rels, scope, "time" if stop.hit else None, layers)


class _Closed(WalkProof):
    """Reachability of one relation: ``reach(u)`` as a sorted slice of a flat int array
    (:mod:`thinkingdb.engine.reachsets`). ``stop``: see :func:`deadline_stop`; ``edges``: the
    relation's own asserted facts when already loaded."""

    def __init__(self, g, ids, r, trule, sources, rules, scope, stop, edges=None):
        self.r, self.w, self.trule_name = r, trule.weight, trule.name
        self.sources = sources
        self.rules = rules
        self.g, self.scope = g, scope
        scope_np = None if scope is None else np.frombuffer(bytes(scope), dtype=np.uint8).astype(bool)
        if edges is None:
            edges = relation_arrays(g, r, scope_np)
        parts = [edges] + [relation_arrays(g, s, scope_np) for s, _, _ in sources]
        self.all_ones = self.w == 1.0 and all(w == 1.0 for _, w, _ in sources) and \
            all(bool(np.all(c == 1.0)) for _, _, c in parts[1:])
        self.n_asserted = len(edges[0])
        self.sets = reach_sets(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                               ids.n_syms, stop)
        self.derived_count = self.sets.pairs - self.n_asserted
        self._rev = None
        self._walks: dict[int, dict[int, int]] = {}

    def reach(self, u: int) -> list[int]:
        return self.sets.reach(u).tolist()

    def has(self, u: int, v: int) -> bool:
        row = self.sets.reach(u)
        i = int(np.searchsorted(row, v))
        return i < len(row) and row[i] == v

    def sources_of(self) -> np.ndarray:
        """Every symbol that reaches something, ascending."""
        rs = self.sets
        nodes = np.nonzero(rs.comp >= 0)[0]
        return nodes[rs.length[rs.comp[nodes]] > 0]

    def reverse(self, v: int) -> list[int]:
        """Symbols that reach ``v`` (built once, on first use, as a sorted numpy index)."""
        if self._rev is None:
            rs = self.sets
            nodes = np.nonzero(rs.comp >= 0)[0]
            first, counts = rs.start[rs.comp[nodes]], rs.length[rs.comp[nodes]]
            total = int(counts.sum())
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            targets = rs.buf[np.repeat(first, counts) + within]
            order = np.argsort(targets, kind="stable")
            self._rev = (targets[order], np.repeat(nodes, counts)[order])
        t, src = self._rev
        return src[np.searchsorted(t, v, "left"):np.searchsorted(t, v, "right")].tolist()

    # -- scores and proofs (edge, proof: WalkProof) ---------------------------------------------
    def successors(self, u: int):
        g, sc = self.g, self.scope
        out = {}
        for b in [self.r] + [s for s, _, _ in self.sources]:
            if b < len(g._out):
                for v in g._out[b].get(u, ()):
                    if sc is None or sc[v]:
                        out[v] = None
        return out

    def best_walks(self, x: int, rank) -> dict[int, int]:
        """Predecessor of each symbol on its best walk of at least one step from ``x`` (highest
        product, then fewest steps, then canonically smallest predecessor); cached per source."""
        done = self._walks.get(x)
        if done is not None:
            return done
        done = {}
        heap = [(-1.0, 0, -1, x, -1)]
        while heap:
            neg, hops, _pr, v, pred = heapq.heappop(heap)
            if v in done:
                continue
            if hops:
                done[v] = pred
            elif v != x:
                continue
            rv = rank(v)
            for w in self.successors(v):
                if w not in done:
                    heapq.heappush(heap, (neg * self.w * self.edge(v, w)[0], hops + 1, rv, w, v))
        if len(self._walks) > 256:
            self._walks.clear()
        self._walks[x] = done
        return done

    def walk(self, x: int, y: int, rank) -> list[int]:
        preds = self.best_walks(x, rank)
        path = [y]
        while True:
            p = preds[path[-1]]
            path.append(p)
            if p == x:
                break
        return path[::-1]


class TransitiveResult(FactView):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike over the fast path's reach arrays."""

    def __init__(self, g, ids, rules, rels: dict[int, _Closed], scope, truncated, layers=None) -> None:
        self.g, self.ids, self.rules, self._rels, self._scope = g, ids, rules, rels, scope
        self._layers = layers if layers is not None else Layers()   # one-premise rules over a closed R
        self.truncated = truncated
        self.stats = None
        self.asserted_in_scope = sum(c.n_asserted for c in rels.values())

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        n = sum(c.derived_count for c in self._rels.values())
        return n + sum(1 for _ in self._layer_keys()) if self._layers else n

    def derived_keys(self):
        for r, c in self._rels.items():
            for u in c.sources_of().tolist():
                for v in c.reach(u):
                    if self.asserted((u, r, v)) is None:
                        yield (u, r, v)
        yield from self._layer_keys()

    def _layer_keys(self):
        for h in self._layers:
            for s in self.subjects(h):
                yield from ((s, h, o) for o in self.out(h, s) if self.asserted((s, h, o)) is None)

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
        closed = self._rels[key[1]]
        return 1.0 if closed.all_ones else self.fact_proof(key).score

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
        extra = [] if c is None else c.sources_of().tolist()
        return sorted(set(super().subjects(r)) | set(extra))

    def objects(self, r: int) -> list[int]:
        if r in self._layers:
            return sorted(set(super().objects(r)) | self._layers.ends(self, r, False))
        c = self._rels.get(r)
        extra = set() if c is None else set(np.unique(c.sets.buf).tolist())
        return sorted(set(super().objects(r)) | extra)

    def closed_ones(self, r: int) -> bool:
        """True when every fact of ``r`` scores 1 (then ``r+`` from a source is its reach set)."""
        c = self._rels.get(r)
        return c is not None and c.all_ones
