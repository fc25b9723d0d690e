"""BM25Index: the BM25F index of DS009 (add, remove, update, rebuild, search, stats, save, load).

Layout. Documents live in *slots* (per-slot arrays: field lengths, role code,
alive flag). Postings are in at most two immutable CSR :class:`Segment`\\ s: the
*main* one, built in bulk by :meth:`BM25Index.rebuild` or a compaction, and a
small *delta* one holding documents added since, rebuilt lazily before a search.
Removing a document only clears its alive flag and updates the counters
(O(fields)); when the delta or the dead slots grow past a fraction of the main
segment, everything is compacted into a new main segment, so the amortized cost
of an add is O(its tokens), never O(vocabulary).

Statistics (N, per-field token totals and non-empty counts) are exact integers
updated on every change. A per-term stamp records the statistics version its
``df`` and float32 impacts were computed at; a search refreshes only its own
stale terms. Final scores are recomputed in float64 from integer data, so any
sequence of add/remove/update gives bit-identical scores to a rebuild.

>>> idx = BM25Index()
>>> idx.add("a", "nginx depends on openssl")
>>> idx.add("b", {"topic": "openssl", "claim": "a TLS library"})
>>> [h.doc_id for h in idx.search("openssl nginx")]
['a', 'b']
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from . import scoring
from .errors import DocumentError, FieldError, UnknownDocumentError
from .search import QueryTerm, RoleBoost, candidates, gather, posting_lists
from .segment import Segment
from .tokenizer import Tokenizer, default_tokenizer
from .values import BM25Params, Hit, IndexStats

__all__ = ["BM25Index"]

Fields = Mapping[str, "str | Sequence[str] | None"] | str
_CHUNK = 2048  # documents tokenized together (one stemmer call per chunk)


@contextmanager
def _no_gc() -> Iterator[None]:
    # Bulk tokenization allocates millions of short-lived lists; the cyclic GC
    # would rescan every live object many times over and double the build time.
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class BM25Index:
    """A BM25F index over documents made of named text fields.

    ``fields`` is a plain ``str`` (meaning ``{"text": str}``) or a mapping from
    field names (keys of ``field_weights``) to a string, a sequence of strings
    (joined by spaces, e.g. ``utility_acts``) or ``None``.

    >>> idx = BM25Index(field_weights={"text": 1.0})
    >>> idx.rebuild([("d1", "the cat sat"), ("d2", "the dog sat"), ("d3", "cats and dogs")])
    >>> idx.search("cat")   # idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6; dl = avgdl, so sat = 1
    [Hit(doc_id='d1', score=0.4700036...), Hit(doc_id='d3', score=0.4700036...)]
    >>> len(idx), "d2" in idx
    (3, True)
    """

    # Compaction thresholds (documents): the delta is folded into the main segment
    # beyond max(_DELTA_MIN, N/8) documents, dead slots are dropped beyond
    # max(_DEAD_MIN, live/4). Tests lower them to exercise compaction.
    _DELTA_MIN = 1024
    _DEAD_MIN = 1024

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
        self.params = params
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()
        self._fields = params.fields
        self._col = {name: i for i, name in enumerate(self._fields)}
        self._weights = np.array([w for _, w in params.field_weights], dtype=np.float64)
        self._role_col = self._col.get("role")
        self._reset()

    # ------------------------------------------------------------------ state

    def _reset(self) -> None:
        nf = len(self._fields)
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._word_ids: dict[str, tuple[int, ...]] = {}
        self._ids: list[str | None] = []
        self._slot_of: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._dl = np.zeros((0, nf), dtype=np.uint32)
        self._role = np.zeros(0, dtype=np.int32)
        self._role_codes: dict[str, int] = {}
        self._n_live = 0
        self._total_len = [0] * nf
        self._nonempty = [0] * nf
        self._main = Segment(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros((0, nf), np.uint16))
        self._main_end = 0  # slots below this belong to the main segment
        self._dead_main = 0
        self._delta_docs: dict[int, tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]] = {}
        self._delta: Segment | None = None
        self._version = 0
        self._stamp = np.full(0, -1, dtype=np.int64)
        self._df = np.zeros(0, dtype=np.int64)
        self._acc = np.zeros(0, dtype=np.float64)

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    def __iter__(self) -> Iterator[str]:
        """Doc ids in no particular order."""
        return iter(list(self._slot_of))

    def __repr__(self) -> str:
        return f"<BM25Index docs={self._n_live} fields={list(self._fields)} k1={self.params.k1} b={self.params.b}>"

    # ------------------------------------------------------------ tokenizing

    def _term_ids(self, terms: Iterable[str]) -> tuple[int, ...]:
        vocab, out = self._vocab, []
        for t in terms:
            i = vocab.get(t)
            if i is None:
                i = vocab[t] = len(self._terms)
                self._terms.append(t)
            out.append(i)
        return tuple(out)

    def _ids_of_words(self, words: list[str]) -> Iterable[int]:
        cache = self._word_ids
        try:
            return list(chain.from_iterable(map(cache.__getitem__, words)))
        except KeyError:
            self._learn(words)
            return list(chain.from_iterable(map(cache.__getitem__, words)))

    def _learn(self, words: Iterable[str]) -> None:
        cache = self._word_ids
        if len(cache) > 1_000_000:
            cache.clear()
        new = [w for w in set(words) if w not in cache]
        for w, terms in zip(new, self.tokenizer.analyze_words(new)):
            cache[w] = self._term_ids(terms)

    def _field_texts(self, doc_id: Any, fields: Any) -> list[tuple[int, str]]:
        if not isinstance(doc_id, str):
            raise DocumentError(f"doc_id must be str, got {type(doc_id).__name__}")
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
            out.append((col, value))
        return out

    # --------------------------------------------------------------- storage

    def _grow(self, n_slots: int) -> None:
        cap = len(self._alive)
        if n_slots <= cap:
            return
        new = max(n_slots, 2 * cap, 64)
        self._alive = np.concatenate([self._alive, np.zeros(new - cap, bool)])
        self._dl = np.concatenate([self._dl, np.zeros((new - cap, len(self._fields)), np.uint32)])
        self._role = np.concatenate([self._role, np.full(new - cap, -1, np.int32)])
        self._acc = np.zeros(new, dtype=np.float64)

    def _role_code(self, key: str) -> int:
        code = self._role_codes.get(key)
        if code is None:
            code = self._role_codes[key] = len(self._role_codes)
        return code

    def _role_key(self, text: str) -> str:
        return " ".join(self.tokenizer(text))

    def _place(self, slot: int, doc_id: str, dl: Sequence[int], role: int) -> None:
        self._ids.append(doc_id)
        self._slot_of[doc_id] = slot
        self._alive[slot] = True
        self._dl[slot] = dl
        self._role[slot] = role
        self._n_live += 1
        for f, n in enumerate(dl):
            self._total_len[f] += n
            self._nonempty[f] += n > 0

    # ------------------------------------------------------------ mutations

    def add(self, doc_id: str, fields: Fields) -> None:
        """Index a document; re-adding an existing id replaces it.

        >>> idx = BM25Index()
        >>> idx.add("u1", {"topic": "sandbox", "utility_acts": ["isolate", "run"]})
        >>> idx.add("u1", "replaced text")
        >>> idx.search("sandbox"), [h.doc_id for h in idx.search("replaced")]
        ([], ['u1'])
        """
        texts = self._field_texts(doc_id, fields)
        per_field = [(col, self._ids_of_words(self.tokenizer.words(text))) for col, text in texts]
        if doc_id in self._slot_of:
            self._drop(doc_id)  # no compaction here: it would renumber the term ids above
        nf = len(self._fields)
        dl = [0] * nf
        for col, ids in per_field:
            dl[col] += len(ids)
        role = -1
        if self._role_col is not None:
            role_text = " ".join(t for c, t in texts if c == self._role_col)
            role = self._role_code(self._role_key(role_text)) if role_text.strip() else -1
        slot = len(self._ids)
        self._grow(slot + 1)
        self._place(slot, doc_id, dl, role)
        terms = np.fromiter(chain.from_iterable(ids for _, ids in per_field), dtype=np.int32)
        cols = np.repeat(np.array([c for c, _ in per_field], dtype=np.uint8), [len(i) for _, i in per_field])
        self._delta_docs[slot] = (terms, cols)
        self._delta = None
        self._version += 1
        self._maybe_compact()

    def update(self, doc_id: str, fields: Fields) -> None:
        """Replace a document (same as :meth:`add`; an unknown id is simply added).

        >>> idx = BM25Index(); idx.add("d", "old words"); idx.update("d", "new words")
        >>> [h.doc_id for h in idx.search("old")]
        []
        """
        self.add(doc_id, fields)

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

    def _drop(self, doc_id: str) -> None:
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            raise UnknownDocumentError(f"no document with id {doc_id!r}")
        self._ids[slot] = None
        self._alive[slot] = False
        self._n_live -= 1
        for f, n in enumerate(self._dl[slot].tolist()):
            self._total_len[f] -= n
            self._nonempty[f] -= n > 0
        if slot in self._delta_docs:
            del self._delta_docs[slot]
            self._delta = None
        else:
            self._dead_main += 1
        self._version += 1

    def _maybe_compact(self) -> None:
        if len(self._delta_docs) > max(self._DELTA_MIN, min(self._n_live // 8, 8192)) or self._dead_main > max(
            self._DEAD_MIN, (self._main_end - self._dead_main) // 4
        ):
            self._compact()

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
        self._reset()
        nf = len(self._fields)
        n = len(docs)
        self._grow(n)
        buf_terms = np.zeros(0, np.int32)
        term_chunks: list[npt.NDArray[np.int32]] = []
        length_rows: list[int] = []  # tokens per (doc, field) entry, in order
        entry_slot: list[int] = []
        entry_col: list[int] = []
        words_of = self.tokenizer.words
        items = list(docs.items())
        del docs
        with _no_gc():
            for start in range(0, n, _CHUNK):
                chunk = items[start : start + _CHUNK]
                split = [[(col, words_of(text)) for col, text in texts] for _, texts in chunk]
                cache = self._word_ids
                self._learn(w for entries in split for _, ws in entries for w in ws if w not in cache)
                getter = cache.__getitem__
                flat: list[int] = []
                for offset, entries in enumerate(split):
                    slot = start + offset
                    for col, ws in entries:
                        before = len(flat)
                        flat.extend(chain.from_iterable(map(getter, ws)))
                        length_rows.append(len(flat) - before)
                        entry_slot.append(slot)
                        entry_col.append(col)
                term_chunks.append(np.array(flat, dtype=np.int32))
        buf_terms = np.concatenate(term_chunks) if term_chunks else buf_terms
        lengths = np.array(length_rows, dtype=np.int64)
        e_slot = np.array(entry_slot, dtype=np.int32)
        e_col = np.array(entry_col, dtype=np.uint8)
        tok_slot = np.repeat(e_slot, lengths)
        tok_col = np.repeat(e_col, lengths) if nf > 1 else None
        dl = np.zeros((n, nf), dtype=np.int64)
        np.add.at(dl, (e_slot, e_col), lengths)
        role = np.full(n, -1, dtype=np.int32)
        for slot, (doc_id, texts) in enumerate(items):
            self._ids.append(doc_id)
            self._slot_of[doc_id] = slot
            if self._role_col is not None:
                role_text = " ".join(t for c, t in texts if c == self._role_col)
                if role_text.strip():
                    role[slot] = self._role_code(self._role_key(role_text))
        self._alive[:n] = True
        self._dl[:n] = dl
        self._role[:n] = role
        self._n_live = n
        self._total_len = dl.sum(axis=0).tolist()
        self._nonempty = (dl > 0).sum(axis=0).tolist()
        self._main = Segment.from_tokens(buf_terms, tok_slot, tok_col, len(self._terms), nf)
        self._main_end = n
        self._refresh_all()

    # ------------------------------------------------------------ compaction

    def _compact(self) -> None:
        """Fold the delta and drop dead slots and unused terms: one new main segment."""
        nf = len(self._fields)
        n_slots = len(self._ids)
        live = np.flatnonzero(self._alive[:n_slots])
        renum = np.full(max(n_slots, 1), -1, dtype=np.int64)
        renum[live] = np.arange(len(live))
        parts_t, parts_s, parts_tf = [], [], []
        main = self._main
        if main.n_postings:
            keep = self._alive[main.slots]
            parts_t.append(main.term_of_postings()[keep])
            parts_s.append(main.slots[keep])
            parts_tf.append(main.tf[keep].astype(np.uint32))
        if self._delta_docs:
            delta = self._build_delta()
            parts_t.append(delta.term_of_postings())
            parts_s.append(delta.slots)
            parts_tf.append(delta.tf.astype(np.uint32))
        terms = np.concatenate(parts_t) if parts_t else np.zeros(0, np.int32)
        slots = np.concatenate(parts_s) if parts_s else np.zeros(0, np.int32)
        tf = np.concatenate(parts_tf) if parts_tf else np.zeros((0, nf), np.uint32)
        used = np.unique(terms)
        term_map = np.full(max(len(self._terms), 1), -1, dtype=np.int64)
        term_map[used] = np.arange(len(used))
        self._terms = [self._terms[i] for i in used.tolist()]
        self._vocab = {t: i for i, t in enumerate(self._terms)}
        self._word_ids = {}
        max_tf = int(tf.max()) if len(tf) else 0
        tf = tf.astype(np.uint16 if max_tf < 2**16 else np.uint32)
        self._main = Segment.from_postings(
            term_map[terms].astype(np.int32), renum[slots].astype(np.int32), tf, len(self._terms)
        )
        self._ids = [self._ids[i] for i in live.tolist()]
        self._slot_of = {doc_id: i for i, doc_id in enumerate(self._ids)}  # type: ignore[misc]
        n = len(live)
        self._alive = np.concatenate([np.ones(n, bool), np.zeros(len(self._alive) - n, bool)])
        self._dl[:n] = self._dl[live]
        self._dl[n:] = 0
        self._role[:n] = self._role[live]
        self._role[n:] = -1
        self._main_end = n
        self._dead_main = 0
        self._delta_docs = {}
        self._delta = None
        self._refresh_all()

    def _build_delta(self) -> Segment:
        slots = list(self._delta_docs)
        terms = [self._delta_docs[s][0] for s in slots]
        cols = [self._delta_docs[s][1] for s in slots]
        lens = [len(t) for t in terms]
        return Segment.from_tokens(
            np.concatenate(terms) if terms else np.zeros(0, np.int32),
            np.repeat(np.array(slots, dtype=np.int32), lens),
            np.concatenate(cols) if cols else None,
            len(self._terms),
            len(self._fields),
        )

    def _segments(self) -> list[Segment]:
        if self._delta_docs and self._delta is None:
            self._delta = self._build_delta()
        segs = [self._main] if self._main.n_postings else []
        if self._delta_docs and self._delta is not None:
            segs.append(self._delta)
        return segs

    # ----------------------------------------------------- impacts and stats

    def _avgdl(self) -> list[float]:
        return [scoring.mean_length(t, c) for t, c in zip(self._total_len, self._nonempty)]

    def _base(self, tf: npt.NDArray[np.integer], slots: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
        """``Σ_f w_f sat_f`` of postings with term frequencies ``tf`` in documents ``slots``."""
        p = self.params
        return scoring.field_sum(tf, self._dl[slots], self._avgdl(), self._weights, p.k1, p.b)

    def _refresh_all(self) -> None:
        """Vectorized df and impacts of every term (right after a bulk build: one segment, all alive)."""
        main = self._main
        v = len(self._terms)
        df = np.diff(main.indptr).astype(np.int64)
        n = self._n_live
        # math.log per term, exactly as _refresh does it (numpy's vector log may round differently)
        idf = np.array([scoring.idf(d, n) for d in df.tolist()], dtype=np.float64)
        main.impacts = np.repeat(idf, df) * self._base(main.tf, main.slots)
        self._df = df
        self._stamp = np.full(v, self._version, dtype=np.int64)

    def _refresh(self, term: int, segments: Sequence[Segment]) -> None:
        if term >= len(self._stamp):
            grow = max(len(self._terms), 2 * len(self._stamp)) - len(self._stamp)
            self._stamp = np.concatenate([self._stamp, np.full(grow, -1, np.int64)])
            self._df = np.concatenate([self._df, np.zeros(grow, np.int64)])
        if self._stamp[term] == self._version:
            return
        alive = self._alive
        df = 0
        for seg in segments:
            a, b = seg.bounds(term)
            df += int(np.count_nonzero(alive[seg.slots[a:b]]))
        weight = scoring.idf(df, self._n_live)
        for seg in segments:
            a, b = seg.bounds(term)
            if a < b:
                slots = seg.slots[a:b]
                seg.impacts[a:b] = weight * self._base(seg.tf[a:b], slots)
        self._df[term] = df
        self._stamp[term] = self._version

    # ----------------------------------------------------------------- search

    def _query_terms(self, query: str, segments: Sequence[Segment]) -> list[QueryTerm]:
        if not isinstance(query, str):
            raise DocumentError(f"query must be str, got {type(query).__name__}")
        counts: dict[str, int] = {}
        for t in self.tokenizer(query):
            counts[t] = counts.get(t, 0) + 1
        out = []
        for t in sorted(counts):  # by term text, so the float sums do not depend on term ids
            i = self._vocab.get(t)
            if i is None:
                continue
            self._refresh(i, segments)
            if self._df[i]:
                out.append(QueryTerm(i, counts[t]))
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

    def _search(
        self,
        query: str,
        k: int,
        mask: npt.NDArray[np.bool_] | None,
        role: int | None,
        segments: Sequence[Segment],
    ) -> list[Hit]:
        terms = self._query_terms(query, segments)
        if not terms or k == 0:
            return []
        boost = RoleBoost(self._role, role, self.params.role_boost) if role is not None else RoleBoost()
        per_term = posting_lists(segments, terms, mask)
        touched, scores = gather([pair for lists in per_term for pair in lists], self._acc)
        cand, scores = candidates(touched, boost(touched, scores), k, len(terms))
        ids = self._ids
        ranked = sorted(zip((-scores).tolist(), (ids[s] for s in cand.tolist())))
        return [Hit(doc_id, -neg) for neg, doc_id in ranked[:k]]  # type: ignore[arg-type]

    def _role_of(self, boost_role: str | None) -> int | None:
        if boost_role is None:
            return None
        return self._role_codes.get(self._role_key(boost_role), -2)

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

    # ------------------------------------------------------------ persistence

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
        from .errors import ParameterError

        raise ParameterError(f"k must be an int >= 0, got {k!r}")
    return k
