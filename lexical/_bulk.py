"""The bulk build of a :class:`lexical.BM25Index` (``rebuild``): validated documents tokenized in chunks
of :data:`_CHUNK` (one stemmer call each), their postings counted per chunk and merged into one main
segment, then every term's ``df`` and impacts computed at once. The word cache is bounded while it
runs (:attr:`BulkBuild._BULK_WORDS`) and the cyclic garbage collector is paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import chain

import numpy as np

from .segment import Segment, count_postings
from .store import _OVERLAP, PostingStore

__all__ = ["BulkBuild"]

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


class BulkBuild(PostingStore):
    """A posting store's bulk build (a base of :class:`lexical.BM25Index`)."""

    # Raw words whose terms bulk indexing keeps cached; beyond that only the current chunk's are kept.
    _BULK_WORDS = 250_000

    def _load(self, items: list[tuple[str, list[tuple[int, str]]]]) -> None:
        """Replace everything by validated documents: tokenize in chunks, build one main segment.

        ``items`` is consumed (emptied).
        """
        n = len(items)
        self._reset()
        nf = len(self._fields)
        self._grow(n)
        chunks = []
        dl = np.zeros((n, nf), dtype=np.int64)
        words_of = self.tokenizer.words
        cache: dict[str, tuple[int, ...]] = self._word_ids
        getter = cache.__getitem__
        with _no_gc():
            for start in range(0, n, _CHUNK):
                split = [[(col, words_of(text)) for col, text in texts] for _, texts in items[start : start + _CHUNK]]
                seen = set(chain.from_iterable(ws for entries in split for _, ws in entries))
                cache = self._word_ids
                if len(cache) > self._BULK_WORDS:
                    # bounded memory: keep the words of this chunk (the frequent ones recur in every chunk)
                    cache = self._word_ids = {w: cache[w] for w in seen if w in cache}
                self._learn([w for w in seen if w not in cache], remember=False)
                del seen
                getter = cache.__getitem__
                flat: list[int] = []
                lengths, e_slot, e_col = [], [], []
                for offset, entries in enumerate(split):
                    for col, ws in entries:
                        before = len(flat)
                        flat.extend(chain.from_iterable(map(getter, ws)))
                        lengths.append(len(flat) - before)
                        e_slot.append(start + offset)
                        e_col.append(col)
                del split
                e_slot_a = np.array(e_slot, dtype=np.int32)
                e_col_a = np.array(e_col, dtype=np.intp)
                lengths_a = np.array(lengths, dtype=np.int64)
                flat_a = np.array(flat, dtype=np.int32)
                del flat
                marks = flat_a == _OVERLAP
                if marks.any():  # compound words: drop the markers, count one position less for each
                    entry = np.repeat(np.arange(len(lengths_a)), lengths_a)
                    overlaps = np.bincount(entry[marks], minlength=len(lengths_a))
                    del entry
                    flat_a = flat_a[~marks]
                    lengths_a -= overlaps
                    np.add.at(dl, (e_slot_a, e_col_a), lengths_a - overlaps)
                else:
                    np.add.at(dl, (e_slot_a, e_col_a), lengths_a)
                del marks
                chunks.append(
                    count_postings(
                        flat_a,
                        np.repeat(e_slot_a, lengths_a),
                        np.repeat(e_col_a, lengths_a) if nf > 1 else None,
                        nf,
                    )
                )
        # the raw-word cache only pays while tokenizing in bulk; free it before the big arrays
        self._word_ids = {}
        del cache, getter
        role = np.full(n, -1, dtype=np.int32)
        for slot, (doc_id, texts) in enumerate(items):
            self._ids.append(doc_id)
            self._slot_of[doc_id] = slot
            if self._role_col is not None:
                role_text = " ".join(t for c, t in texts if c == self._role_col)
                if role_text.strip():
                    role[slot] = self._role_code(self._role_key(role_text))
        items.clear()  # consumed: free the documents' containers before the big arrays
        self._alive[:n] = True
        self._dl[:n] = dl
        self._role[:n] = role
        self._n_live = n
        self._total_len = dl.sum(axis=0).tolist()
        self._nonempty = (dl > 0).sum(axis=0).tolist()
        self._main = Segment.from_chunks(chunks, len(self._terms), nf)
        del chunks
        self._main_end = n
        self._refresh_all()
