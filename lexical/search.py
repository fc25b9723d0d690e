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
   above it are de-duplicated (the caller sorts by score descending, then doc id).
   A query is a list of *clauses*: a term, or a compound word (its whole form
   and its parts, :class:`Compound`), whose postings :func:`clause_lists` merges
   first into one list (a document once, with the better of its two readings).
3. MaxScore (:func:`pruned_gather`, queries with enough postings): a cheap lower
   bound ``θ`` of the k-th best score (the k-th largest impact of a short term)
   and each term's largest impact show which terms cannot lift a document into
   the top k on their own; only the documents of the other terms are scored,
   in the same order, so the results are exactly those of step 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .segment import Segment

__all__ = [
    "QueryTerm",
    "Compound",
    "Clause",
    "RoleBoost",
    "clause_lists",
    "clause_bounds",
    "posting_lists",
    "upper_bounds",
    "kth_largest",
    "gather",
    "pruned_gather",
    "candidates",
]

Slots = npt.NDArray[np.int32]
Scores = npt.NDArray[np.float64]
PostingLists = list[tuple[Slots, Scores]]


@dataclass(frozen=True, slots=True)
class QueryTerm:
    """A distinct query term: its id and its query frequency."""

    term: int
    qf: int


@dataclass(frozen=True, slots=True)
class Compound:
    """A distinct compound query word: its whole form (``None`` if not indexed), its parts, its query frequency.

    It contributes ``qf × max(impact(whole), Σ impact(part))`` to a document:
    the better of the two readings of the word, never both (see ``lexical.scoring``).
    """

    whole: int | None
    parts: tuple[int, ...]
    qf: int


Clause = QueryTerm | Compound


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


def clause_lists(
    segments: Sequence[Segment],
    clauses: Sequence[Clause],
    mask: npt.NDArray[np.bool_] | None,
    acc: Scores,
    mark: npt.NDArray[np.bool_],
) -> list[PostingLists]:
    """Per clause: its (allowed) slots and contributions; a compound's as one list, each slot once.

    ``acc`` and ``mark`` are all-zero/all-False scratch arrays over the slots, left so.
    Part impacts are summed in the order of ``parts``, so the result does not
    depend on how the postings are split between segments.
    """
    terms = [c for c in clauses if isinstance(c, QueryTerm)]
    if len(terms) == len(clauses):
        return posting_lists(segments, terms, mask)  # type: ignore[arg-type]
    of_terms = iter(posting_lists(segments, terms, mask))  # type: ignore[arg-type]
    out: list[PostingLists] = []
    for clause in clauses:
        if isinstance(clause, QueryTerm):
            out.append(next(of_terms))
            continue
        singles = [QueryTerm(t, 1) for t in clause.parts]
        parts = [pair for lists in posting_lists(segments, singles, mask) for pair in lists]
        whole: PostingLists = []
        if clause.whole is not None:
            whole = posting_lists(segments, [QueryTerm(clause.whole, 1)], mask)[0]
        if not parts and not whole:
            out.append([])
            continue
        touched, sums = gather(parts, acc, mark) if parts else (np.zeros(0, np.int32), np.zeros(0, np.float64))
        if whole:
            w_slots = np.concatenate([sl for sl, _ in whole]).astype(np.intp)
            w_imp = np.concatenate([im for _, im in whole])
            if len(parts) == 1:  # gather returned the list itself: each slot once already
                touched = touched.astype(np.intp)
            acc[touched] = sums
            np.maximum.at(acc, w_slots, w_imp)
            mark[touched] = True
            new = w_slots.take((~mark.take(w_slots)).nonzero()[0])
            mark[touched] = False
            touched = np.concatenate([touched, new]) if len(new) else touched
            sums = acc.take(touched)
            acc[touched] = 0.0
        if clause.qf != 1:
            sums = sums * float(clause.qf)
        out.append([(touched.astype(np.int32), sums)])
    return out


