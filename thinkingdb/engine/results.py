"""What a closure run returns, and the read interface queries use over asserted + derived facts.

:class:`ClosureResult` answers by keys (``score``, ``depth``, ``proof``, the ``derived`` mapping) and,
for :mod:`thinkingdb.engine.query` and :mod:`thinkingdb.engine.paths`, by interned ids (``out``, ``inn``,
``pairs``, ``fact_proof``). :class:`GraphView` is the same read interface over asserted facts only,
used when no rule can contribute to a query — nothing is rebuilt per query.
"""

from __future__ import annotations

from _bisect import bisect_left   # = bisect's, without loading bisect.py
from _collections_abc import Mapping   # = collections.abc (without the collections package)

from ..arith import run as run_constraints
from ..model import Rule, Triple, Var, ground
from .graph import FactGraph
from .rules import carries_score

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read: a plain question does not load them
    from typing import Iterator
    from .proofs import Proof


class Ids:
    """Symbol and relation ids of a graph, extended locally by keys the graph has never seen (rule
    constants, seeds) without mutating it; canonical ranks for tie-breaks."""

    def __init__(self, g: FactGraph) -> None:
        self.g = g
        self._rank, self._rel_rank = g.ranks()
        self.local_syms: dict[str, int] = {}
        self._local_keys: list[str] = []
        self.local_rels: dict[str, int] = {}
        self._sorted: list[str] | None = None
        self._sorted_rels: tuple[dict[str, float], int] | None = None   # local relations' ranks

    @property
    def n_syms(self) -> int:
        return len(self.g._syms) + len(self.local_syms)

    def sym(self, key: str) -> int:
        sid = self.g._sym.get(key)
        if sid is None:
            sid = self.local_syms.get(key)
            if sid is None:
                sid = self.local_syms[key] = self.n_syms
        return sid

    def rel(self, key: str) -> int:
        rid = self.g._rel.get(key)
        if rid is None:
            rid = self.local_rels.get(key)
            if rid is None:
                rid = self.local_rels[key] = len(self.g._rels) + len(self.local_rels)
        return rid

    def find_sym(self, key: str) -> int | None:
        sid = self.g._sym.get(key)
        return self.local_syms.get(key) if sid is None else sid

    def find_rel(self, key: str) -> int | None:
        rid = self.g._rel.get(key)
        return self.local_rels.get(key) if rid is None else rid

    def sym_key(self, sid: int) -> str:
        n = len(self.g._syms)
        if sid < n:
            return self.g._syms[sid]
        return self.local_keys()[sid - n]

    def local_keys(self) -> list[str]:
        """The keys the graph has never seen (statement nodes, rule constants), in id order."""
        if len(self._local_keys) != len(self.local_syms):   # keys made since
            self._local_keys = sorted(self.local_syms, key=self.local_syms.__getitem__)
        return self._local_keys

    def sym_keys(self):
        """Every symbol key as a numpy object array indexed by id (local keys included), for
        turning id columns into key columns in bulk."""
        import numpy as np

        keys = np.empty(self.n_syms, dtype=object)
        keys[:len(self.g._syms)] = list(self.g._syms)
        keys[len(self.g._syms):] = self.local_keys()
        return keys

    def rel_key(self, rid: int) -> str:
        n = len(self.g._rels)
        if rid < n:
            return self.g._rels[rid]
        return next(k for k, v in self.local_rels.items() if v == rid)

    def sym_rank(self, sid: int) -> float:
        if sid < len(self._rank):
            return self._rank[sid]
        if self.g.is_mapped:   # sorted on disk: a binary search, not a sort of every key
            return self.g.key_rank(self.sym_key(sid))
        if self._sorted is None:
            self._sorted = sorted(self.g._syms)
        return bisect_left(self._sorted, self.sym_key(sid)) - 0.5

    def rel_rank(self, rid: int) -> float:
        """A graph relation's rank, or for one the graph has never seen (a rule's head) a rank between
        the graph's neighbours of its key, distinct per key: ``b - 1 + (i + 1) / (2 (m + 1))`` for the
        ``i``-th of the ``m`` local keys that sort just before graph rank ``b`` (so ``2 * rank + 1``
        stays clear of every other rank too)."""
        if rid < len(self._rel_rank):
            return self._rel_rank[rid]
        if self._sorted_rels is None or self._sorted_rels[1] != len(self.local_rels):
            graph = sorted(self.g._rels)
            gaps: dict[int, list[str]] = {}
            for key in sorted(self.local_rels):
                gaps.setdefault(bisect_left(graph, key), []).append(key)
            self._sorted_rels = ({key: b - 1 + (i + 1) / (2 * (len(keys) + 1)) for b, keys in gaps.items()
                                  for i, key in enumerate(keys)}, len(self.local_rels))
        return self._sorted_rels[0][self.rel_key(rid)]

    def key_rank(self, key: tuple[int, int, int]) -> tuple:
        return self.sym_rank(key[0]), self.rel_rank(key[1]), self.sym_rank(key[2])

    def triple(self, key: tuple[int, int, int]) -> Triple:
        return Triple(self.sym_key(key[0]), self.rel_key(key[1]), self.sym_key(key[2]))

    def key(self, triple: Triple) -> tuple[int, int, int] | None:
        s, r, o = self.find_sym(triple.subject), self.find_rel(triple.relation), self.find_sym(triple.object)
        return None if s is None or r is None or o is None else (s, r, o)


