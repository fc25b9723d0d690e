"""Bulk text encoding: many text vectors per numpy call, bit for bit those of :class:`hdc.Tally`.

The one-by-one encoders (``hdc/encoders.py``) spend most of their time in per-token Python and numpy
calls on single 4096-bit rows. Here a batch of texts is encoded together:

1. The batch's distinct tokens get their packed vectors ``T`` (and the rotations ``ρ^j(T)`` of the
   word n-grams, one vectorized shift per ``j``), plus one *vote row* per token,
   ``C[t] = 2·U·bits(t) + 2·K·ones_of_its_character_ngrams(t)``, and the wrapping word sum and member
   count of those components.
2. A text's votes are ``Σ C[t]`` over its tokens plus ``2·O·Σ bits(g)`` over its word n-grams
   ``g = t_i ⊗ ρ(t_{i+1}) ...``. Texts are grouped by (padded) length, so each sum is one gather and
   one ``sum(axis=1)`` over an ``(texts, length, dim)`` block; n-grams are XORed and unpacked per block.
3. ``bit = votes > total``, ties from the same content-derived tie-break vector as :class:`Tally`.

``U, O, K`` are the weights scaled by the smallest power of two ``s`` that makes them all integers, so
the sums are exact integers. The one-by-one path sums ``ones × 2w`` in float64; with such weights every
one of those sums is exact too, so both compare the same numbers and give the same bits. Weights with
no such ``s`` (e.g. 0.3) are not handled here (:func:`weight_scale` returns ``None``), and the caller
encodes one by one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import numpy.typing as npt

from .params import HDCParams
from .tokenrows import TokenCache, _blocks, _positions, _starts, _sum_dtype, token_rows
from .vectors import _random_words, pack_bits, unpack_bits

__all__ = ["weight_scale", "encode_texts", "rotate_rows"]

#: Largest power of two tried to turn the weights into integers.
_MAX_SCALE = 1 << 16

_tie_words = _random_words.__wrapped__  # uncached: tie vectors are one per text and would evict symbols


def weight_scale(weights: Sequence[float]) -> int | None:
    """The smallest power of two ``s <= 2**16`` with ``w·s`` an integer for every weight, else ``None``.

    >>> weight_scale([2.0, 1.0, 1.0]), weight_scale([0.5, 0.25]), weight_scale([0.3])
    (1, 4, None)
    """
    s = 1
    while s <= _MAX_SCALE:
        if all(float(w * s).is_integer() and w * s < 2**40 for w in weights):
            return s
        s *= 2
    return None


def rotate_rows(matrix: npt.NDArray[np.uint64], k: int) -> npt.NDArray[np.uint64]:
    """:func:`hdc.permute` of every row of ``matrix`` (bit ``i`` moves to ``(i + k) mod dim``)."""
    dim = matrix.shape[-1] * 64
    q, r = divmod(k % dim, 64)
    out = np.roll(matrix, q, axis=-1)
    if r:
        carry = np.roll(out, 1, axis=-1) >> np.uint64(64 - r)
        out = (out << np.uint64(r)) | carry
    return out


def encode_texts(
    texts: Sequence[Sequence[Sequence[str]]],
    p: HDCParams,
    weights: tuple[float, float, float],
    *,
    chars: bool,
    order: bool,
    cache: TokenCache | None = None,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Encode texts (each a list of items, each a list of tokens) as weighted majorities.

    ``weights`` = (unigram, word n-gram, character n-gram); ``chars`` / ``order`` switch the character
    and word n-gram components on. A text is the :class:`hdc.Tally` of, item by item, its unigrams
    (``_text_tally``), its word n-grams (not crossing items) and its tokens' character n-grams.
    Returns ``(vectors, present)``: an ``(n, words)`` matrix and whether each text has any member
    (``False``: absent field, zero row). ``weight_scale(weights)`` must not be ``None``.
    ``cache`` keeps the rows of recurring tokens from one call to the next (same settings only).
    """
    n_texts, words, dim, seed = len(texts), p.words, p.dim, p.seed
    vectors = np.zeros((n_texts, words), dtype=np.uint64)
    present = np.zeros(n_texts, dtype=bool)
    scale = weight_scale(weights)
    if scale is None:
        raise ValueError(f"weights {weights} have no exact power-of-two scale; encode one by one")
    su, so, sc = (int(w * scale) for w in weights)
    inc_u = su > 0
    inc_o = order and so > 0 and p.word_ngram >= 2
    inc_c = chars and sc > 0 and p.ngram > 0

    # -- tokens: ids, item boundaries ---------------------------------------------------------------
    vocab: dict[str, int] = {}
    flat: list[int] = []
    text_len = np.zeros(n_texts, dtype=np.int64)
    item_len: list[int] = []
    item_text: list[int] = []
    for i, items in enumerate(texts):
        for item in items:
            if not item:
                continue
            flat.extend([vocab.setdefault(t, len(vocab)) for t in item])
            item_len.append(len(item))
            item_text.append(i)
            text_len[i] += len(item)
    if not flat:
        return vectors, present
    tokens = list(vocab)
    nv = len(tokens)
    pad = nv  # the padding row of every table below is row nv (zeros)
    ids = np.array(flat, dtype=np.intp)
    ids_ext = np.append(ids, pad)
    occurrences = np.bincount(ids, minlength=nv).astype(np.int64)
    tok, table, word_sum, members_per, weight_per, max_vote = token_rows(
        tokens, occurrences, p, su, sc, inc_u, inc_c, cache
    )
    text_start = _starts(text_len)
    occ_text = np.repeat(np.arange(n_texts), text_len)
    # A few long tokens (many character n-grams) can need votes >= 256 and would double the bytes
    # read for every token: their votes are summed apart, the rest gather from a uint8 table.
    extra: dict[int, npt.NDArray[np.int64]] = {}
    if table.dtype != np.uint8:
        big = table.max(axis=1) >= 256
        if big.sum() * 8 < nv:
            for o in np.flatnonzero(big[ids]).tolist():
                t = int(occ_text[o])
                row = table[ids[o]].astype(np.int64)
                extra[t] = extra[t] + row if t in extra else row
            table[big] = 0
            table = table.astype(np.uint8)
            max_vote = 255
    members = np.bincount(occ_text, weights=members_per[ids], minlength=n_texts).astype(np.int64)
    totals = np.bincount(occ_text, weights=weight_per[ids], minlength=n_texts).astype(np.int64)

    # -- word n-grams t_i ⊗ ρ(t_{i+1}) ⊗ ... inside each item, n = 2 .. word_ngram ---------------------
    n_max = p.word_ngram
    gcount = np.zeros(n_texts, dtype=np.int64)
    if inc_o:
        rotated = [tok] + [rotate_rows(tok, j) for j in range(1, n_max)]
        ilen = np.array(item_len, dtype=np.int64)
        item_arr = np.repeat(np.arange(ilen.shape[0]), ilen)
        pos_in_item = np.arange(ids.shape[0]) - _starts(ilen)[item_arr]
        text_of_item = np.array(item_text, dtype=np.int64)
        gtexts, gtups = [], []
        for n in range(2, n_max + 1):
            first = np.flatnonzero(pos_in_item + n <= ilen[item_arr])
            tup = np.full((first.size, n_max), pad, dtype=np.intp)
            for j in range(n):
                tup[:, j] = ids[first + j]
            gtexts.append(text_of_item[item_arr[first]])
            gtups.append(tup)
        gtext = np.concatenate(gtexts)
        by_text = np.argsort(gtext, kind="stable")
        gtup = np.concatenate(gtups + [np.full((1, n_max), pad, dtype=np.intp)])[np.append(by_text, -1)]
        gcount = np.bincount(gtext, minlength=n_texts).astype(np.int64)
        gstart = _starts(gcount)
        members += gcount
        totals += so * gcount

    # -- text blocks: votes, word sums, majority with the content-derived tie-break -------------------
    for sel, length in _blocks(text_len, dim * table.itemsize):
        rows = ids_ext[_positions(text_start, text_len, sel, length)]
        bound = max_vote * length
        votes = table[rows].sum(axis=1, dtype=_sum_dtype(bound))
        if extra:
            with_extra = [(k, extra[t]) for k, t in enumerate(sel.tolist()) if t in extra]
            if with_extra:
                votes = votes.astype(np.int64)
                for k, row in with_extra:
                    votes[k] += row
        wsum = np.add.reduce(word_sum[rows], axis=1, dtype=np.uint64)
        if inc_o:
            glen = int(gcount[sel].max())
            if glen:
                tup = gtup[_positions(gstart, gcount, sel, glen)]  # (texts, glen, n_max)
                g = rotated[0][tup[..., 0]]
                for j in range(1, n_max):
                    np.bitwise_xor(g, rotated[j][tup[..., j]], out=g)
                wsum += np.add.reduce(g, axis=1, dtype=np.uint64)
                bound += 2 * so * glen
                vdt = np.int32 if bound < 1 << 31 else np.int64
                ones = unpack_bits(g).sum(axis=1, dtype=_sum_dtype(glen))
                votes = votes.astype(vdt) + ones.astype(vdt) * vdt(2 * so)
        total = totals[sel, None]
        out = votes > total
        tied = votes == total
        for i in np.flatnonzero(tied.any(axis=1)).tolist():
            tie = _tie_words(wsum[i].astype("<u8").tobytes(), dim, seed, b"tie")
            out[i] |= tied[i] & unpack_bits(tie).astype(bool)
        vectors[sel] = pack_bits(out)
    present = members > 0
    vectors[~present] = 0
    return vectors, present
