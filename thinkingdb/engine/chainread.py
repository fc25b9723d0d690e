"""The read interface of the chain engine's result (:class:`~thinkingdb.engine.chainresult.ChainResult`,
which inherits it): its ``T`` facts' scores and proofs — rebuilt from the kept versions, from the far
end of each chain —, the alternatives' proofs and scores, and the indexes queries read, over the
inner closure of the step relation for every other relation. The searches that fill ``rec`` and
``alts`` are in :mod:`thinkingdb.engine.chainresult`; why they are the full closure's, in
:mod:`thinkingdb.engine.chain`."""

from __future__ import annotations

from .results import FactView

__all__ = ["ChainReads"]


class ChainReads(FactView):
    """What queries read from a chain result: ``rec`` (``T`` key → versions ``[(score, depth, next
    node)]``), ``alts`` and ``inner`` (the step facts' closure) are the result's."""

    @property
    def tables(self) -> int:
        """The inner run's demanded patterns."""
        return getattr(self.inner.stats, "tables", 0) if self.inner.stats else 0

    @property
    def nodes(self) -> int:
        n = getattr(self.inner.stats, "nodes", 0) if self.inner.stats else 0
        return max(n, len(self.touched))

    @property
    def derived_count(self) -> int:
        return len(self.rec) + (self.inner.derived_count if hasattr(self.inner, "derived_count") else 0)

    def derived_keys(self):
        yield from sorted(self.rec, key=self.ids.key_rank)
        if hasattr(self.inner, "derived_keys"):
            yield from self.inner.derived_keys()

    @property
    def derived(self):
        from .results import _DerivedView
        return _DerivedView(self)

    def is_derived(self, key) -> bool:
        if key[1] == self.T:
            return key in self.rec
        return hasattr(self.inner, "is_derived") and self.inner.is_derived(key)

    def fact_score(self, key):
        if key[1] != self.T:
            return self.inner.fact_score(key)
        c = self.asserted(key)
        if c is not None:
            return c
        v = self.rec.get(key)
        return None if v is None else v[-1][0]

    def fact_proof(self, key):
        if key[1] != self.T:
            return self.inner.fact_proof(key)
        from .proofs import Proof
        c = self.asserted(key)
        if c is not None:
            return Proof.asserted(self.ids.triple(key), c)
        if key not in self.rec:
            return None
        return self._chain(key, None, None)

    def _chain(self, key, limit, replay):
        """The proof of ``T`` fact ``key`` as it stood after round ``limit`` (None: its last
        version), its versions and those of the facts its proof goes through read from ``replay``
        (``{node: versions}`` of the goal's replay; None: ``rec``); built from the far end (chains
        can outgrow the recursion limit)."""
        from .proofs import Proof
        chain, k = [], key
        right = self.shape.right
        goal = key[2] if right else key[0]
        while self.asserted(k) is None:
            v = _at(self.rec[k] if replay is None else replay[k[0] if right else k[2]], limit)
            chain.append((k, v))
            k, limit = self.tkey(v[2], goal), v[1] - 1
        proof = Proof.asserted(self.ids.triple(k), self.asserted(k))
        for k, v in reversed(chain):
            n = k[0] if self.shape.right else k[2]
            proof = self._derived(k, n, v[2], v[1], proof)
        return proof

    def _derived(self, key, n, c, depth, t_proof):
        """The rule node of ``key`` (node ``n``) through the step ``n → c`` at ``depth``."""
        from .proofs import Proof
        e = self.step_proof(self.ekey(n, c), depth - 1)
        prem = (e, t_proof) if self.shape.e_at == 0 else (t_proof, e)
        return Proof.derived(self.ids.triple(key), self.name, self.w, prem)

    def fact_proofs(self, key, k: int):
        """Up to ``k`` distinct proofs, best first: the best, then the other derivations kept."""
        if key[1] != self.T:
            return self.inner.fact_proofs(key, k) if hasattr(self.inner, "fact_proofs") else super().fact_proofs(key, k)
        best = self.fact_proof(key)
        if best is None:
            return []
        out = [best]
        n = key[0] if self.shape.right else key[2]
        goal = key[2] if self.shape.right else key[0]
        for _, depth, c, replay in self.alts.get(key, ())[:max(k - 1, 0)]:
            out.append(self._derived(key, n, c, depth, self._chain(self.tkey(c, goal), depth - 1, replay)))
        return out[:k]

    def evidence_scores(self, key, k: int) -> list[float]:
        """The scores of :meth:`evidence`'s proofs, in its order, read from the kept versions and
        alternatives without building a proof (noisy-or ranks every answer; few are printed)."""
        if key[1] != self.T:
            return [p.score for p in self.evidence(key, k)]
        best = self.fact_score(key)
        if best is None:
            return []
        if k == 1:
            return [best]
        return sorted([best] + [a[0] for a in self.alts.get(key, ())[:k]], reverse=True)[:k]

    def out(self, r: int, s: int) -> dict[int, float]:
        if r != self.T:
            return self.inner.out(r, s)
        res = super().out(r, s)
        for k, v in self.rec.items():   # (a bound end's facts: few lookups, no index kept)
            if k[0] == s and k[2] not in res:
                res[k[2]] = v[-1][0]
        return res

    def inn(self, r: int, o: int) -> dict[int, float]:
        if r != self.T:
            return self.inner.inn(r, o)
        res = super().inn(r, o)
        for k, v in self.rec.items():
            if k[2] == o and k[0] not in res:
                res[k[0]] = v[-1][0]
        return res

    def subjects(self, r: int) -> list[int]:
        if r != self.T:
            return self.inner.subjects(r)
        return sorted(set(super().subjects(r)) | {k[0] for k in self.rec})

    def objects(self, r: int) -> list[int]:
        if r != self.T:
            return self.inner.objects(r)
        return sorted(set(super().objects(r)) | {k[2] for k in self.rec})


def _at(versions: list, limit: int | None) -> tuple:
    """The last version of depth at most ``limit`` (None: the last one)."""
    if limit is None:
        return versions[-1]
    return next(v for v in reversed(versions) if v[1] <= limit)