class FactView:
    """Read interface over facts by ids; subclasses add derived facts."""

    ids: Ids
    g: FactGraph

    def asserted(self, key: tuple[int, int, int]) -> float | None:
        s, r, o = key
        if r >= len(self.g._out):
            return None
        row = self.g._out[r].get(s)
        return None if row is None else row.get(o)

    def out(self, r: int, s: int) -> dict[int, float]:
        """``{object: score}`` for ``s r ?`` (asserted and derived)."""
        return dict(self.g._out[r].get(s, {})) if r < len(self.g._out) else {}

    def inn(self, r: int, o: int) -> dict[int, float]:
        return dict(self.g._in[r].get(o, {})) if r < len(self.g._in) else {}

    def subjects(self, r: int) -> list[int]:
        return list(self.g._out[r]) if r < len(self.g._out) else []

    def objects(self, r: int) -> list[int]:
        """Symbols that are the object of some fact of ``r`` (asserted and derived)."""
        return list(self.g._in[r]) if r < len(self.g._in) else []

    def fact_score(self, key: tuple[int, int, int]) -> float | None:
        return self.asserted(key)

    def fact_proof(self, key: tuple[int, int, int]) -> Proof | None:
        from .proofs import Proof
        c = self.asserted(key)
        return None if c is None else Proof.asserted(self.ids.triple(key), c)

    def fact_proofs(self, key: tuple[int, int, int], k: int) -> list[Proof]:
        """Up to ``k`` distinct proofs, best first (an asserted fact's own proof always first)."""
        p = self.fact_proof(key)
        return [] if p is None else [p]

    def evidence(self, key: tuple[int, int, int], k: int) -> list[Proof]:
        """The ``k`` strongest distinct proofs, for noisy-or: an asserted fact's own proof counts by
        its confidence like any other, so a weak assertion never pushes out stronger derivations
        (adding evidence never lowers a noisy-or score; docs/closure.md)."""
        proofs = self.fact_proofs(key, k + 1)
        return sorted(proofs, key=lambda p: -p.score)[:k]   # stable: the asserted proof first on ties

    # -- by triple ---------------------------------------------------------------------------------
    def score(self, triple: Triple) -> float | None:
        key = self.ids.key(triple)
        return None if key is None else self.fact_score(key)

    def depth(self, triple: Triple) -> int | None:
        """Depth of the fact's best proof (0 for asserted facts)."""
        p = self.proof(triple)
        return None if p is None else p.depth

    _k = 0   # alternatives kept per fact (a result that keeps them sets it)

    def proof(self, triple: Triple) -> Proof | None:
        """The best proof, with up to ``_k`` other proofs attached when the run kept them."""
        key = self.ids.key(triple)
        if key is None:
            return None
        best = self.fact_proof(key)
        if best is None or not self._k:
            return best
        return best.with_alternatives(self.fact_proofs(key, self._k + 1)[1:])


