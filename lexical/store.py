"""PostingStore: the storage of a BM25Index — slots, statistics, CSR segments, impacts.

Documents live in *slots* (per-slot arrays: field lengths, role code, alive
flag). Postings are in at most two immutable CSR :class:`Segment`\\ s: the *main*
one, built in bulk by ``rebuild`` or a compaction, and a small *delta* one
holding documents added since, rebuilt lazily before a search. Removing a
document only clears its alive flag and updates the counters (O(fields)); when
the delta or the dead slots grow past a fraction of the main segment,
everything is compacted into a new main segment (dropping unused terms), so the
amortized cost of an add is O(its tokens), never O(vocabulary).

A field's length ``dl`` counts word positions: a compound word's whole form
shares its position with its parts (Lucene's ``discountOverlaps``), so
``wing-body`` adds three postings (``wing-bodi``, ``wing``, ``bodi``) but 2 to
``dl``. The word cache marks a compound's term ids with a trailing
:data:`_OVERLAP`, which the length counts subtract and the postings drop.

Statistics (N, per-field token totals and non-empty counts) are exact integers
updated on every change. A per-term stamp records the statistics version at
which the term's ``df`` and float64 impacts were computed; a search refreshes
only its own stale terms. Impacts are a pure function of those integers, so
any sequence of add/remove/update gives bit-identical scores to a rebuild.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from . import scoring
from .errors import UnknownDocumentError
from .segment import Segment
from .strings import StrArray
from .tokenizer import Tokenizer
from .values import BM25Params

__all__ = ["PostingStore"]

_OVERLAP = -1  # marks a compound word in the word cache: one of its terms takes no position


class PostingStore:
    """Slots, statistics and segments; :class:`~lexical.index.BM25Index` adds the public API (its bulk
    build is :mod:`lexical._bulk`'s)."""

    # Compaction thresholds (documents): the delta is folded into the main segment
    # beyond max(_DELTA_MIN, N/8) documents, dead slots are dropped beyond
    # max(_DEAD_MIN, live/4). Tests lower them to exercise compaction.
    _DELTA_MIN = 1024
    _DEAD_MIN = 1024

    def __init__(self, params: BM25Params, tokenizer: Tokenizer) -> None:
        self.params = params
        self.tokenizer = tokenizer
        self._fields = params.fields
        self._col = {name: i for i, name in enumerate(self._fields)}
        self._weights = np.array([w for _, w in params.field_weights], dtype=np.float64)
        self._role_col = self._col.get("role")
        self._lock = threading.RLock()  # see BM25Index: one call at a time
        self._reset()

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and copy: everything but the lock (a new one is made by ``__setstate__``)."""
        with self._lock:
            state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def _reset(self) -> None:
        nf = len(self._fields)
        self._vocab: dict[str, int] = {}
        self._terms = StrArray()  # term id -> term; not a list: see lexical.strings
        self._word_ids: dict[str, tuple[int, ...]] = {}
        self._ids = StrArray()  # slot -> doc id, None once removed
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
        self._kth_cache: dict[int, float] = {}  # see BM25Index._kth_bound
        self._kth_version = -1
        self._stamp = np.full(0, -1, dtype=np.int64)
        self._df = np.zeros(0, dtype=np.int64)
        self._acc = np.zeros(0, dtype=np.float64)
        self._mark = np.zeros(0, dtype=bool)

    def _term_ids(self, terms: Iterable[str]) -> tuple[int, ...]:
        vocab, out = self._vocab, []
        for t in terms:
            i = vocab.get(t)
            if i is None:
                i = vocab[t] = len(self._terms)
                self._terms.append(t)
            out.append(i)
        return tuple(out)

    def _ids_of_words(self, words: list[str]) -> tuple[list[int], int]:
        """The term ids of ``words`` (with repeats) and their length in positions."""
        cache = self._word_ids
        try:
            ids = list(chain.from_iterable(map(cache.__getitem__, words)))
        except KeyError:
            self._learn(words)
            ids = list(chain.from_iterable(map(cache.__getitem__, words)))
        overlaps = ids.count(_OVERLAP)
        if overlaps:
            ids = [i for i in ids if i != _OVERLAP]
        return ids, len(ids) - overlaps

    def _learn(self, words: Iterable[str], remember: bool = True) -> None:
        cache = self._word_ids
        if len(cache) > 1_000_000:
            cache.clear()
        new = [w for w in set(words) if w not in cache]
        # words that differ in edge punctuation only ("fox", "fox," "(fox)") are analysed once
        keys = self.tokenizer.word_keys(new)
        todo = [k for k in dict.fromkeys(keys) if k not in cache]
        term_ids = self._term_ids
        for k, terms in zip(todo, self.tokenizer.analyze_words(todo, remember=remember)):
            ids = term_ids(terms)
            cache[k] = ids if len(ids) < 2 else ids + (_OVERLAP,)
        for w, k in zip(new, keys):
            cache[w] = cache[k]

    def _grow(self, n_slots: int) -> None:
        cap = len(self._alive)
        if n_slots <= cap:
            return
        new = max(n_slots, 2 * cap, 64)
        self._alive = np.concatenate([self._alive, np.zeros(new - cap, bool)])
        self._dl = np.concatenate([self._dl, np.zeros((new - cap, len(self._fields)), np.uint32)])
        self._role = np.concatenate([self._role, np.full(new - cap, -1, np.int32)])
        self._acc = np.zeros(new, dtype=np.float64)
        self._mark = np.zeros(new, dtype=bool)

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

    def _insert(self, doc_id: str, texts: list[tuple[int, str]]) -> None:
        """Place one validated document in a new delta slot (replacing its old version)."""
        per_field = []
        nf = len(self._fields)
        dl = [0] * nf
        for col, text in texts:
            ids, length = self._ids_of_words(self.tokenizer.words(text))
            per_field.append((col, ids))
            dl[col] += length
        if doc_id in self._slot_of:
            self._drop(doc_id)  # no compaction here: it would renumber the term ids above
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

    def _is_compact(self) -> bool:
        """Whether the main segment alone holds everything: no delta, no dead or vacant slot, no unused term."""
        return (not self._delta_docs and not self._dead_main and len(self._ids) == self._main_end
                and len(self._terms) == self._main.n_terms)

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
        self._terms = self._terms.take(used)
        self._vocab = {t: i for i, t in enumerate(self._terms.tolist())}  # type: ignore[misc]
        self._word_ids = {}
        max_tf = int(tf.max()) if len(tf) else 0
        tf = tf.astype(np.uint16 if max_tf < 2**16 else np.uint32)
        self._main = Segment.from_postings(
            term_map[terms].astype(np.int32), renum[slots].astype(np.int32), tf, len(self._terms)
        )
        self._ids = self._ids.take(live)
        self._slot_of = {doc_id: i for i, doc_id in enumerate(self._ids.tolist())}  # type: ignore[misc]
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

    def _avgdl(self) -> list[float]:
        return [scoring.mean_length(t, c) for t, c in zip(self._total_len, self._nonempty)]

    def _base(self, tf: npt.NDArray[np.integer], slots: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
        """``Σ_f w_f sat_f`` of postings with term frequencies ``tf`` in documents ``slots``."""
        p = self.params
        return scoring.field_sum(tf, self._dl[slots], self._avgdl(), self._weights, p.k1, p.b)

    def _refresh_all(self) -> None:
        """Vectorized df and impacts of every term (right after a bulk build: one segment, all alive)."""
        main = self._main
        indptr = main.indptr
        df = np.diff(indptr)
        n = self._n_live
        # math.log per term, exactly as _refresh does it (numpy's vector log may round differently)
        idf = np.fromiter((scoring.idf(d, n) for d in df.tolist()), dtype=np.float64, count=len(df))
        step = 1 << 17  # bounded temporaries
        for a in range(0, main.n_postings, step):
            b = min(a + step, main.n_postings)
            first = int(np.searchsorted(indptr, a, side="right")) - 1
            stop = int(np.searchsorted(indptr, b, side="left"))  # terms first..stop-1 cover [a, b)
            counts = np.diff(np.clip(indptr[first : stop + 1], a, b))
            main.impacts[a:b] = np.repeat(idf[first:stop], counts) * self._base(main.tf[a:b], main.slots[a:b])
        main.refresh_maxima()
        self._df = df
        self._stamp = np.full(len(df), self._version, dtype=np.int64)

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
                seg.set_impacts(term, weight * self._base(seg.tf[a:b], seg.slots[a:b]))
        self._df[term] = df
        self._stamp[term] = self._version
