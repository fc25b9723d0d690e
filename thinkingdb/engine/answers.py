"""One answer of a query, how its proof is built on first read, and the join order of a question's
patterns (shared by :mod:`thinkingdb.engine.query`, :mod:`thinkingdb.engine.stream`,
:mod:`thinkingdb.engine.bulk` and :mod:`thinkingdb.engine.conj`).

>>> from thinkingdb.model import PathRel, QueryPattern, Var
>>> pattern_order((QueryPattern(Var("x"), PathRel("r"), Var("y")), QueryPattern("a", PathRel("r"), Var("x"))))
[1, 0]
"""

from __future__ import annotations

from ..model import Path, PathRel, Var
from ..values import Value
from .paths import path_proof

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read: a plain question does not load them
    from typing import Callable
    from .proofs import Proof

__all__ = ["Answer", "pattern_order"]


class Answer(Value):
    """One answer: ``bindings`` (variable name → symbol key), ``score``, and ``proof`` — a
    :class:`Proof`, or with ``aggregate="noisy-or"`` a tuple of the proofs combined. The proof is
    built when first read. ``labels``: variable name → display label. Frozen; equal when bindings and
    score are (:class:`~thinkingdb.values.Value`)."""

    _fields = ("bindings", "score", "_make", "labels")
    _compare = ("bindings", "score")
    _hidden = ("_make",)

    def __init__(self, bindings: dict[str, str], score: float, _make: Callable[[], Proof | tuple[Proof, ...]],
                 labels: dict[str, str] | None = None) -> None:
        object.__setattr__(self, "bindings", bindings)
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "_make", _make)
        object.__setattr__(self, "labels", {} if labels is None else labels)

    @property
    def proof(self) -> Proof | tuple[Proof, ...]:
        cached = self.__dict__.get("_proof")
        if cached is None:
            cached = self._make()
            object.__setattr__(self, "_proof", cached)
        return cached

    def to_json(self) -> dict:
        p = self.proof
        out = {"bindings": dict(self.bindings), "score": self.score,
               "proof": [x.to_json() for x in p] if isinstance(p, tuple) else p.to_json()}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


class _Proofs:
    """The proofs of one pattern match, built when called (a list: with ``k > 1`` the ``k``
    strongest distinct ones, for noisy-or); :meth:`scores` gives their scores without building them
    when the view can (``evidence_scores``: the chain engine), else from the proofs."""

    __slots__ = ("view", "path", "s", "o", "score", "steps", "k")

    def __init__(self, view, path: Path, s: int, o: int, score: float, steps, k: int) -> None:
        self.view, self.path, self.s, self.o, self.score, self.steps, self.k = view, path, s, o, score, steps, k

    def __call__(self) -> list[Proof]:
        keys = self.steps()
        if isinstance(self.path, PathRel) and len(keys) == 1:
            view = self.view
            return view.evidence(keys[0], self.k) if self.k > 1 else view.fact_proofs(keys[0], 1)
        return [path_proof(self.view, self.path, self.s, self.o, self.score, keys)]

    def scores(self) -> list[float]:
        """The scores of the proofs :meth:`__call__` builds, in the same order."""
        if not isinstance(self.path, PathRel):
            return [self.score]   # (one path proof, scored by the walk)
        fast = getattr(self.view, "evidence_scores", None)
        if fast is None:
            return [p.score for p in self()]
        keys = self.steps()
        return fast(keys[0], self.k) if len(keys) == 1 else [p.score for p in self()]


def _proofs_builder(view, path: Path, s: int, o: int, score: float, steps, k: int) -> _Proofs:
    return _Proofs(view, path, s, o, score, steps, k)


def _conjoin(proofs: list[Proof], score: float) -> Proof:
    if len(proofs) == 1:
        return proofs[0]
    from .proofs import Proof
    return Proof(None, score, max(p.depth for p in proofs), "query", None, 1.0, tuple(proofs))


def pattern_order(patterns: tuple) -> list[int]:
    """Patterns with a constant first, then those sharing a bound variable, else in written order."""
    bound: set[str] = set()
    left = list(range(len(patterns)))
    order = []
    while left:
        def cost(i):
            p = patterns[i]
            terms = (p.subject, p.object)
            known = sum(1 for t in terms if not isinstance(t, Var) or t.name in bound)
            return -known, i
        best = min(left, key=cost)
        left.remove(best)
        order.append(best)
        bound.update(v.name for v in patterns[best].variables())
    return order
