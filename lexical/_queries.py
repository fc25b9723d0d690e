"""What a search of :class:`lexical.BM25Index` reads from its storage, before any scoring: a query's
clauses (its distinct terms and compound words with their query frequencies, ordered by text), the
mask of the slots it may return, the code of the boosted role, and per term a cached lower bound of
the k-th best score (the MaxScore pruning's start). The evaluation itself is :mod:`lexical.search`'s;
the index runs it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from .errors import DocumentError, check_text
from .search import Clause, Compound, QueryTerm, kth_largest
from .segment import Segment
from .store import PostingStore

__all__ = ["KTH", "IndexQueries"]

KTH = 10  # the rank of the cached per-term lower bounds (the default k)


class IndexQueries(PostingStore):
    """A posting store's query side (the base of :class:`lexical.BM25Index`)."""

    def _term_id(self, term: str, segments: Sequence[Segment]) -> int | None:
        """The id of an indexed term that some live document contains, else ``None``."""
        i = self._vocab.get(term)
        if i is None:
            return None
        self._refresh(i, segments)
        return i if self._df[i] else None

    def _query_clauses(self, query: str, segments: Sequence[Segment]) -> list[Clause]:
        """The query's distinct terms and compound words with their query frequencies.

        Ordered by text, so the float sums do not depend on term ids or word order.
        """
        if not isinstance(query, str):
            raise DocumentError(f"query must be str, got {type(query).__name__}")
        check_text(query, "query")
        counts: dict[tuple[str, ...], int] = {}
        for group in self.tokenizer.groups(query):
            counts[group] = counts.get(group, 0) + 1
        out: list[Clause] = []
        for group in sorted(counts):
            qf = counts[group]
            if len(group) == 1:
                i = self._term_id(group[0], segments)
                if i is not None:
                    out.append(QueryTerm(i, qf))
                continue
            whole = self._term_id(group[0], segments)
            parts = tuple(p for p in (self._term_id(t, segments) for t in group[1:]) if p is not None)
            if whole is None and not parts:
                continue
            out.append(Compound(whole, parts, qf) if parts else QueryTerm(whole, qf))  # type: ignore[arg-type]
        return out

    def _mask(self, allowed: Collection[str] | None) -> npt.NDArray[np.bool_] | None:
        """Slots a search may return: the allowed ones, or the live ones while dead slots remain."""
        if allowed is None:
            return self._alive if self._dead_main else None
        if isinstance(allowed, str):
            raise DocumentError("allowed must be a collection of doc ids, not one str")
        mask = np.zeros(len(self._alive), dtype=bool)
        get = self._slot_of.get
        slots = [s for s in map(get, allowed) if s is not None]
        mask[np.array(slots, dtype=np.intp)] = True
        return mask

    def _kth_bound(self, qt: QueryTerm) -> float:
        """The ``KTH``-th largest impact × qf of a term in the main segment (0 if fewer postings), cached.

        Those are distinct live documents (when nothing is dead), so for any
        ``k <= KTH`` it is a lower bound of the k-th best score of a query with the term.
        """
        if self._kth_version != self._version:
            self._kth_cache.clear()
            self._kth_version = self._version
        v = self._kth_cache.get(qt.term)
        if v is None:
            a, b = self._main.bounds(qt.term)
            v = self._kth_cache[qt.term] = kth_largest([(self._main.slots[a:b], self._main.impacts[a:b])], KTH)
        return v * qt.qf

    def _role_of(self, boost_role: str | None) -> int | None:
        if boost_role is None:
            return None
        return self._role_codes.get(self._role_key(boost_role), -2)
