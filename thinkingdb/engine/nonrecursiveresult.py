"""The result of the one-round join of :mod:`thinkingdb.engine.nonrecursive`: per head relation the
derived facts as numpy arrays (:class:`Heads`: sorted key, join symbol, rule, score; 22 bytes a
fact), read through :class:`OneRoundResult`, a :class:`~thinkingdb.engine.results.ClosureResult`
look-alike whose lookups search the arrays and whose proofs are built on request (every derived
fact is one round deep: its premises are asserted facts found through the join symbol).
"""

from __future__ import annotations

import numpy as np

from .proofs import Proof
from .results import FactView

__all__ = ["Heads", "OneRoundResult"]


class Heads:
    """Derived facts of one head relation: sorted ``key = subject * n + object``, the join symbol,
    the rule index and the score."""

    __slots__ = ("_rev", "key", "rule", "score", "y")

    def __init__(self, key, y, rule, score) -> None:
        self.key, self.y, self.rule, self.score = key, y, rule, score
        self._rev = None

    def take(self, idx) -> Heads:
        return Heads(self.key[idx], self.y[idx], self.rule[idx], self.score[idx])

    @staticmethod
    def concat(parts, consume: bool = False) -> Heads:
        """The parts one after the other; ``consume``: each column of the parts is released once it
        is copied (the parts are unusable after), so the copy never holds two of every column."""
        cols = []
        for a in ("key", "y", "rule", "score"):
            cols.append(np.concatenate([getattr(p, a) for p in parts]))
            if consume:
                for p in parts:
                    setattr(p, a, None)
        return Heads(*cols)

    def find(self, k: int) -> int:
        i = int(np.searchsorted(self.key, k))
        return i if i < len(self.key) and int(self.key[i]) == k else -1


class _DIn:
    """What :func:`thinkingdb.engine.query._all_starts` reads as ``view._store.d_in``: derived objects per relation."""

    def __init__(self, res: OneRoundResult) -> None:
        self._res = res

    @property
    def d_in(self) -> _DIn:   # not an attribute: ``self.d_in = self`` would be a reference cycle
        return self

    def get(self, r, default=None):
        v = self._res._heads.get(r)
        return default if v is None else np.unique(v.key % self._res._n).tolist()


class OneRoundResult(FactView):
    """A :class:`~thinkingdb.engine.results.ClosureResult` look-alike over the one-round join's arrays."""

    def __init__(self, g, ids, rules, heads: dict[int, Heads], n_syms: int, truncated, firings: int) -> None:
        self.g, self.ids, self.rules = g, ids, rules
        self._heads, self._n = heads, n_syms
        self.truncated = truncated
        self.firings = firings
        self.stats = None

    @property
    def _store(self) -> _DIn:   # a fresh object each time: a stored one would make a reference cycle
        return _DIn(self)

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    @property
    def derived_count(self) -> int:
        return sum(len(v.key) for v in self._heads.values())

    def derived_keys(self):
        n = self._n
        for h, v in self._heads.items():
            for k in v.key.tolist():
                yield (k // n, h, k % n)

    def _locate(self, key):
        v = self._heads.get(key[1])
        if v is None or key[0] >= self._n or key[2] >= self._n:
            return None, -1
        return v, v.find(key[0] * self._n + key[2])

    def is_derived(self, key) -> bool:
        return self._locate(key)[1] >= 0

    def depth(self, triple):   # every derived fact is one round deep: no proof needs building
        key = self.ids.key(triple)
        if key is None:
            return None
        if self.asserted(key) is not None:
            return 0
        return 1 if self.is_derived(key) else None

    def fact_score(self, key):
        c = self.asserted(key)
        if c is not None:
            return c
        v, i = self._locate(key)
        return None if i < 0 else float(v.score[i])

    def fact_proof(self, key):
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        v, i = self._locate(key)
        if i < 0:
            return None
        rule = self.rules[int(v.rule[i])]
        y = int(v.y[i])
        binding = {rule.head.subject: key[0], rule.head.object: key[2]}
        prems = []
        for p in rule.premises:
            s = binding.get(p.subject, y)
            o = binding.get(p.object, y)
            pk = (s, self.ids.rel(p.relation), o)
            prems.append(Proof.asserted(self.ids.triple(pk), self.g._out[pk[1]][s][o]))
        return Proof.derived(self.ids.triple(key), rule.name, rule.weight, tuple(prems))

    def out(self, r: int, s: int) -> dict[int, float]:
        res = super().out(r, s)
        v = self._heads.get(r)
        if v is not None and s < self._n:
            lo, hi = np.searchsorted(v.key, [s * self._n, (s + 1) * self._n])
            for k, sc in zip((v.key[lo:hi] % self._n).tolist(), v.score[lo:hi].tolist()):
                res[k] = sc
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        res = super().inn(r, o)
        v = self._heads.get(r)
        if v is not None and o < self._n:
            if v._rev is None:
                rk = (v.key % self._n) * self._n + v.key // self._n
                order = np.argsort(rk, kind="stable")
                v._rev = (rk[order], order)
            rk, order = v._rev
            lo, hi = np.searchsorted(rk, [o * self._n, (o + 1) * self._n])
            for s, i in zip((rk[lo:hi] % self._n).tolist(), order[lo:hi].tolist()):
                res[s] = float(v.score[i])
        return res

    def subjects(self, r: int) -> list[int]:
        v = self._heads.get(r)
        extra = [] if v is None else np.unique(v.key // self._n).tolist()
        return sorted(set(super().subjects(r)) | set(extra))

    def objects(self, r: int) -> list[int]:
        v = self._heads.get(r)
        extra = [] if v is None else np.unique(v.key % self._n).tolist()
        return sorted(set(super().objects(r)) | set(extra))
