"""Columnar fact storage for :mod:`thinkingdb.engine.columnar`: sorted key indexes and fact columns.

A fact of relation ``r`` is keyed ``a * n + b`` (``n`` symbols): ``(subject, object)`` in the by-subject
index, ``(object, subject)`` in the by-object one, so a key range ``[v * n, (v + 1) * n)`` holds every
fact with ``v`` at the leading end and ``key % n`` is the other end. An :class:`Index` is a list of
sorted blocks (keys, fact ids); a round appends one block and blocks of similar size are merged
(log-structured: each fact is merged ``O(log N)`` times, never once per round).

:class:`Facts` holds one row per fact id: score, round (0: asserted; a derived fact's round is its
depth), rule, and ``aux`` (the rule's extra variable, or a row of the rule's extras table when it has
several). When a fact improves, its old row goes to ``history`` so proofs built for earlier rounds
stay exact.

>>> ix = Index(10)
>>> ix.add(np.array([12, 17, 31], dtype=np.int64), np.array([0, 1, 2], dtype=np.int32))
>>> ix.lookup(np.array([17, 18], dtype=np.int64)).tolist()
[1, -1]
>>> rows, other, fids = ix.expand(np.array([1, 3, 5], dtype=np.int64))
>>> rows.tolist(), other.tolist(), fids.tolist()
([0, 0, 1], [2, 7, 1], [0, 1, 2])
"""

from __future__ import annotations

import numpy as np

__all__ = ["Index", "Facts", "Grow"]

_EMPTY_I64 = np.zeros(0, np.int64)
_EMPTY_I32 = np.zeros(0, np.int32)


class Index:
    """Sorted ``(key, fact id)`` blocks of one relation in one orientation."""

    __slots__ = ("n", "blocks", "_size")

    def __init__(self, n: int) -> None:
        self.n = n
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, keys: np.ndarray, fids: np.ndarray) -> None:
        """Add facts with sorted, new ``keys``; merge the newest blocks while the one before is at
        most twice as large."""
        if not len(keys):
            return
        self.blocks.append((keys, fids))
        self._size += len(keys)
        while len(self.blocks) > 1 and len(self.blocks[-2][0]) <= 2 * len(self.blocks[-1][0]):
            b2 = self.blocks.pop()
            ks, fs = [self.blocks[-1][0], b2[0]], [self.blocks[-1][1], b2[1]]
            self.blocks[-1] = b2 = None
            self.blocks[-1] = _merge(ks, fs)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """All facts as one sorted block (merging every block once)."""
        if len(self.blocks) > 1:
            ks, fs = [b[0] for b in self.blocks], [b[1] for b in self.blocks]
            self.blocks = []
            self.blocks = [_merge(ks, fs)]
        return self.blocks[0] if self.blocks else (_EMPTY_I64, _EMPTY_I32)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The fact id of each key, -1 where there is none."""
        out = np.full(len(keys), -1, dtype=np.int64)
        for bk, bf in self.blocks:
            pos = np.searchsorted(bk, keys)
            pos[pos == len(bk)] = 0
            hit = bk[pos] == keys
            out[hit] = bf[pos[hit]]
        return out

    def expand(self, vals: np.ndarray):
        """For each row ``i`` and each fact with ``vals[i]`` at the leading end: ``(i, other end,
        fact id)``, as three arrays."""
        n = self.n
        rows, other, fids = [], [], []
        lo_keys = vals * n
        for bk, bf in self.blocks:
            lo = np.searchsorted(bk, lo_keys)
            cnt = np.searchsorted(bk, lo_keys + n) - lo
            total = int(cnt.sum())
            if not total:
                continue
            r = np.repeat(np.arange(len(vals)), cnt)
            pos = np.arange(total) + np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
            rows.append(r)
            other.append(bk[pos] % n)
            fids.append(bf[pos])
        if not rows:
            return _EMPTY_I64, _EMPTY_I64, _EMPTY_I64
        if len(rows) == 1:
            return rows[0], other[0], fids[0].astype(np.int64)
        return np.concatenate(rows), np.concatenate(other), np.concatenate(fids).astype(np.int64)

    def count(self, v: int) -> int:
        """Facts with ``v`` at the leading end."""
        n = self.n
        return sum(int(np.searchsorted(bk, (v + 1) * n) - np.searchsorted(bk, v * n)) for bk, _ in self.blocks)

    def distinct(self) -> int:
        """Distinct leading ends (an upper bound: summed over blocks)."""
        total = 0
        for bk, _ in self.blocks:
            lead = bk // self.n
            total += 1 + int(np.count_nonzero(lead[1:] != lead[:-1]))
        return total

    def all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(key, fact id)``, unsorted across blocks."""
        if not self.blocks:
            return _EMPTY_I64, _EMPTY_I32
        if len(self.blocks) == 1:
            return self.blocks[0]
        return np.concatenate([b[0] for b in self.blocks]), np.concatenate([b[1] for b in self.blocks])

    def flipped(self) -> "Index":
        """The same facts in the other orientation (``(a, b)`` keys become ``(b, a)``)."""
        out = Index(self.n)
        k, f = self.all()
        if len(k):
            fk = (k % self.n) * self.n + k // self.n
            order = np.argsort(fk)
            out.add(fk[order], f[order])
        return out


