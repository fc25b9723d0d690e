"""Fast path for rule sets that are pure transitive closure.

When every rule is either ``?x R ?y, ?y R ?z => ?x R ?z`` or a subrelation ``?x S ?y => ?x R ?y``
into such an ``R`` (with ``S`` derived by no rule), the closure of ``R`` is reachability over the
``R`` and ``S`` edges. It is computed by strongly connected components (iterative Tarjan, which
emits components successors-first) and one set union per condensation edge; each finished reach set
is moved into a flat ``array('i')`` (4 bytes a fact) once every predecessor has used it, so only the
frontier lives as Python sets.

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
from array import array
from bisect import bisect_left

import numpy as np

from ..model import Limits, Rule
from .proofs import Proof
from .results import FactView
from .rules import copy_rule, transitive_relation


def fast_path_plan(rules: tuple[Rule, ...], limits: Limits, alternatives: int):
    """``{R: (transitive rule index, [(S, subrelation rule index), ...])}`` or None."""
    if alternatives or limits.max_depth is not None or not rules:
        return None
    trans: dict[str, int] = {}
    copies: list[tuple[str, str, int]] = []
    for i, rule in enumerate(rules):
        r = transitive_relation(rule)
        if r is not None:
            if r in trans:
                return None
            trans[r] = i
            continue
        c = copy_rule(rule)
        if c is None:
            return None
        copies.append((c[0], c[1], i))
    if any(r not in trans or s in trans for s, r, _ in copies):
        return None
    return {r: (i, sorted((s, j) for s, rr, j in copies if rr == r)) for r, i in trans.items()}


class _Tick:
    def __init__(self, deadline):
        self.deadline, self.n, self.hit = deadline, 0, False

    def __call__(self) -> bool:
        self.n += 1
        if self.deadline is not None and not self.n & 1023 and time.perf_counter() > self.deadline:
            self.hit = True
        return self.hit


def run_transitive(g, ids, rules, plan, scope, deadline):
    """Compute the closure of each planned relation; None when the fast path would not be exact."""
    tick = _Tick(deadline)
    rels = {}
    for r_key, (t_idx, sources) in plan.items():
        r = ids.rel(r_key)
        src = [(ids.rel(s), rules[j].weight, j) for s, j in sources]
        if r < len(g._out) and any(c != 1.0 for row in g._out[r].values() for c in row.values()):
            return None
        rels[r] = _Closed(g, ids, r, rules[t_idx], src, rules, scope, tick)
    return TransitiveResult(g, ids, rules, rels, scope, "time" if tick.hit else None)


class _Closed:
    """Reachability of one relation: ``reach(u)`` as a sorted slice of a flat int array."""

    def __init__(self, g, ids, r, trule, sources, rules, scope, tick):
        self.r, self.w, self.trule_name = r, trule.weight, trule.name
        self.sources = sources
        self.rules = rules
        self.g, self.scope = g, scope
        n = ids.n_syms
        bases = [r] + [s for s, _, _ in sources]
        adj: dict[int, set[int]] = {}
        self.all_ones = self.w == 1.0
        for b in bases:
            if b >= len(g._out):
                continue
            for u, row in g._out[b].items():
                if scope is not None and not scope[u]:
                    continue
                vs = [v for v in row if scope is None or scope[v]]
                if vs:
                    adj.setdefault(u, set()).update(vs)
                    if self.all_ones and b != r and any(row[v] != 1.0 for v in vs):
                        self.all_ones = False
        if self.all_ones and any(w != 1.0 for _, w, _ in sources):
            self.all_ones = False
        self.n_asserted = sum(1 for u, row in (g._out[r].items() if r < len(g._out) else ())
                              for v in row if scope is None or (scope[u] and scope[v]))
        self.comp = array("i", [-1]) * n
        self.off: list[int] = []
        self.buf = array("i")
        self._closure(adj, tick)
        self.derived_count = self.total_pairs - self.n_asserted
        self._rev = None
        self._walks: dict[int, dict[int, int]] = {}

    def _closure(self, adj, tick) -> None:
        comp = self.comp
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        on: set[int] = set()
        stack: list[int] = []
        comps: list[list[int]] = []
        for root in sorted(adj):
            if root in index or tick():
                continue
            work = [(root, iter(adj.get(root, ())))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on.add(root)
            while work:
                u, it = work[-1]
                pushed = False
                for v in it:
                    if v not in index:
                        index[v] = low[v] = len(index)
                        stack.append(v)
                        on.add(v)
                        work.append((v, iter(adj.get(v, ()))))
                        pushed = True
                        break
                    if v in on and index[v] < low[u]:
                        low[u] = index[v]
                if pushed:
                    continue
                work.pop()
                if work and low[u] < low[work[-1][0]]:
                    low[work[-1][0]] = low[u]
                if low[u] == index[u]:
                    members = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp[x] = len(comps)
                        members.append(x)
                        if x == u:
                            break
                    comps.append(members)
        # successors-first order: every successor component already has its reach set
        succs = []
        preds_left = [0] * len(comps)
        for c, members in enumerate(comps):
            ds = {comp[v] for u in members for v in adj.get(u, ()) if comp[v] != c}
            succs.append(ds)
            for d in ds:
                preds_left[d] += 1
        sets: dict[int, set[int]] = {}
        self.off = [0] * (len(comps) + 1)
        chunks: dict[int, array] = {}
        for c, members in enumerate(comps):
            if tick():
                break
            reach: set[int] = set()
            for d in succs[c]:
                reach |= sets[d]
                reach.update(comps[d])
            if len(members) > 1 or any(u in adj.get(u, ()) for u in members):
                reach.update(members)
            sets[c] = reach
            for d in succs[c]:
                preds_left[d] -= 1
                if not preds_left[d]:
                    chunks[d] = array("i", sorted(sets.pop(d)))
            if not preds_left[c]:
                chunks[c] = array("i", sorted(sets.pop(c)))
        for c in list(sets):
            chunks[c] = array("i", sorted(sets.pop(c)))
        buf = self.buf
        for c in range(len(comps)):
            self.off[c] = len(buf)
            part = chunks.pop(c, None)
            if part is not None:
                buf.extend(part)
        self.off[len(comps)] = len(buf)
        self.sizes = [len(m) for m in comps]
        # each member of a component shares its component's reach; count facts per member
        self.total_pairs = sum(self.sizes[c] * (self.off[c + 1] - self.off[c]) for c in range(len(comps)))

    def reach(self, u: int) -> array:
        if u >= len(self.comp):
            return array("i")
        c = self.comp[u]
        return array("i") if c < 0 else self.buf[self.off[c]:self.off[c + 1]]

    def has(self, u: int, v: int) -> bool:
        if u >= len(self.comp) or self.comp[u] < 0:
            return False
        c = self.comp[u]
        lo, hi = self.off[c], self.off[c + 1]
        i = bisect_left(self.buf, v, lo, hi)
        return i < hi and self.buf[i] == v

    def reverse(self, v: int) -> list[int]:
        """Symbols that reach ``v`` (built once, on first use, as a sorted numpy index)."""
        if self._rev is None:
            comp = np.frombuffer(self.comp, dtype=np.int32) if len(self.comp) else np.zeros(0, np.int32)
            nodes = np.nonzero(comp >= 0)[0]
            off = np.asarray(self.off, dtype=np.int64)
            first, counts = off[comp[nodes]], off[comp[nodes] + 1] - off[comp[nodes]]
            total = int(counts.sum())
            within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            buf = np.frombuffer(self.buf, dtype=np.int32) if len(self.buf) else np.zeros(0, np.int32)
            targets = buf[np.repeat(first, counts) + within]
            order = np.argsort(targets, kind="stable")
            self._rev = (targets[order], np.repeat(nodes, counts)[order])
        t, src = self._rev
        return src[np.searchsorted(t, v, "left"):np.searchsorted(t, v, "right")].tolist()

    # -- scores and proofs -----------------------------------------------------------------------
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

    def proof(self, triple_of, path: list[int]) -> Proof:
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


class TransitiveResult(FactView):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike over the fast path's reach arrays."""

    def __init__(self, g, ids, rules, rels: dict[int, _Closed], scope, truncated) -> None:
        self.g, self.ids, self.rules, self._rels, self._scope = g, ids, rules, rels, scope
        self.truncated = truncated
        self.stats = None
        self.asserted_in_scope = sum(c.n_asserted for c in rels.values())

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        return sum(c.derived_count for c in self._rels.values())

    def derived_keys(self):
        for r, c in self._rels.items():
            for u in range(len(c.comp)):
                if c.comp[u] >= 0:
                    for v in c.reach(u):
                        if self.asserted((u, r, v)) is None:
                            yield (u, r, v)

    def is_derived(self, key) -> bool:
        c = self._rels.get(key[1])
        return c is not None and c.has(key[0], key[2]) and self.asserted(key) is None

    def fact_score(self, key):
        c = self.asserted(key)
        if c is not None:
            return c
        if not self.is_derived(key):
            return None
        closed = self._rels[key[1]]
        return 1.0 if closed.all_ones else self.fact_proof(key).score

    def fact_proof(self, key):
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        if not self.is_derived(key):
            return None
        closed = self._rels[key[1]]
        return closed.proof(self.ids.triple, closed.walk(key[0], key[2], self.ids.sym_rank))

    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        c = self._rels.get(r)
        if c is not None:
            for o in c.reach(s):
                if o not in res:
                    res[o] = 1.0 if c.all_ones else self.fact_score((s, r, o))
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        c = self._rels.get(r)
        if c is not None:
            for s in c.reverse(o):
                if s not in res:
                    res[s] = 1.0 if c.all_ones else self.fact_score((s, r, o))
        return res

    def subjects(self, r: int) -> list[int]:
        c = self._rels.get(r)
        extra = [] if c is None else [u for u in range(len(c.comp)) if c.comp[u] >= 0 and len(c.reach(u))]
        return sorted(set(super().subjects(r)) | set(extra))

    def objects(self, r: int) -> list[int]:
        c = self._rels.get(r)
        extra = set() if c is None else set(c.buf)
        return sorted(set(super().objects(r)) | extra)

    def closed_ones(self, r: int) -> bool:
        """True when every fact of ``r`` scores 1 (then ``r+`` from a source is its reach set)."""
        c = self._rels.get(r)
        return c is not None and c.all_ones
