"""BM25Index: the BM25F index of DS009 (add, remove, update, rebuild, search, stats, save, load).

Storage, statistics and incremental maintenance are in :mod:`lexical.store`; a query's clauses and
filters in :mod:`lexical._queries`; query evaluation in :mod:`lexical.search`; formulas in
:mod:`lexical.scoring`.

>>> idx = BM25Index()
>>> idx.add("a", "nginx depends on openssl")
>>> idx.add("b", {"topic": "openssl", "claim": "a TLS library"})
>>> [h.doc_id for h in idx.search("openssl nginx")]
['a', 'b']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import numpy.typing as npt

from .errors import DocumentError, FieldError, ParameterError, check_text
from ._bulk import BulkBuild
from ._queries import KTH, IndexQueries
from .search import QueryTerm, RoleBoost, candidates, clause_bounds, clause_lists, gather, kth_largest, pruned_gather
from .segment import Segment
from .tokenizer import Tokenizer, default_tokenizer
from .values import BM25Params, Hit, IndexStats

__all__ = ["BM25Index"]

Fields = Mapping[str, "str | Sequence[str] | None"] | str
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """Run ``method`` under the index's lock: a search uses shared scratch arrays and lazy state."""

    @functools.wraps(method)
    def run(self: BM25Index, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class BM25Index(IndexQueries, BulkBuild):
    """A BM25F index over documents made of named text fields.

    ``fields`` is a plain ``str`` (meaning ``{"text": str}``) or a mapping from
    field names (keys of ``field_weights``) to a string, a sequence of strings
    (joined by spaces, e.g. ``utility_acts``) or ``None``.

    An index may be shared between threads: its methods run one at a time under
    the index's lock (a search uses scratch arrays and state shared by all calls).

    >>> idx = BM25Index(field_weights={"text": 1.0})
    >>> idx.rebuild([("d1", "the cat sat"), ("d2", "the dog sat"), ("d3", "cats and dogs")])
    >>> idx.search("cat")   # idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6; dl = avgdl, so sat = 1
    [Hit(doc_id='d1', score=0.4700036...), Hit(doc_id='d3', score=0.4700036...)]
    >>> len(idx), "d2" in idx
    (3, True)
    """

    def __init__(
        self,
        field_weights: Mapping[str, float] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
        tokenizer: Tokenizer | None = None,
        role_boost: float = 1.3,
        *,
        params: BM25Params | None = None,
    ) -> None:
        if params is None:
            kw: dict[str, Any] = {"k1": k1, "b": b, "role_boost": role_boost}
            if field_weights is not None:
                kw["field_weights"] = field_weights
            params = BM25Params(**kw)
        super().__init__(params, tokenizer if tokenizer is not None else default_tokenizer())

    # Queries with fewer postings than this are scored in full (no MaxScore pruning);
    # tests set it to 0 to exercise the pruned path on small corpora.
    _PRUNE_MIN = 2048

    @_locked
    def __len__(self) -> int:
        return self._n_live

    @_locked
    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @_locked
    def __iter__(self) -> Iterator[str]:
        """Doc ids in no particular order."""
        return iter(list(self._slot_of))

    def __repr__(self) -> str:
        return f"<BM25Index docs={self._n_live} fields={list(self._fields)} k1={self.params.k1} b={self.params.b}>"

    def _field_texts(self, doc_id: Any, fields: Any) -> list[tuple[int, str]]:
        if not isinstance(doc_id, str):
            raise DocumentError(f"doc_id must be str, got {type(doc_id).__name__}")
        if not doc_id.isascii():
            check_text(doc_id, f"doc id {doc_id!r}")
        if isinstance(fields, str):
            fields = {"text": fields}
        if not isinstance(fields, Mapping):
            raise DocumentError(f"document {doc_id!r}: fields must be a str or a mapping, got {type(fields).__name__}")
        out = []
        for name, value in fields.items():
            col = self._col.get(name)
            if col is None:
                raise FieldError(
                    f"document {doc_id!r}: unknown field {name!r}; fields with a weight: {', '.join(self._fields)}"
                )
            if value is None:
                continue
            if not isinstance(value, str):
                if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
                    value = " ".join(value)
                else:
                    raise DocumentError(
                        f"document {doc_id!r}: field {name!r} must be str or a sequence of str, got {type(value).__name__}"
                    )
            if not value.isascii():
                check_text(value, f"document {doc_id!r}: field {name!r}")
            out.append((col, value))
        return out

    @_locked
    def add(self, doc_id: str, fields: Fields) -> None:
        """Index a document; re-adding an existing id replaces it.

        >>> idx = BM25Index()
        >>> idx.add("u1", {"topic": "sandbox", "utility_acts": ["isolate", "run"]})
        >>> idx.add("u1", "replaced text")
        >>> idx.search("sandbox"), [h.doc_id for h in idx.search("replaced")]
        ([], ['u1'])
        """
        self._insert(doc_id, self._field_texts(doc_id, fields))

    @_locked
    def rebuild(self, documents: Iterable[tuple[str, Fields]]) -> None:
        """Replace the whole content by ``documents`` (pairs of id and fields), built in bulk.

        A repeated id keeps its last fields.

        >>> idx = BM25Index(); idx.rebuild([("a", "x y"), ("b", "y z"), ("a", "z")])
        >>> sorted(idx), idx.stats().total_terms
        (['a', 'b'], 3)
        """
        docs: dict[str, list[tuple[int, str]]] = {}
        for doc_id, fields in documents:
            texts = self._field_texts(doc_id, fields)
            docs.pop(doc_id, None)
            docs[doc_id] = texts
        items = list(docs.items())
        del docs
        self._load(items)

    @_locked
    def fork(self) -> BM25Index:
        """An independent copy to change while this one keeps serving searches unchanged.

        Postings are shared (segments are never changed in place but for their impacts, which the
        copy gets its own arrays of); slots, statistics and dictionaries are copied. No document is
        tokenized again, so the cost is a copy of the arrays, and changes to the fork then cost what
        :meth:`add` and :meth:`remove` cost.

        >>> idx = BM25Index(); idx.rebuild([("a", "red fox"), ("b", "blue fox")])
        >>> new = idx.fork(); new.remove("a"); new.add("c", "red wine")
        >>> [h.doc_id for h in idx.search("red")], [h.doc_id for h in new.search("red")]
        (['a'], ['c'])
        """
        import copy
        import threading

        twin = copy.copy(self)
        twin._lock = threading.RLock()
        def own(seg: Segment | None) -> Segment | None:
            if seg is None:
                return None
            seg = copy.copy(seg)
            seg.impacts, seg.maxima = seg.impacts.copy(), seg.maxima.copy()
            return seg

        twin._main, twin._delta = own(self._main), own(self._delta)
        twin._delta_docs = dict(self._delta_docs)
        for name in ("_alive", "_dl", "_role", "_stamp", "_df"):
            setattr(twin, name, getattr(self, name).copy())
        twin._acc, twin._mark = np.zeros_like(self._acc), np.zeros_like(self._mark)
        twin._ids, twin._terms = self._ids.take(np.arange(len(self._ids))), self._terms.take(np.arange(len(self._terms)))
        twin._slot_of, twin._vocab = dict(self._slot_of), dict(self._vocab)
        twin._word_ids, twin._role_codes = dict(self._word_ids), dict(self._role_codes)
        twin._total_len, twin._nonempty = list(self._total_len), list(self._nonempty)
        twin._kth_cache, twin._kth_version = {}, -1
        return twin

    @_locked
    def update(self, doc_id: str, fields: Fields) -> None:
        """Replace a document (same as :meth:`add`; an unknown id is simply added).

        >>> idx = BM25Index(); idx.add("d", "old words"); idx.update("d", "new words")
        >>> [h.doc_id for h in idx.search("old")]
        []
        """
        self.add(doc_id, fields)

    @_locked
    def remove(self, doc_id: str) -> None:
        """Remove a document; its terms stop counting in every statistic at once.

        >>> idx = BM25Index(); idx.add("d", "text"); idx.remove("d"); len(idx)
        0
        >>> idx.remove("d")
        Traceback (most recent call last):
        ...
        lexical.errors.UnknownDocumentError: no document with id 'd'
        """
        self._drop(doc_id)
        self._maybe_compact()


    def _search(
        self,
        query: str,
        k: int,
        mask: npt.NDArray[np.bool_] | None,
        role: int | None,
        segments: Sequence[Segment],
    ) -> list[Hit]:
        clauses = self._query_clauses(query, segments)
        if not clauses or k == 0:
            return []
        boost = RoleBoost(self._role, role, self.params.role_boost) if role is not None else RoleBoost()
        per_term = clause_lists(segments, clauses, mask, self._acc, self._mark)
        pruned = None
        if len(clauses) > 1 and sum(len(s) for lists in per_term for s, _ in lists) >= self._PRUNE_MIN:
            factor = boost.factor
            kth_of = None
            if mask is None and k <= KTH:  # every posting is a live document: cached bounds

                def kth_of(i: int) -> float:
                    clause = clauses[i]
                    if isinstance(clause, QueryTerm):
                        return self._kth_bound(clause)
                    return kth_largest(per_term[i], k) if per_term[i] else 0.0

            pruned = pruned_gather(
                per_term,
                clause_bounds(segments, clauses),
                k,
                self._acc,
                self._mark,
                min(1.0, factor),
                max(1.0, factor),
                kth_of,
            )
        if pruned is None:
            touched, scores = gather([pair for lists in per_term for pair in lists], self._acc, self._mark)
            repeats, floor = 1, 0.0
        else:
            touched, scores, repeats, floor = pruned
        cand, scores = candidates(touched, boost(touched, scores), k, repeats, floor)
        ranked = sorted(zip((-scores).tolist(), self._ids.data[cand].tolist()))
        return [Hit(doc_id, -neg) for neg, doc_id in ranked[:k]]  # type: ignore[arg-type]

    @_locked
    def search(
        self,
        query: str,
        k: int = 10,
        allowed: Collection[str] | None = None,
        boost_role: str | None = None,
    ) -> list[Hit]:
        """The ``k`` best documents for ``query``, by score descending then doc id ascending.

        Only documents sharing a term with the query are returned. ``allowed``
        restricts the search to those ids before scoring (statistics stay those of
        the whole index). ``boost_role`` multiplies the score of documents whose
        ``role`` field has the same tokens by ``role_boost``.

        >>> idx = BM25Index()
        >>> idx.add("p", {"role": "procedure", "claim": "restart the server"})
        >>> idx.add("f", {"role": "fact", "claim": "the server restarts nightly"})
        >>> [h.doc_id for h in idx.search("server restart", boost_role="fact")]
        ['f', 'p']
        >>> idx.search("server", allowed={"p"})[0].doc_id
        'p'
        """
        k = _check_k(k)
        segments = self._segments()
        return self._search(query, k, self._mask(allowed), self._role_of(boost_role), segments)

    @_locked
    def search_many(
        self,
        queries: Iterable[str],
        k: int = 10,
        allowed: Collection[str] | None = None,
        boost_role: str | None = None,
    ) -> list[list[Hit]]:
        """:meth:`search` for many queries, sharing the filter and setup work.

        >>> idx = BM25Index(); idx.rebuild([("a", "red fox"), ("b", "blue fox")])
        >>> [[h.doc_id for h in hits] for hits in idx.search_many(["red", "fox", "green"])]
        [['a'], ['a', 'b'], []]
        """
        k = _check_k(k)
        segments = self._segments()
        mask = self._mask(allowed)
        role = self._role_of(boost_role)
        return [self._search(q, k, mask, role, segments) for q in queries]

    @_locked
    def stats(self) -> IndexStats:
        """Statistics of the live documents; ``vocabulary_size`` is counted from the postings (O(postings)).

        >>> idx = BM25Index(); idx.rebuild([("a", "red fox"), ("b", {"topic": "fox", "claim": "runs fast"})])
        >>> s = idx.stats(); (s.total_docs, s.total_terms, s.vocabulary_size, s.avg_field_lengths["text"])
        (2, 5, 4, 2.0)
        """
        used = []
        for seg in self._segments():
            live = self._alive[seg.slots]
            used.append(seg.term_of_postings()[live])
        vocab = len(np.unique(np.concatenate(used))) if used else 0
        avg = {
            name: (self._total_len[i] / self._nonempty[i] if self._nonempty[i] else 0.0)
            for i, name in enumerate(self._fields)
        }
        return IndexStats(
            total_docs=self._n_live, total_terms=int(sum(self._total_len)), avg_field_lengths=avg, vocabulary_size=vocab
        )

    @_locked
    def document_frequency(self, term: str) -> int:
        """Live documents containing the (already tokenized) ``term`` in any field.

        >>> idx = BM25Index(); idx.rebuild([("a", "foxes"), ("b", "fox"), ("c", "dog")])
        >>> idx.document_frequency("fox"), idx.document_frequency("cat")
        (2, 0)
        """
        i = self._vocab.get(term)
        if i is None:
            return 0
        self._refresh(i, self._segments())
        return int(self._df[i])

    @_locked
    def save(self, target: str | Path | IO[bytes]) -> None:
        """Write the index as a numpy ``.npz`` archive with a JSON params record (no pickle).

        >>> import io; buf = io.BytesIO()
        >>> idx = BM25Index(); idx.rebuild([("a", "red fox")]); idx.save(buf); _ = buf.seek(0)
        >>> BM25Index.load(buf).search("fox")[0].doc_id
        'a'
        """
        from .persist import save_index

        save_index(self, target)

    @classmethod
    def load(
        cls,
        source: str | Path | IO[bytes],
        tokenizer: Tokenizer | None = None,
        *,
        expect: BM25Params | None = None,
    ) -> BM25Index:
        """Read an index written by :meth:`save`.

        The tokenizer is rebuilt from the saved settings; a ``tokenizer`` given here
        must have the same :meth:`Tokenizer.params`, and ``expect`` (if given) must
        equal the saved scoring parameters, otherwise :class:`IndexFormatError`
        says to rebuild the index.
        """
        from .persist import load_index

        return load_index(cls, source, tokenizer, expect)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"k must be an int >= 0, got {k!r}")
    return k