def _merge(ks: list, fs: list) -> tuple[np.ndarray, np.ndarray]:
    """Sorted blocks of keys (no key in two blocks) and their fact ids as one sorted block; the
    lists are emptied, so each input goes as soon as it is copied (the blocks' owner has already
    let them go): at most about 28 bytes a fact at once, where sorting two concatenated copies
    held 44.

    >>> k, f = _merge([np.array([1, 5, 9]), np.array([4, 10])], [np.array([0, 1, 2]), np.array([3, 4])])
    >>> k.tolist(), f.tolist()
    ([1, 4, 5, 9, 10], [0, 3, 1, 2, 4])
    """
    k = np.concatenate(ks)
    ks.clear()
    order = np.argsort(k, kind="stable")   # sorted runs: a merge
    k = k[order]
    f = np.concatenate(fs)
    fs.clear()
    return k, f[order]


class Grow:
    """A growable 1-D numpy column (capacity grows by half: less slack, and while it grows the old
    and the new array together hold 2.5 times the old capacity, not 3)."""

    __slots__ = ("a", "n")

    def __init__(self, dtype, cap: int = 1024) -> None:
        self.a = np.empty(cap, dtype=dtype)
        self.n = 0

    def extend(self, values: np.ndarray) -> int:
        """Append; returns the index of the first appended value."""
        start, end = self.n, self.n + len(values)
        if end > len(self.a):
            bigger = np.empty(max(end, len(self.a) + len(self.a) // 2), dtype=self.a.dtype)
            bigger[:start] = self.a[:start]
            self.a = bigger
        self.a[start:end] = values
        self.n = end
        return start

    @property
    def view(self) -> np.ndarray:
        return self.a[:self.n]

    def fit(self, values) -> None:
        """Widen the column to int64 if an int32 column cannot hold every one of ``values``."""
        if self.a.dtype == np.int32 and np.size(values) and int(np.max(values)) > np.iinfo(np.int32).max:
            self.a = self.a.astype(np.int64)


class Facts:
    """Per fact id: ``score``, ``round``, ``rule`` (-1: asserted) and ``aux``; ``history`` keeps the
    rows improved facts had before (fact id -> list of ``(round, score, rule, aux)``, oldest first).
    ``aux`` is int32 (a symbol id, or a row of an extras table) and widens to int64 the first time a
    value needs it.

    >>> f = Facts()
    >>> f.append(np.array([0.5]), 1, 0, 7).tolist(), f.aux.a.dtype.name
    ([0], 'int32')
    >>> f.append(np.array([0.5]), 2, 0, 2**31).tolist(), f.aux.a.dtype.name, f.version(0, 1)
    ([1], 'int64', (1, 0.5, 0, 7))
    """

    def __init__(self) -> None:
        self.score = Grow(np.float64)
        self.round = Grow(np.int32)
        self.rule = Grow(np.int32)
        self.aux = Grow(np.int32)
        self.history: dict[int, list[tuple[int, float, int, int]]] = {}

    def __len__(self) -> int:
        return self.score.n

    def append(self, score, round_no: int, rule, aux) -> np.ndarray:
        """New fact ids for the given rows (``rule``/``aux`` arrays or scalars)."""
        m = len(score)
        start = self.score.extend(score)
        self.round.extend(np.full(m, round_no, dtype=np.int32))
        self.rule.extend(np.broadcast_to(np.asarray(rule, dtype=np.int32), (m,)))
        self.aux.fit(aux)
        self.aux.extend(np.broadcast_to(np.asarray(aux, dtype=np.int64), (m,)))
        return np.arange(start, start + m, dtype=np.int32)

    def improve(self, fids: np.ndarray, score, round_no: int, rule, aux) -> None:
        """New best rows for existing facts; their old rows go to ``history``."""
        self.aux.fit(aux)
        sc, rd, ru, ax = self.score.a, self.round.a, self.rule.a, self.aux.a
        for f in fids.tolist():
            self.history.setdefault(f, []).append((int(rd[f]), float(sc[f]), int(ru[f]), int(ax[f])))
        sc[fids], rd[fids], ru[fids], ax[fids] = score, round_no, rule, aux

    def version(self, fid: int, limit: int) -> tuple[int, float, int, int]:
        """The row of ``fid`` as it stood after round ``limit``: ``(round, score, rule, aux)``."""
        cur = (int(self.round.a[fid]), float(self.score.a[fid]), int(self.rule.a[fid]), int(self.aux.a[fid]))
        if cur[0] <= limit:
            return cur
        for old in reversed(self.history.get(fid, ())):
            if old[0] <= limit:
                return old
        raise AssertionError(f"no version of fact {fid} at depth <= {limit}")
