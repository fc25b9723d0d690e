"""Query evaluation over CSR segments: accumulate impacts over postings, select the top k.

1. For each distinct query term (in term-text order), the postings of every
   segment are added into a dense float64 accumulator with ``np.add.at``; only the
   touched entries are read back and reset, so a query costs O(postings of its
   terms), never O(documents). Impacts are exact float64 ``idf × Σ_f w_f sat_f``
   and every document gets its terms added in the same order, so the scores do
   not depend on how the index was built.
2. A document appears at most once per term, so among the ``k × m`` best of the
   ``L`` touched entries (``m`` terms) there are at least ``k`` distinct
   documents; ``np.partition`` finds that threshold in O(L), and only the entries
   above it are de-duplicated and sorted (score descending, then doc id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .segment import Segment

__all__ = ["QueryTerm", "RoleBoost", "posting_lists", "gather", "candidates"]

Slots = npt.NDArray[np.int32]
Scores = npt.NDArray[np.float64]
PostingLists = list[tuple[Slots, Scores]]


@dataclass(frozen=True, slots=True)
class QueryTerm:
    """A distinct query term: its id and its query frequency."""

    term: int
    qf: int


class RoleBoost:
    """Multiply the scores of documents whose role code is ``code`` by ``factor``.

    >>> RoleBoost(np.array([0, 1, 0]), 1, 2.0)(np.array([0, 1]), np.array([1.0, 1.0])).tolist()
    [1.0, 2.0]
    """

    __slots__ = ("role", "code", "factor")

    def __init__(self, role: npt.NDArray[np.int32] | None = None, code: int = -1, factor: float = 1.0) -> None:
        self.role, self.code, self.factor = role, code, factor

    def __call__(self, slots: Slots, scores: Scores) -> Scores:
        if self.role is None:
            return scores
        return np.where(self.role[slots] == self.code, scores * self.factor, scores)


def posting_lists(
    segments: Sequence[Segment], terms: Sequence[QueryTerm], mask: npt.NDArray[np.bool_] | None
) -> list[PostingLists]:
    """Per term (in query-term order): the (allowed) slots and impacts × qf in every segment."""
    out: list[PostingLists] = []
    for qt in terms:
        per: PostingLists = []
        out.append(per)
        for seg in segments:
            a, b = seg.bounds(qt.term)
            if a == b:
                continue
            slots = seg.slots[a:b]
            imp = seg.impacts[a:b]
            if mask is not None:
                keep = mask[slots]
                slots, imp = slots[keep], imp[keep]
            if qt.qf != 1:
                imp = imp * float(qt.qf)
            if len(slots):
                per.append((slots, imp))
    return out


def gather(lists: PostingLists, acc: Scores) -> tuple[Slots, Scores]:
    """Touched slots (with repeats, one per matching term) and their full scores.

    >>> acc = np.zeros(4)
    >>> gather([(np.array([1, 3], np.int32), np.array([1.0, 2.0])), (np.array([3], np.int32), np.array([0.5]))], acc)
    (array([1, 3, 3], dtype=int32), array([1. , 2.5, 2.5]))
    >>> acc.tolist()
    [0.0, 0.0, 0.0, 0.0]
    """
    if not lists:
        return np.zeros(0, np.int32), np.zeros(0, np.float64)
    if len(lists) == 1:
        return lists[0]
    for slots, imp in lists:
        np.add.at(acc, slots, imp)  # unbuffered add: much faster than acc[slots] += imp in numpy 2
    touched = np.concatenate([slots for slots, _ in lists])
    scores = acc.take(touched)
    if len(touched) * 8 > len(acc):
        acc.fill(0.0)
    else:
        acc[touched] = 0.0
    return touched, scores


def candidates(touched: Slots, scores: Scores, k: int, repeats: int) -> tuple[Slots, Scores]:
    """Distinct slots whose score is at least the k-th best distinct score, with their scores.

    ``repeats`` is the most times one slot can occur in ``touched``. Documents
    tied with the k-th score are all kept, so the caller can break ties by id.

    >>> candidates(np.array([3, 1, 3, 2]), np.array([2.0, 1.0, 2.0, 0.5]), 2, 2)
    (array([3, 1]), array([2., 1.]))
    """
    n = len(touched)
    width = k * max(repeats, 1)
    if width < n:
        threshold = np.partition(scores, n - width)[n - width]
        keep = scores >= threshold
        touched, scores = touched[keep], scores[keep]
    if repeats > 1 and len(touched) > 1:
        order = np.argsort(touched, kind="stable")
        touched, scores = touched[order], scores[order]
        first = np.concatenate(([True], touched[1:] != touched[:-1]))
        touched, scores = touched[first], scores[first]
    if len(touched) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        touched, scores = touched[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    return touched[order], scores[order]

