"""An immutable CSR segment of postings plus its cached float32 impacts.

For every term ``t`` the postings live in ``slots[indptr[t]:indptr[t+1]]`` (the
documents' slot numbers, ascending) with the per-field term frequencies in the
matching rows of ``tf`` (shape ``(postings, fields)``). ``impacts`` holds
``idf(t) × Σ_f w_f sat_f`` (float64) per posting and ``maxima`` the largest
impact of each term (the upper bound used to skip postings at search time); the
index refreshes a term's impacts lazily when the collection statistics have
changed since they were computed.

>>> seg = Segment.from_tokens(np.array([1, 0, 1]), np.array([0, 0, 1]), None, n_terms=2, n_fields=1)
>>> seg.postings(1)[0].tolist(), seg.postings(1)[1].ravel().tolist()
([0, 1], [1, 1])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Segment"]

IntArray = npt.NDArray[np.integer]


def _tf_dtype(max_tf: int) -> type:
    return np.uint16 if max_tf < 2**16 else np.uint32


class Segment:
    """CSR postings of a set of documents; built once, never mutated except for impacts."""

    __slots__ = ("indptr", "slots", "tf", "impacts", "maxima", "n_terms")

    def __init__(self, indptr: IntArray, slots: IntArray, tf: IntArray) -> None:
        self.indptr = indptr.astype(np.int64, copy=False)
        self.slots = slots.astype(np.int32, copy=False)
        self.tf = tf
        self.impacts = np.zeros(len(slots), dtype=np.float64)
        self.n_terms = len(indptr) - 1
        self.maxima = np.zeros(self.n_terms, dtype=np.float64)

    @property
    def n_postings(self) -> int:
        """Number of (term, document) postings."""
        return len(self.slots)

    def bounds(self, term: int) -> tuple[int, int]:
        """Start and end of ``term``'s postings (empty for terms newer than the segment)."""
        if term >= self.n_terms:
            return 0, 0
        return int(self.indptr[term]), int(self.indptr[term + 1])

    def set_impacts(self, term: int, impacts: npt.NDArray[np.float64]) -> None:
        """Store ``term``'s impacts (one per posting, non-empty) and their maximum."""
        a, b = self.bounds(term)
        self.impacts[a:b] = impacts
        self.maxima[term] = impacts.max()

    def refresh_maxima(self) -> None:
        """Recompute every term's maximum impact (after a bulk impacts update)."""
        self.maxima[:] = 0.0
        nonempty = np.flatnonzero(np.diff(self.indptr))
        if len(nonempty):
            self.maxima[nonempty] = np.maximum.reduceat(self.impacts, self.indptr[nonempty])

    def postings(self, term: int) -> tuple[IntArray, IntArray]:
        """The slots and tf rows of ``term``."""
        a, b = self.bounds(term)
        return self.slots[a:b], self.tf[a:b]

    def term_of_postings(self) -> IntArray:
        """The term id of every posting (``np.repeat`` of the CSR row numbers)."""
        return np.repeat(np.arange(self.n_terms, dtype=np.int32), np.diff(self.indptr))

    @classmethod
    def from_postings(
        cls, terms: IntArray, slots: IntArray, tf: IntArray, n_terms: int, presorted: bool = False
    ) -> Segment:
        """Build from unsorted (term, slot, tf row) triples, at most one per (term, slot)."""
        if not presorted and len(terms):
            key = terms.astype(np.int64) * (int(slots.max()) + 1) + slots
            order = np.argsort(key, kind="stable")
            terms, slots, tf = terms[order], slots[order], tf[order]
        counts = np.bincount(terms, minlength=n_terms) if len(terms) else np.zeros(n_terms, np.int64)
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr, slots, tf)

    @classmethod
    def from_tokens(
        cls,
        terms: IntArray,
        slots: IntArray,
        fields: IntArray | None,
        n_terms: int,
        n_fields: int,
    ) -> Segment:
        """Build from one entry per token occurrence: its term, its document slot and its field column.

        ``fields`` may be ``None`` when there is one field.
        """
        post_terms, post_slots, tf = count_postings(terms, slots, fields, n_fields)
        return cls.from_postings(post_terms, post_slots, tf, n_terms, presorted=True)

    @classmethod
    def from_chunks(cls, chunks: list[tuple[IntArray, IntArray, IntArray]], n_terms: int, n_fields: int) -> Segment:
        """Build from :func:`count_postings` outputs of consecutive slot ranges, consuming ``chunks``.

        A counting sort: each chunk's postings (sorted by term) are written
        straight to their final CSR positions, so only one chunk is ever copied.
        """
        counts = np.zeros(n_terms, dtype=np.int64)
        max_tf = 0
        for terms, _, tf in chunks:
            counts += np.bincount(terms, minlength=n_terms)
            max_tf = max(max_tf, int(tf.max()) if len(tf) else 0)
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        fill = indptr[:-1].copy()
        slots_out = np.empty(int(indptr[-1]), dtype=np.int32)
        tf_out = np.empty((int(indptr[-1]), n_fields), dtype=_tf_dtype(max_tf))
        chunks.reverse()
        while chunks:
            terms, slots, tf = chunks.pop()
            if not len(terms):
                continue
            starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
            run = np.diff(np.append(starts, len(terms)))
            dest = fill[terms] + (np.arange(len(terms)) - np.repeat(starts, run))
            slots_out[dest] = slots
            tf_out[dest] = tf
            fill[terms[starts]] += run
        return cls(indptr, slots_out, tf_out)


def count_postings(
    terms: IntArray, slots: IntArray, fields: IntArray | None, n_fields: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Postings (term, slot, tf per field) of token occurrences, sorted by term then slot.

    >>> t, s, tf = count_postings(np.array([5, 2, 5]), np.array([0, 0, 0]), None, 1)
    >>> t.tolist(), s.tolist(), tf.ravel().tolist()
    ([2, 5], [0, 0], [1, 2])
    """
    if len(terms) == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, n_fields), np.uint16)
    base = int(slots.min())
    n_slots = int(slots.max()) - base + 1
    key = terms.astype(np.int64) * n_slots + (slots - base)
    if fields is not None and n_fields > 1:
        key = key * n_fields + fields
    key.sort()
    first = np.concatenate(([True], key[1:] != key[:-1]))
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(key)))
    uniq = key[starts]
    del key, first
    if fields is not None and n_fields > 1:
        field_col = (uniq % n_fields).astype(np.intp)
        uniq //= n_fields
    else:
        field_col = None
    # uniq is sorted, so equal (term, slot) pairs are adjacent
    new_pair = np.concatenate(([True], uniq[1:] != uniq[:-1]))
    pair = uniq[new_pair]
    post_terms = (pair // n_slots).astype(np.int32)
    post_slots = (pair % n_slots + base).astype(np.int32)
    tf = np.zeros((len(pair), n_fields), dtype=_tf_dtype(int(counts.max())))
    if field_col is None:
        tf[:, 0] = counts
    else:
        row = np.cumsum(new_pair) - 1
        tf[row, field_col] = counts
    return post_terms, post_slots, tf