def clause_bounds(segments: Sequence[Segment], clauses: Sequence[Clause]) -> list[float]:
    """Per clause: an upper bound of its contribution (:func:`upper_bounds`; a compound's the max of its readings')."""
    if all(isinstance(c, QueryTerm) for c in clauses):
        return upper_bounds(segments, clauses)  # type: ignore[arg-type]
    out = []
    for clause in clauses:
        if isinstance(clause, QueryTerm):
            out.extend(upper_bounds(segments, [clause]))
            continue
        parts = sum(upper_bounds(segments, [QueryTerm(t, 1) for t in clause.parts]))
        whole = upper_bounds(segments, [QueryTerm(clause.whole, 1)])[0] if clause.whole is not None else 0.0
        out.append(max(parts, whole) * clause.qf)
    return out


def upper_bounds(segments: Sequence[Segment], terms: Sequence[QueryTerm]) -> list[float]:
    """Per term: its largest impact × qf over all segments (an upper bound of its contribution)."""
    out = []
    for qt in terms:
        top = 0.0
        for seg in segments:
            if qt.term < seg.n_terms:
                top = max(top, float(seg.maxima[qt.term]))
        out.append(top * qt.qf)
    return out


def _kth(values: Scores, i: int) -> float:
    """The ``i``-th smallest of ``values`` (0-based), in O(n); ``values`` is not modified."""
    part = values.copy()
    part.partition(i)
    return part[i]


def kth_largest(lists: PostingLists, k: int) -> float:
    """The k-th largest impact of one term's lists (distinct documents), 0 if it has fewer than k."""
    imp = lists[0][1] if len(lists) == 1 else np.concatenate([i for _, i in lists])
    n = len(imp)
    if n < k:
        return 0.0
    return float(_kth(imp, n - k))


# Relative slack on the pruning test, far above the rounding difference between
# summing the same impacts in two different orders.
_SLACK = 1e-9


def pruned_gather(
    per_term: list[PostingLists],
    bounds: Sequence[float],
    k: int,
    acc: Scores,
    mark: npt.NDArray[np.bool_],
    low: float = 1.0,
    high: float = 1.0,
    kth_of: Callable[[int], float] | None = None,
) -> tuple[Slots, Scores, int, float] | None:
    """Like :func:`gather`, but skipping the documents that cannot reach the top ``k`` (MaxScore).

    ``bounds`` are the terms' :func:`upper_bounds`; a document's score is multiplied
    by a factor in ``[low, high]`` after summing (the role boost). Returns the
    touched slots (each once), their full scores, 1 (the most repeats of a
    slot, as for :func:`gather`) and ``θ`` (a lower bound of the k-th best final score, a ``floor`` for
    :func:`candidates`), or ``None`` when nothing can be skipped (use :func:`gather`).

    1. A lower bound ``θ`` of the k-th best score: a term's postings are distinct
       documents, so its k-th largest impact (× ``low``) is one; the two shortest
       terms are tried. ``kth_of(i)``, if given, returns such a bound for the
       ``i``-th term (e.g. cached); by default it is computed from ``per_term``.
    2. Terms by increasing bound: the longest prefix whose bounds sum (× ``high``)
       stays below ``θ`` is *non-essential*: a document matching only those terms
       scores below ``θ``, so it is neither in the top k nor tied with it.
    3. Candidates are the documents of the essential terms. Every term, in query
       order, is added into ``acc`` at the candidates only (non-essential terms are
       probed through ``mark``), so each candidate gets exactly the sum
       :func:`gather` computes, in the same order: scores are bit-identical.
    """
    live = [i for i, lists in enumerate(per_term) if lists]
    if len(live) < 2:
        return None
    sizes = {i: sum(len(s) for s, _ in per_term[i]) for i in live}
    shortest = sorted(live, key=sizes.__getitem__)[:2]
    if kth_of is None:
        theta = max(kth_largest(per_term[i], k) for i in shortest) * low
    else:
        theta = max(kth_of(i) for i in shortest) * low
    if theta <= 0.0:
        return None
    essential = set(live)
    total = 0.0
    for i in sorted(live, key=lambda i: bounds[i]):
        total += bounds[i]
        if total * high * (1.0 + _SLACK) >= theta:
            break
        essential.discard(i)
    if len(essential) == len(live):
        return None
    # intp indices: numpy's fancy indexing and ufunc.at are much faster with them than with int32
    wide = {}
    parts = []
    for i in essential:
        for j, (slots, _) in enumerate(per_term[i]):
            slots = wide[i, j] = slots.astype(np.intp)
            # the candidates, each once: the slots of this list not marked by an earlier one
            parts.append(slots.take((~mark.take(slots)).nonzero()[0]) if parts else slots)
            mark[slots] = True
    for i in live:
        for j, (slots, imp) in enumerate(per_term[i]):
            if i in essential:
                np.add.at(acc, wide[i, j], imp)
            else:
                hit = mark.take(slots).nonzero()[0]
                if len(hit):
                    np.add.at(acc, slots.take(hit).astype(np.intp), imp.take(hit))
    touched = parts[0] if len(parts) == 1 else np.concatenate(parts)
    scores = acc.take(touched)
    acc[touched] = 0.0
    mark[touched] = False
    return touched, scores, 1, theta


