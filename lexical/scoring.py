"""Pure BM25F scoring functions; the index calls only these, so the formula lives here.

The score of document ``d`` for a query ``q`` (Robertson & Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009; field weights as in
DS009)::

    score(q, d) = boost(d) × Σ_{c in clauses(q)} qf(c) × s(c, d)

    s(t, d)     = idf(t) × Σ_f w_f × sat(tf_f(t), dl_f, avgdl_f)            for a term t
    s(c, d)     = max(s(whole, d), Σ_{p in parts} s(p, d))                   for a compound word c

    sat(tf, dl, avgdl) = tf × (k1 + 1) / (tf + k1 × (1 − b + b × dl / avgdl))
    idf(t)             = ln(1 + (N − df + 0.5) / (df + 0.5))

* ``N`` is the number of live documents and ``df`` the number of live documents
  that contain ``t`` in *any* field (one idf per term, shared by the fields).
  This idf (Lucene's) is never negative, unlike the original Robertson–Spärck Jones one.
* A query's *clauses* are its distinct single-term words and its distinct
  compound words (``wing-body``: whole form ``wing-bodi``, parts ``wing``,
  ``bodi``; :meth:`Tokenizer.groups <lexical.tokenizer.Tokenizer.groups>`).
  A compound scores the better of its two readings, as one word or as its
  parts, so a document that hyphenates the same way is not paid for the word
  twice (once through the rare whole form, again through the parts). Documents
  index the whole form and every part, as the tokenizer emits them.
* ``dl_f`` is the number of word positions of field ``f`` in ``d``: its tokens,
  less one per compound word, whose whole form shares a position with its parts
  (Lucene's ``discountOverlaps``). ``avgdl_f`` is the mean
  of ``dl_f`` over the documents whose field ``f`` is not empty (Lucene's
  convention: a missing field does not shorten the average).
* ``qf(c)`` is how often the clause occurs in the query: clauses are
  de-duplicated and weighted by their count, which equals summing per occurrence.
* ``boost(d)`` is the role boost (1.3 by default) when the search asks for a role
  and the document's ``role`` field has the same tokens, else 1.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["idf", "saturation", "field_sum", "mean_length"]

_TINY = 1e-300


def idf(df: int, n: int) -> float:
    """Inverse document frequency ``ln(1 + (N − df + 0.5) / (df + 0.5))``.

    >>> round(idf(1, 3), 6)   # ln(1 + 2.5 / 1.5) = ln(8/3)
    0.980829
    >>> idf(3, 3) > 0
    True
    """
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def saturation(tf: float, dl: float, avgdl: float, k1: float, b: float) -> float:
    """BM25 term-frequency saturation ``tf (k1+1) / (tf + k1 (1 − b + b dl/avgdl))``; 0 when ``tf`` is 0.

    >>> saturation(1, 2, 2.0, 1.2, 0.75)   # 2.2 / 2.2
    1.0
    >>> round(saturation(2, 4, 2.0, 1.2, 0.75), 6)   # 4.4 / (2 + 1.2 × 1.75)
    1.073171
    >>> saturation(0, 4, 2.0, 0.0, 1.0)
    0.0
    """
    if tf <= 0:
        return 0.0
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl))


def mean_length(total: int, count: int) -> float:
    """Average field length over the ``count`` documents where the field is not empty (1.0 if none).

    >>> mean_length(10, 4), mean_length(0, 0)
    (2.5, 1.0)
    """
    return total / count if count > 0 else 1.0


def field_sum(
    tf: npt.NDArray[np.integer],
    dl: npt.NDArray[np.integer],
    avgdl: npt.ArrayLike,
    weights: npt.ArrayLike,
    k1: float,
    b: float,
) -> npt.NDArray[np.float64]:
    """``Σ_f w_f × sat(tf_f, dl_f, avgdl_f)`` for many postings at once (float64).

    ``tf`` and ``dl`` have shape ``(postings, fields)``; fields are summed in
    column order, so the same inputs always give bit-identical results.

    >>> field_sum(np.array([[1, 0], [2, 1]]), np.array([[2, 3], [4, 1]]), [2.0, 2.0], [1.5, 0.5], 1.2, 0.75)
    array([1.5       , 2.23832753])
    """
    tf = np.asarray(tf)
    dl = np.asarray(dl)
    avg = [float(a) for a in np.asarray(avgdl, dtype=np.float64)]
    w = [float(x) for x in np.asarray(weights, dtype=np.float64)]
    out = np.zeros(tf.shape[0], dtype=np.float64)
    # k1 (1 − b + b dl/avgdl) = k1 (1 − b) + (k1 b / avgdl) dl; the denominator is 0 only
    # when tf and k1 (or 1 − b and dl) are 0, where the numerator is 0 too.
    for f in range(tf.shape[1]):
        tff = tf[:, f].astype(np.float64)
        den = dl[:, f] * (k1 * b / avg[f]) + (tff + k1 * (1.0 - b))
        out += w[f] * (tff * (k1 + 1.0) / np.maximum(den, _TINY))
    return out
