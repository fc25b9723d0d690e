"""Goal-directed admission in :mod:`thinkingdb.engine.columnar`: which heads a demand lets a round keep.

A :class:`thinkingdb.engine.demand.Demand` gives depth budgets per demanded pattern (by subject, by
object, by both ends, or the whole relation); :class:`Admission` holds them as sorted arrays per
relation, so a round's head keys are checked with one ``searchsorted`` per pattern kind.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Admission"]


class Admission:
    """Goal-directed runs: a demand's depth budgets (:class:`thinkingdb.engine.demand.Demand`) per
    head key, as sorted arrays per relation. A head found in round ``d`` is kept only when its budget
    is at least ``d``, which is the reference engine's admission."""

    def __init__(self, demand, n: int) -> None:
        self.d, self.n = demand, n
        self.cache: dict[int, tuple] = {}

    @staticmethod
    def _sorted(pairs) -> tuple[np.ndarray, np.ndarray]:
        pairs = sorted(pairs)
        return (np.array([a for a, _ in pairs], dtype=np.int64), np.array([b for _, b in pairs], dtype=np.int64))

    def _tables(self, r: int):
        t = self.cache.get(r)
        if t is None:
            d = self.d
            t = self.cache[r] = (d.ff.get(r, -1), self._sorted(d.by_s.get(r, {}).items()),
                                 self._sorted(d.by_o.get(r, {}).items()),
                                 self._sorted((s * self.n + o, k) for (s, rr, o), k in d.by_so.items() if rr == r))
        return t

    def subject_budget(self, r: int, subjects: np.ndarray) -> np.ndarray | None:
        """The budget of each head with these subjects when the demand of ``r`` is by subject only
        (None: an object-bound pattern is demanded, the subject alone does not decide)."""
        ff, by_s, by_o, by_so = self._tables(r)
        if len(by_o[0]) or len(by_so[0]):
            return None
        out = np.full(len(subjects), ff, dtype=np.int64)
        ks, bs = by_s
        if len(ks):
            pos = np.minimum(np.searchsorted(ks, subjects), len(ks) - 1)
            hit = ks[pos] == subjects
            out[hit] = np.maximum(out[hit], bs[pos[hit]])
        return out

    def budget(self, r: int, keys: np.ndarray) -> np.ndarray:
        """The largest budget of a demanded pattern matching each head key (-1: not demanded)."""
        ff, by_s, by_o, by_so = self._tables(r)
        out = np.full(len(keys), ff, dtype=np.int64)
        for (ks, bs), probe in ((by_s, keys // self.n), (by_o, keys % self.n), (by_so, keys)):
            if len(ks):
                pos = np.minimum(np.searchsorted(ks, probe), len(ks) - 1)
                hit = ks[pos] == probe
                out[hit] = np.maximum(out[hit], bs[pos[hit]])
        return out