def gather(
    lists: PostingLists, acc: Scores, mark: npt.NDArray[np.bool_] | None = None
) -> tuple[Slots, Scores]:
    """Touched slots (with repeats, one per matching term) and their full scores.

    With ``mark`` (an all-False scratch array as long as ``acc``, left all False)
    every touched slot is returned once.

    >>> acc = np.zeros(4)
    >>> t, s = gather([(np.array([1, 3], np.int32), np.array([1.0, 2.0])), (np.array([3], np.int32), np.array([0.5]))], acc)
    >>> t.tolist(), s.tolist()
    ([1, 3, 3], [1.0, 2.5, 2.5])
    >>> t, s = gather([(np.array([1, 3], np.int32), np.array([1.0, 2.0])), (np.array([3], np.int32), np.array([0.5]))], acc, np.zeros(4, bool))
    >>> t.tolist(), s.tolist(), acc.tolist()
    ([1, 3], [1.0, 2.5], [0.0, 0.0, 0.0, 0.0])
    """
    if not lists:
        return np.zeros(0, np.int32), np.zeros(0, np.float64)
    if len(lists) == 1:
        return lists[0]
    parts = []
    last = len(lists) - 1
    for j, (slots, imp) in enumerate(lists):
        slots = slots.astype(np.intp)  # fancy indexing and ufunc.at are much faster with intp than int32
        np.add.at(acc, slots, imp)  # unbuffered add: much faster than acc[slots] += imp in numpy 2
        if mark is None or j == 0:
            parts.append(slots)
        else:  # the slots no earlier list touched
            parts.append(slots.take((~mark.take(slots)).nonzero()[0]))
        if mark is not None and j < last:
            mark[slots] = True
    touched = np.concatenate(parts)
    scores = acc.take(touched)
    if len(touched) * 8 > len(acc):
        acc.fill(0.0)
    else:
        acc[touched] = 0.0
    if mark is not None:
        mark[touched] = False
    return touched, scores


def candidates(touched: Slots, scores: Scores, k: int, repeats: int, floor: float = 0.0) -> tuple[Slots, Scores]:
    """Distinct slots whose score is at least the k-th best distinct score, with their scores, in no order.

    ``repeats`` is the most times one slot can occur in ``touched``. Documents
    tied with the k-th score are all kept, so the caller can break ties by id.
    ``floor``, if given, must not exceed the k-th best score: entries below it are
    dropped first.

    >>> t, s = candidates(np.array([3, 1, 3, 2]), np.array([2.0, 1.0, 2.0, 0.5]), 2, 2)
    >>> sorted(zip(t.tolist(), s.tolist()))
    [(1, 1.0), (3, 2.0)]
    """
    if floor > 0.0:
        keep = (scores >= floor).nonzero()[0]
        touched, scores = touched.take(keep), scores.take(keep)
    n = len(touched)
    if repeats > 1 and n > 1:
        width = k * repeats
        if width < n:
            keep = (scores >= _kth(scores, n - width)).nonzero()[0]
            touched, scores = touched.take(keep), scores.take(keep)
        order = np.argsort(touched, kind="stable")
        touched, scores = touched.take(order), scores.take(order)
        first = np.concatenate(([True], touched[1:] != touched[:-1])).nonzero()[0]
        touched, scores = touched.take(first), scores.take(first)
        n = len(touched)
    if n > k:
        keep = (scores >= _kth(scores, n - k)).nonzero()[0]
        touched, scores = touched.take(keep), scores.take(keep)
    return touched, scores
