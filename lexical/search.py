"""Query evaluation over CSR segments: accumulate float32 impacts, pick candidates, rescore exactly.

1. For each query term, the postings of every segment are added into a dense
   float32 accumulator (``acc[slots] += impacts``); only touched entries are read
   back and reset, so a query costs O(postings of its terms), never O(documents).
2. A document appears at most once per term, so among the ``k × m`` best of the
   ``L`` touched entries (``m`` terms) there are at least ``k`` distinct documents;
   ``np.partition`` finds that threshold in O(L). Every document within a small
   relative margin of it is a candidate (the margin covers float32 rounding).
3. Candidates are rescored in float64 with :func:`lexical.scoring.field_sum`
   (postings found by binary search), and the best ``k`` are ordered by score
   descending, then doc id ascending. The returned scores are therefore exact
   and independent of how the index was built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .segment import Segment

__all__ = ["QueryTerm", "gather", "candidates", "rescore"]

#: Relative slack on the candidate threshold; float32 impacts summed over a few
#: terms are off by far less (about 1e-7 per term).
MARGIN = 1e-4


@dataclass(frozen=True, slots=True)
class QueryTerm:
    """A distinct query term: id, query frequency and ``qf × idf`` weight."""

    term: int
    qf: int
    weight: float


def gather(
    segments: Sequence[Segment],
    terms: Sequence[QueryTerm],
    acc: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_] | None,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """Touched slots (with repeats, one per matching term) and their approximate scores."""
    parts = []
    for qt in terms:
        for seg in segments:
            a, b = seg.bounds(qt.term)
            if a == b:
                continue
            slots = seg.slots[a:b]
            imp = seg.impacts[a:b]
            if mask is not None:
                keep = mask[slots]
                slots = slots[keep]
                imp = imp[keep]
            if qt.qf != 1:
                imp = imp * np.float32(qt.qf)
            parts.append((slots, imp))
    if not parts:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    if len(parts) == 1:
        return parts[0][0], parts[0][1]
    for slots, imp in parts:
        np.add.at(acc, slots, imp)  # unbuffered: much faster than acc[slots] += imp in numpy 2
    touched = np.concatenate([slots for slots, _ in parts])
    approx = acc.take(touched)
    if len(touched) * 8 > len(acc):
        acc.fill(0.0)
    else:
        acc[touched] = 0.0
    return touched, approx


def candidates(
    touched: npt.NDArray[np.int32], approx: npt.NDArray[np.float32], k: int, n_terms: int
) -> npt.NDArray[np.int32]:
    """Distinct slots that may belong to the top ``k`` (sorted ascending).

    >>> candidates(np.array([3, 1, 3, 2]), np.array([2.0, 1.0, 2.0, 0.5], np.float32), 1, 2).tolist()
    [3]
    """
    n = len(touched)
    keep = approx > 0
    width = k * max(n_terms, 1)
    if width < n:
        threshold = np.partition(approx, n - width)[n - width]
        keep &= approx >= threshold * (1.0 - MARGIN)
    slots, scores = touched[keep], approx[keep]
    if n_terms > 1 and len(slots) > 1:
        order = np.argsort(slots, kind="stable")
        slots, scores = slots[order], scores[order]
        first = np.concatenate(([True], slots[1:] != slots[:-1]))
        slots, scores = slots[first], scores[first]
    if len(slots) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        slots = slots[scores >= kth * (1.0 - MARGIN)]
    return np.sort(slots)


def rescore(
    segments: Sequence[Segment],
    terms: Sequence[QueryTerm],
    cand: npt.NDArray[np.int32],
    base: Callable[[Segment, npt.NDArray[np.intp], npt.NDArray[np.int32]], npt.NDArray[np.float64]],
) -> npt.NDArray[np.float64]:
    """Exact float64 ``Σ_t qf·idf(t) × base(t, d)`` for the candidate slots, terms in the given order.

    ``base(segment, posting_rows, slots)`` returns ``Σ_f w_f sat_f`` of those postings;
    it is called once per segment, and the per-term products are summed in term order.
    """
    contrib = np.zeros((len(terms), len(cand)), dtype=np.float64)
    for seg in segments:
        rows, where, which = [], [], []
        for i, qt in enumerate(terms):
            a, b = seg.bounds(qt.term)
            if a == b:
                continue
            slots = seg.slots[a:b]
            pos = np.searchsorted(slots, cand)
            pos[pos == len(slots)] = 0
            hit = np.flatnonzero(slots[pos] == cand)
            if len(hit):
                rows.append(a + pos[hit])
                where.append(hit)
                which.append(np.full(len(hit), i))
        if rows:
            r, w, t = np.concatenate(rows), np.concatenate(where), np.concatenate(which)
            weights = np.array([qt.weight for qt in terms])[t]
            contrib[t, w] = weights * base(seg, r, cand[w])
    exact = contrib[0].copy()
    for row in contrib[1:]:
        exact += row
    return exact
