"""Per-token rows of the bulk encoder (:mod:`hdc.bulk`), and the cache that keeps them between batches.

A token's *vote row* is ``2·U·bits(t) + 2·K·Σ bits(g)`` over its character n-grams ``g`` (``U``, ``K``:
the integer-scaled unigram and character weights); with it come the token's vector, the wrapping
word sum of its components, their number and their scaled weight. The helpers below group ragged
lists (texts of tokens, tokens of n-grams) into padded blocks, so that each sum is one numpy call.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .params import HDCParams
from .vectors import _random_words, unpack_bits

__all__ = ["TokenCache", "token_rows"]

#: Bytes of rows per block of (groups x padded length) rows.
_BLOCK_BITS_BYTES = 1 << 24


def _sum_dtype(bound: int) -> type:
    if bound < 1 << 8:
        return np.uint8
    if bound < 1 << 16:
        return np.uint16
    if bound < 1 << 31:
        return np.int32
    return np.int64


_PAD_STEPS = [1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128]


def _padded(n: int) -> int:
    for step in _PAD_STEPS:
        if n <= step:
            return step
    return -(-n // 64) * 64


def _positions(
    starts: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], sel: npt.NDArray[np.intp], length: int
) -> npt.NDArray[np.int64]:
    """``pos[i, j]`` = the flat row number of the j-th row of group ``sel[i]`` (groups are stored one
    after the other from ``starts``), or ``-1`` past its end: the caller appends one padding row."""
    col = np.arange(length, dtype=np.int64)
    pos = starts[sel, None] + col
    pos[col >= counts[sel, None]] = -1
    return pos


def _blocks(counts: npt.NDArray[np.int64], row_bytes: int, max_groups: int = 512) -> list[tuple[npt.NDArray[np.intp], int]]:
    """Groups with rows, by padded row count: ``(groups, padded length)`` blocks of at most about
    ``_BLOCK_BITS_BYTES`` of rows and ``max_groups`` groups."""
    have = np.flatnonzero(counts)
    if have.size == 0:
        return []
    padded = np.array([_padded(c) for c in counts[have].tolist()], dtype=np.int64)
    out = []
    for length in np.unique(padded).tolist():
        groups = have[padded == length]
        per = max(1, min(max_groups, _BLOCK_BITS_BYTES // (row_bytes * length)))
        out.extend((groups[lo : lo + per], length) for lo in range(0, groups.size, per))
    return out


def _starts(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    starts = np.zeros(counts.shape[0], dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return starts


def char_ngrams(token: str, n: int = 3) -> list[str]:
    """The character n-grams of ``#token#`` (the whole padded token if it is shorter than n).

    >>> char_ngrams("cat")
    ['#ca', 'cat', 'at#']
    >>> char_ngrams("a", 4)
    ['#a#']
    """
    padded = f"#{token}#"
    if len(padded) <= n:
        return [padded]
    return [padded[i : i + n] for i in range(len(padded) - n + 1)]


def _gram_tables(
    tokens: list[str], p: HDCParams
) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """Per token: per-bit count of ones over its character n-grams (uint8 when every token has
    fewer than 256), their number, their word sum."""
    gram_id: dict[str, int] = {}
    flat: list[int] = []
    counts = np.zeros(len(tokens), dtype=np.int64)
    n = p.ngram
    for j, t in enumerate(tokens):
        gs = char_ngrams(t, n)
        flat.extend([gram_id.setdefault(g, len(gram_id)) for g in gs])
        counts[j] = len(gs)
    table = np.zeros((len(gram_id) + 1, p.words), dtype=np.uint64)  # last row: padding
    dim, seed = p.dim, p.seed
    for g, j in gram_id.items():
        table[j] = _random_words(g.encode("utf-8"), dim, seed, b"gram")
    flat_ext = np.array(flat + [len(gram_id)], dtype=np.intp)
    ones = np.empty((len(tokens), p.dim), dtype=_sum_dtype(int(counts.max())))
    word_sum = np.empty((len(tokens), p.words), dtype=np.uint64)
    starts = _starts(counts)
    for sel, length in _blocks(counts, p.dim):
        rows = table[flat_ext[_positions(starts, counts, sel, length)]]
        ones[sel] = unpack_bits(rows).sum(axis=1, dtype=ones.dtype)
        word_sum[sel] = np.add.reduce(rows, axis=1, dtype=np.uint64)
    return ones, counts, word_sum


class TokenCache:
    """Rows of frequent tokens kept between the batches of one bulk build.

    A token's vote row, vector, word sum and counts depend only on the token and the settings, so a
    cached token is not hashed and unpacked again. The cache counts every token's occurrences;
    a token met at least twice is kept when there is room, or in place of a kept token met fewer
    times (word frequencies are Zipfian: a few thousand tokens make most occurrences). Beyond
    ``count_limit`` distinct tokens, those met only once are forgotten, so the counts stay bounded. At most
    ``budget`` bytes of rows; only rows whose votes fit a byte are kept.
    """

    count_limit = 1_000_000  # distinct tokens counted before the ones met once are forgotten

    def __init__(self, p: HDCParams, budget: int = 48 << 20) -> None:
        self.key: tuple[object, ...] | None = None
        self.capacity = max(0, budget // (p.dim + 16 * p.words + 24))
        self.slot: dict[str, int] = {}
        self.owner: list[str] = []  # token of each used slot
        self.count: dict[str, int] = {}
        self.vote = np.empty((self.capacity, p.dim), dtype=np.uint8)
        self.tok = np.empty((self.capacity, p.words), dtype=np.uint64)
        self.word_sum = np.empty((self.capacity, p.words), dtype=np.uint64)
        self.members = np.empty(self.capacity, dtype=np.int64)
        self.weight = np.empty(self.capacity, dtype=np.int64)
        self.uses = np.zeros(self.capacity, dtype=np.int64)  # occurrences of each slot's token

    def admit(self, tokens: list[str], occurrences: npt.NDArray[np.int64], miss: npt.NDArray[np.intp],
              votes: npt.NDArray[np.integer], tok: npt.NDArray[np.uint64], word_sum: npt.NDArray[np.uint64],
              members: npt.NDArray[np.int64], weight: npt.NDArray[np.int64]) -> None:
        """Count this batch's occurrences and keep the rows of frequent missed tokens.

        ``votes`` holds the rows of the missed tokens (``miss[i]`` is the token of ``votes[i]``);
        the other arrays are indexed by token.
        """
        count = self.count
        if len(count) > self.count_limit:  # forget tokens met once: rare ones never earn a slot anyway
            count = self.count = {t: c for t, c in count.items() if c > 1 or t in self.slot}
        totals = np.empty(len(tokens), dtype=np.int64)
        for j, (t, c) in enumerate(zip(tokens, occurrences.tolist())):
            totals[j] = count[t] = count.get(t, 0) + c
        hit = [self.slot[t] for t in tokens if t in self.slot]
        if hit:
            self.uses[hit] = [count[self.owner[s]] for s in hit]
        if self.capacity == 0 or miss.size == 0:
            return
        want = np.flatnonzero(totals[miss] >= 2)
        if want.size == 0:
            return
        want = want[votes[want].max(axis=1) < 256]
        want = want[np.argsort(-totals[miss[want]], kind="stable")]
        used = len(self.owner)
        free = min(self.capacity - used, want.size)
        slots = list(range(used, used + free))
        rest = want[free:]
        if rest.size:  # replace the least used slots by more frequent tokens
            low = np.argsort(self.uses[:used], kind="stable")[: rest.size]
            rest = rest[: low.size]  # no more candidates than slots there are to replace
            better = totals[miss[rest]] > self.uses[low]
            rest, low = rest[better], low[better]
            for s in low.tolist():
                del self.slot[self.owner[s]]
            slots += low.tolist()
        take = np.concatenate([want[:free], rest]) if rest.size else want[:free]
        if not slots:
            return
        rows = np.array(slots, dtype=np.intp)
        src = miss[take]
        self.vote[rows] = votes[take]
        self.tok[rows] = tok[src]
        self.word_sum[rows] = word_sum[src]
        self.members[rows] = members[src]
        self.weight[rows] = weight[src]
        self.uses[rows] = totals[src]
        for r, j in zip(slots, src.tolist()):
            t = tokens[j]
            if r < len(self.owner):
                self.owner[r] = t
            else:
                self.owner.append(t)
            self.slot[t] = r


def token_rows(
    tokens: list[str], occurrences: npt.NDArray[np.int64], p: HDCParams, su: int, sc: int, inc_u: bool, inc_c: bool,
    cache: TokenCache | None,
) -> tuple[
    npt.NDArray[np.uint64], npt.NDArray[np.integer], npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64], int
]:
    """Per token (plus a zero padding row): vector, vote row ``2·U·bits + 2·K·gram ones``, word sum
    of its components, their number and scaled weight; and the largest vote value."""
    nv, dim, words, seed = len(tokens), p.dim, p.words, p.seed
    if cache is not None:
        key = (su, sc, inc_u, inc_c, p.dim, p.seed, p.ngram)
        if cache.key is None:
            cache.key = key
        elif cache.key != key:
            cache = None
    if cache is not None:
        get = cache.slot.get
        hit = np.array([get(t, -1) for t in tokens] + [-2], dtype=np.intp)
    else:
        hit = np.full(nv + 1, -1, dtype=np.intp)
    hit[nv] = -2  # the padding row: neither hit nor miss
    is_hit = np.flatnonzero(hit >= 0)
    miss = np.flatnonzero(hit == -1)
    tok = np.zeros((nv + 1, words), dtype=np.uint64)
    members_per = np.zeros(nv + 1, dtype=np.int64)
    weight_per = np.zeros(nv + 1, dtype=np.int64)
    word_sum = np.zeros((nv + 1, words), dtype=np.uint64)
    for j in miss.tolist():
        tok[j] = _random_words(tokens[j].encode("utf-8"), dim, seed, b"tok")
    gram_max = 0
    g_ones = None
    if inc_u:
        members_per[miss] = 1
        weight_per[miss] = su
        word_sum[miss] = tok[miss]
    if inc_c and miss.size:
        g_ones, g_counts, g_sum = _gram_tables([tokens[j] for j in miss.tolist()], p)
        members_per[miss] += g_counts
        weight_per[miss] += sc * g_counts
        word_sum[miss] += g_sum
        gram_max = int(g_counts.max())
    if cache is not None and is_hit.size:
        rows = hit[is_hit]
        tok[is_hit] = cache.tok[rows]
        members_per[is_hit] = cache.members[rows]
        weight_per[is_hit] = cache.weight[rows]
        word_sum[is_hit] = cache.word_sum[rows]
        if inc_c:
            gram_max = max(gram_max, int(cache.members[rows].max()) - int(inc_u))
    max_vote = 2 * su * int(inc_u) + 2 * sc * gram_max
    cdt = _sum_dtype(max_vote)
    table = np.zeros((nv + 1, dim), dtype=cdt)
    fresh = table[:0]
    if miss.size:
        if g_ones is not None:
            fresh = np.multiply(g_ones, 2 * sc, dtype=cdt, casting="unsafe")
            del g_ones
            if inc_u:
                fresh += np.multiply(unpack_bits(tok[miss]), 2 * su, dtype=cdt, casting="unsafe")
        else:
            fresh = np.multiply(unpack_bits(tok[miss]), 2 * su, dtype=cdt, casting="unsafe")
        table[miss] = fresh
    if cache is not None:
        if is_hit.size:
            table[is_hit] = cache.vote[hit[is_hit]]
        cache.admit(tokens, occurrences, miss, fresh, tok, word_sum, members_per, weight_per)
    return tok, table, word_sum, members_per, weight_per, max_vote