class SearchedView(FactView):
    """A result answered by searches over closed relations (``_rels``, each with ``timed_out``) and,
    for a conjunction, its bound rows (``table``): its truncation is computed from them, never set,
    and it counts no asserted facts in a scope (it has none)."""

    table = None

    @property
    def truncated(self):
        if self.table is not None and self.table.truncated:
            return self.table.truncated
        return "time" if any(c.timed_out for c in self._rels.values()) else None

    @truncated.setter
    def truncated(self, value) -> None:   # the closure sets it; ours is computed
        pass

    @property
    def asserted_in_scope(self) -> int:
        return 0


class GraphView(FactView):
    """Asserted facts only."""

    def __init__(self, g: FactGraph, ids: Ids | None = None) -> None:
        self.g, self.ids = g, ids or Ids(g)
        self.truncated = None


class ClosureResult(FactView):
    """The outcome of :func:`thinkingdb.engine.closure.closure`: ``truncated`` (None or the bound that cut
    the run short), ``stats``, ``derived`` (triple → best proof), and per-triple ``score`` / ``depth``
    / ``proof``. Asserted facts always keep their own confidence and get a leaf proof."""

    def __init__(self, g, ids, rules, store, hist, alts, alternatives, truncated, stats) -> None:
        self.g, self.ids, self.rules = g, ids, rules
        self._store, self._hist, self._alts, self._k = store, hist, alts, alternatives
        self.truncated = truncated
        self.stats = stats
        self._names = [r.name for r in rules]
        self._weights = [r.weight for r in rules]

    # -- by key ----------------------------------------------------------------------------------
    @property
    def derived(self) -> Mapping[Triple, Proof]:
        return _DerivedView(self)

    def derived_keys(self) -> Iterator[tuple[int, int, int]]:
        return iter(self._store.rec)

    @property
    def derived_count(self) -> int:
        return len(self._store.rec)

    def is_derived(self, key) -> bool:
        return key in self._store.rec

    # -- by id (queries) -------------------------------------------------------------------------
    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        d = self._store.d_out.get(r)
        if d:
            rec = self._store.rec
            for o in d.get(s, ()):
                res[o] = rec[(s, r, o)][0]
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        d = self._store.d_in.get(r)
        if d:
            rec = self._store.rec
            for s in d.get(o, ()):
                res[s] = rec[(s, r, o)][0]
        return res

    def subjects(self, r: int) -> list[int]:
        return sorted(set(super().subjects(r)) | set(self._store.d_out.get(r, {})))

    def objects(self, r: int) -> list[int]:
        return sorted(set(super().objects(r)) | set(self._store.d_in.get(r, {})))

    def fact_score(self, key) -> float | None:
        c = self.asserted(key)
        if c is not None:
            return c
        v = self._store.rec.get(key)
        return None if v is None else v[0]

    def fact_proof(self, key) -> Proof | None:
        from .proofs import Proof
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        v = self._store.rec.get(key)
        return None if v is None else self._build(key, v[1])

    def fact_proofs(self, key, k: int) -> list[Proof]:
        best = self.fact_proof(key)
        if best is None:
            return []
        out = [best]
        if self._alts and key in self._alts:
            cur = self._store.rec.get(key)
            mine = [(-sc, d, self._canon(ri, pr), ri, pr) for (ri, pr), (sc, d) in self._alts[key].items()
                     if cur is None or (ri, pr) != (cur[2], cur[3])]
            mine.sort()
            for _, d, _, ri, pr in mine[:max(k - 1, 0)]:
                premises = tuple(self._build(p, d - 1) for p in pr) + self._absent(ri, pr)
                out.append(self._derived(self.ids.triple(key), ri, premises))
        return out[:k]

    def _absent(self, rule_idx: int, prems: tuple) -> tuple[Proof, ...]:
        """The 'not' premises of the rule as they stood for this match (the facts found absent), then
        its comparisons and assignments with their values (``check`` leaves)."""
        from .proofs import Proof
        rule = self.rules[rule_idx]
        if not rule.negated and not rule.constraints:
            return ()
        env: dict = {}
        for atom, key in zip(rule.premises, prems):
            t = self.ids.triple(key)
            for term, val in ((atom.subject, t.subject), (atom.object, t.object)):
                if isinstance(term, Var):
                    env[term] = val
        steps = run_constraints(rule.constraints, env) or [] if rule.constraints else []
        return tuple(Proof.absent(Triple(ground(a.subject, env), a.relation, ground(a.object, env)))
                     for a in rule.negated) + tuple(Proof.check(text) for text in steps)

    def _derived(self, triple: Triple, rule_idx: int, premises: tuple) -> Proof:
        """A rule node; a statement's role edge 2.. scores 1 (:func:`~thinkingdb.model.carries_score`)."""
        from .proofs import Proof
        p = Proof.derived(triple, self._names[rule_idx], self._weights[rule_idx], premises)
        if carries_score(self.rules[rule_idx].head):
            return p
        return Proof(p.conclusion, 1.0, p.depth, p.kind, p.rule, p.weight, p.premises)

    def _canon(self, rule_idx, prems):
        return self._names[rule_idx], tuple(self.ids.key_rank(p) for p in prems)

    def step(self, key) -> tuple[Rule, list[tuple[int, int, int]]] | None:
        """The best derivation of a derived fact one step deep: its rule and its premises' keys (None
        when ``key`` is not derived); no proof tree is built (``materialize`` writes this)."""
        v = self._store.rec.get(key)
        return None if v is None else (self.rules[v[2]], list(v[3]))

    def _version(self, key, limit: int):
        v = self._store.rec[key]
        if v[1] <= limit:
            return v
        for old in reversed(self._hist.get(key, ())):
            if old[1] <= limit:
                return old
        raise AssertionError(f"no version of {key} at depth <= {limit}")

    def _build(self, root_key, limit: int) -> Proof:
        """The proof tree of ``root_key`` as it stood at depth ``limit`` (iterative: deep proofs
        must not hit the recursion limit). Each version's premises are the versions one round
        earlier, so scores recompute exactly and the recursion strictly descends in depth."""
        from .proofs import Proof
        memo: dict[tuple, Proof] = {}

        def ident(key, lim):
            if self.asserted(key) is not None:
                return key, 0
            return key, self._version(key, lim)[1]

        root = ident(root_key, limit)
        stack = [root]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            key, d = node
            c = self.asserted(key)
            if c is not None:
                memo[node] = Proof.asserted(self.ids.triple(key), c)
                stack.pop()
                continue
            v = self._version(key, d)
            children = [ident(p, d - 1) for p in v[3]]
            missing = [ch for ch in children if ch not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[node] = self._derived(self.ids.triple(key), v[2],
                                       tuple(memo[ch] for ch in children) + self._absent(v[2], v[3]))
            stack.pop()
        return memo[root]


class _DerivedView(Mapping):
    """``Triple -> Proof`` over the derived facts; iterates in canonical order; proofs built lazily."""

    def __init__(self, res) -> None:
        self._res = res
        self._order: list | None = None

    def __len__(self) -> int:
        return self._res.derived_count

    def __iter__(self) -> Iterator[Triple]:
        if self._order is None:
            self._order = sorted(self._res.derived_keys(), key=self._res.ids.key_rank)
        return (self._res.ids.triple(k) for k in self._order)

    def __contains__(self, triple: object) -> bool:
        if not isinstance(triple, Triple):
            return False
        key = self._res.ids.key(triple)
        return key is not None and self._res.is_derived(key)

    def __getitem__(self, triple: Triple) -> Proof:
        if triple not in self:
            raise KeyError(triple)
        return self._res.fact_proof(self._res.ids.key(triple))
