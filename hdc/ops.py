"""Operations on packed hypervectors: bind, bundle, permute, similarity and the batch scan.

Formulas (``dim`` bits, ``h(a, b)`` = number of differing bits):

- bind ``a ⊗ b = a XOR b``: self-inverse, so ``(a ⊗ b) ⊗ b = a`` (unbinding is binding again);
  the result is unrelated (similarity ~0.5) to both inputs.
- bundle ``[v_1 + ... + v_n]`` = bitwise (weighted) majority. When the votes for a bit are exactly
  half (an even count, or weights) the bit is taken from a tie-break vector. By default that vector
  is derived from the bundle's content: ``T = H(Σ v_i mod 2^64, word-wise)``, the keyed-BLAKE2b
  expansion (as in :func:`hdc.random_vector`, namespace ``"tie"``) of the wrapping sum of the
  members' words. It is deterministic and does not depend on the order of the members. One fixed
  tie-break vector shared by every bundle would be a bias: two unrelated 2-member bundles would both
  copy it wherever they tie (1/4 of the bits each, so 1/4 of the bits both), and agree on
  0.5 + 0.25 * 0.5 = 0.625 of their bits instead of 0.50.
- permute ``ρ^k(v)``: rotation of the bit vector, bit ``i`` moves to bit ``(i + k) mod dim``.
  ``ρ^k(a)`` is unrelated to ``a`` for ``0 < k < dim``; it marks position, so ``a ⊗ ρ(b) ≠ b ⊗ ρ(a)``.
- similarity ``sim(a, b) = 1 - h(a, b) / dim``: 1 for equal vectors, ~0.50 for unrelated ones.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import numpy.typing as npt

from .errors import DimensionError
from .params import DEFAULT_SEED
from .vectors import Vector, _random_words, as_matrix, as_vector, pack_bits, random_vector, unpack_bits

__all__ = [
    "bind",
    "unbind",
    "bundle",
    "permute",
    "hamming",
    "similarity",
    "batch_hamming",
    "batch_similarity",
    "top_k",
    "popcount",
    "popcount_table",
    "tie_break_vector",
]

_BYTE_COUNTS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount_table(words: npt.NDArray[np.uint64], out: npt.NDArray[np.uint8] | None = None) -> npt.NDArray[np.uint8]:
    """Set bits of each ``uint64`` word through a 256-entry byte table (for numpy < 2.0).

    >>> popcount_table(np.array([0, 1, 2**64 - 1], dtype=np.uint64)).tolist()
    [0, 1, 64]
    """
    arr = np.ascontiguousarray(words, dtype=np.uint64)
    per_byte = _BYTE_COUNTS[arr.view(np.uint8)].reshape(arr.shape + (8,))
    return per_byte.sum(axis=-1, dtype=np.uint8, out=out)


def _popcount_native(words: npt.NDArray[np.uint64], out: npt.NDArray[np.uint8] | None = None) -> npt.NDArray[np.uint8]:
    return np.bitwise_count(words, out=out)  # type: ignore[no-any-return]


_HAVE_BITWISE_COUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0
_popcount = _popcount_native if _HAVE_BITWISE_COUNT else popcount_table


def popcount(words: npt.NDArray[np.uint64], out: npt.NDArray[np.uint8] | None = None) -> npt.NDArray[np.uint8]:
    """Set bits of each ``uint64`` word: ``np.bitwise_count`` (numpy >= 2.0) or :func:`popcount_table`.

    >>> popcount(np.array([0, 1, 2**64 - 1], dtype=np.uint64)).tolist()
    [0, 1, 64]
    """
    return _popcount(words, out=out)


def _same_dim(a: Vector, b: Vector) -> None:
    if a.shape != b.shape:
        raise DimensionError(f"vectors differ in dimension: {a.shape[-1] * 64} vs {b.shape[-1] * 64} bits")


def bind(a: Vector, b: Vector, *more: Vector) -> Vector:
    """Bind vectors with XOR (associative, commutative, self-inverse).

    >>> a, b = random_vector("colour", 128), random_vector("red", 128)
    >>> bool((bind(bind(a, b), b) == a).all())
    True
    """
    out = as_vector(a).copy()
    for other in (b, *more):
        other = as_vector(other)
        _same_dim(out, other)
        np.bitwise_xor(out, other, out=out)
    return out


def unbind(bound: Vector, key: Vector) -> Vector:
    """Recover the partner of ``key`` from ``bound = bind(key, value)``; XOR is its own inverse.

    >>> k, v = random_vector("k", 64), random_vector("v", 64)
    >>> bool((unbind(bind(k, v), k) == v).all())
    True
    """
    return bind(bound, key)


def tie_break_vector(matrix: npt.NDArray[np.uint64], seed: int = DEFAULT_SEED) -> Vector:
    """The default tie-break vector of a bundle of the rows of ``matrix`` (see the module docstring).

    It is the same for any order of the rows and unrelated to every row:

    >>> m = np.stack([random_vector("a", 128), random_vector("b", 128)])
    >>> bool((tie_break_vector(m) == tie_break_vector(m[::-1])).all())
    True
    """
    m = as_matrix(matrix)
    # Wrapping sum: order-free, and duplicates do not cancel as they would under XOR.
    total = np.add.reduce(m, axis=0, dtype=np.uint64)
    return _random_words(total.astype("<u8").tobytes(), m.shape[1] * 64, seed, b"tie")


def bundle(
    vectors: Sequence[Vector] | npt.NDArray[np.uint64],
    weights: Sequence[float] | npt.NDArray[np.float64] | None = None,
    *,
    tie_break: Vector | None = None,
    seed: int = DEFAULT_SEED,
) -> Vector:
    """Bitwise (weighted) majority of ``vectors``; tied bits come from ``tie_break``.

    A bit is 1 when the (weighted) votes for 1 exceed half the total, 0 when they are below half,
    and the ``tie_break`` bit when they are exactly half (default: :func:`tie_break_vector` of the
    members, keyed by ``seed``). ``vectors`` is a sequence of vectors or an ``(n, words)`` matrix.

    >>> ones, zero = np.array([2**64 - 1], dtype=np.uint64), np.array([0], dtype=np.uint64)
    >>> bundle([ones, ones, zero]).tolist() == ones.tolist()
    True
    >>> tb = np.array([0b1010], dtype=np.uint64)
    >>> bundle([ones, zero], tie_break=tb).tolist()   # every bit tied: the tie-break wins
    [10]
    >>> bundle([ones, zero], [2, 1]).tolist() == ones.tolist()   # weights break the tie
    True
    """
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        matrix = as_matrix(vectors)
    else:
        if len(vectors) == 0:
            raise DimensionError("bundle of no vectors")
        first = as_vector(vectors[0])
        for v in vectors:
            _same_dim(first, as_vector(v))
        matrix = np.stack(list(vectors))
    n, words = matrix.shape
    if n == 0:
        raise DimensionError("bundle of no vectors")
    dim = words * 64
    bits = unpack_bits(matrix)
    acc = np.uint16 if n < 1 << 15 else np.int64  # narrow sums are much faster; 2 * count must fit
    counts: npt.NDArray[np.float64] | npt.NDArray[np.int64]
    total: float
    if weights is None:
        counts = bits.sum(axis=0, dtype=acc) * 2
        total = n
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"bundle weights must be {n} finite values >= 0 with a positive sum")
        counts = np.zeros(dim, dtype=np.float64)
        # Runs of equal weights (the encoders pass a few runs): integer sums of row slices, one scaling each.
        cuts = [0, *(np.flatnonzero(w[1:] != w[:-1]) + 1).tolist(), n]
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if w[lo]:
                counts += bits[lo:hi].sum(axis=0, dtype=acc) * (2 * w[lo])
        total = float(w.sum())
    out = counts > total
    tied = counts == total
    if tied.any():
        tie = as_vector(tie_break, dim) if tie_break is not None else tie_break_vector(matrix, seed)
        out |= tied & unpack_bits(tie).astype(bool)
    return pack_bits(out)


def permute(vector: Vector, k: int = 1) -> Vector:
    """Rotate the bit vector by ``k`` places: bit ``i`` moves to ``(i + k) mod dim``.

    Negative ``k`` rotates back, so ``permute(permute(v, k), -k) == v``.

    >>> v = np.array([1, 0], dtype=np.uint64)        # dim 128, only bit 0 set
    >>> permute(v, 1).tolist(), permute(v, 64).tolist(), permute(v, -1).tolist()
    ([2, 0], [0, 1], [0, 9223372036854775808])
    """
    v = as_vector(vector)
    words = v.shape[0]
    dim = words * 64
    k %= dim
    q, r = divmod(k, 64)
    out = np.roll(v, q)
    if r:
        carry = np.roll(out, 1) >> np.uint64(64 - r)
        out = (out << np.uint64(r)) | carry
    return out


def hamming(a: Vector, b: Vector) -> int:
    """Number of bits in which ``a`` and ``b`` differ.

    >>> hamming(np.array([0b1011], dtype=np.uint64), np.array([0b0001], dtype=np.uint64))
    2
    """
    a, b = as_vector(a), as_vector(b)
    _same_dim(a, b)
    return int(popcount(a ^ b).sum(dtype=np.int64))


def similarity(a: Vector, b: Vector) -> float:
    """``1 - hamming(a, b) / dim``: 1.0 for equal vectors, about 0.5 for unrelated ones.

    >>> similarity(random_vector("a"), random_vector("a"))
    1.0
    >>> round(similarity(random_vector("a"), random_vector("b")), 1)
    0.5
    """
    return 1.0 - hamming(a, b) / (as_vector(a).shape[0] * 64)


_EXECUTOR: ThreadPoolExecutor | None = None
#: Rows per block: a block of XOR results stays in a core's L2 cache (64 words * 8 B * 2048 = 1 MiB).
_BLOCK_BYTES = 1 << 20
#: Below this many words a scan runs on the calling thread (thread start-up would dominate).
_THREAD_MIN_WORDS = 1 << 20
#: Blocks per task of a threaded scan (8 blocks = 8 MiB of rows at 1 MiB blocks).
_TASK_BLOCKS = 8


def _executor(workers: int) -> ThreadPoolExecutor:
    global _EXECUTOR
    if _EXECUTOR is None or _EXECUTOR._max_workers < workers:
        _EXECUTOR = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hdc-scan")
    return _EXECUTOR


_LOCAL = threading.local()


def _buffers(block: int, words: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8], npt.NDArray[np.uint16]]:
    """This thread's scan buffers (kept between calls: about 1.1 MiB per thread)."""
    bufs = getattr(_LOCAL, "bufs", None)
    if bufs is None or bufs[0].shape != (block, words):
        bufs = (
            np.empty((block, words), dtype=np.uint64),
            np.empty((block, words), dtype=np.uint8),
            np.empty(block, dtype=np.uint16),
        )
        _LOCAL.bufs = bufs
    return bufs


def _scan(
    query: Vector,
    matrix: npt.NDArray[np.uint64],
    rows: npt.NDArray[np.intp] | None,
    out: npt.NDArray[np.int32],
    start: int,
    stop: int,
    block: int,
) -> None:
    """Hamming distances of positions ``start:stop`` into ``out``, one cache-sized block at a time."""
    words = matrix.shape[1]
    xor_buf, count_buf, sum_buf = _buffers(block, words)
    narrow = words * 64 < 1 << 16  # row sums fit uint16: einsum's uint16 reduction is the fastest numpy has
    for s in range(start, stop, block):
        e = min(s + block, stop)
        x, c = xor_buf[: e - s], count_buf[: e - s]
        if rows is None:
            np.bitwise_xor(matrix[s:e], query, out=x)
        else:
            np.take(matrix, rows[s:e], axis=0, out=x)
            np.bitwise_xor(x, query, out=x)
        _popcount(x, out=c)
        if narrow:
            np.einsum("ij->i", c, out=sum_buf[: e - s], dtype=np.uint16, casting="unsafe")
            out[s:e] = sum_buf[: e - s]
        else:
            np.sum(c, axis=1, dtype=np.int32, out=out[s:e])


def batch_hamming(
    query: Vector,
    matrix: npt.NDArray[np.uint64],
    *,
    rows: npt.ArrayLike | None = None,
    out: npt.NDArray[np.int32] | None = None,
    workers: int | None = None,
) -> npt.NDArray[np.int32]:
    """Hamming distance from ``query`` to every row of ``matrix`` (or to ``matrix[rows]``).

    The scan XORs cache-sized blocks of rows into a preallocated buffer and counts bits with
    ``np.bitwise_count``; large scans split the rows over ``workers`` threads (default: CPU count,
    numpy releases the GIL inside the ufuncs).

    >>> m = np.array([[0], [1], [3]], dtype=np.uint64)
    >>> batch_hamming(np.array([1], dtype=np.uint64), m).tolist()
    [1, 0, 1]
    >>> batch_hamming(np.array([1], dtype=np.uint64), m, rows=[2, 0]).tolist()
    [1, 1]
    """
    q = as_vector(query)
    m = as_matrix(matrix, q.shape[0] * 64)
    if not m.flags.c_contiguous:
        m = np.ascontiguousarray(m)
    idx = None if rows is None else np.asarray(rows, dtype=np.intp).reshape(-1)
    if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= m.shape[0]):
        raise IndexError(f"rows out of range for a matrix of {m.shape[0]} rows")
    n = m.shape[0] if idx is None else idx.shape[0]
    if out is None:
        out = np.empty(n, dtype=np.int32)
    elif out.shape != (n,) or out.dtype != np.int32:
        raise DimensionError(f"out must be an int32 array of shape ({n},), got {out.dtype} {out.shape}")
    words = m.shape[1]
    block = max(1, _BLOCK_BYTES // (words * 8))
    nthreads = workers if workers is not None else (os.cpu_count() or 1)
    if nthreads <= 1 or n * words < _THREAD_MIN_WORDS:
        _scan(q, m, idx, out, 0, n, block)
        return out
    # Many tasks of whole blocks, taken by the threads as they come free: when another process holds
    # a core, the other thread takes more of the work instead of waiting for the slow one.
    per = block * max(1, min(_TASK_BLOCKS, -(-n // (block * nthreads))))
    bounds = [(s, min(s + per, n)) for s in range(0, n, per)]
    futures = [_executor(nthreads).submit(_scan, q, m, idx, out, s, e, block) for s, e in bounds]
    for f in futures:
        f.result()
    return out


def batch_similarity(
    query: Vector,
    matrix: npt.NDArray[np.uint64],
    *,
    rows: npt.ArrayLike | None = None,
    workers: int | None = None,
) -> npt.NDArray[np.float64]:
    """``1 - hamming / dim`` of ``query`` against every row of ``matrix`` (see :func:`batch_hamming`).

    >>> m = np.stack([random_vector("a"), random_vector("b")])
    >>> batch_similarity(random_vector("a"), m).round(1).tolist()
    [1.0, 0.5]
    """
    dist = batch_hamming(query, matrix, rows=rows, workers=workers)
    return 1.0 - dist / (np.shape(matrix)[1] * 64)


def top_k(
    query: Vector,
    matrix: npt.NDArray[np.uint64],
    k: int,
    *,
    rows: npt.ArrayLike | None = None,
    workers: int | None = None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int32]]:
    """The ``k`` rows nearest to ``query`` (smallest Hamming distance; ties by scan position).

    Returns ``(row_numbers, distances)``, nearest first; with ``rows`` the row numbers are taken
    from it (only those rows are scanned).

    >>> m = np.array([[7], [1], [0], [1]], dtype=np.uint64)
    >>> idx, dist = top_k(np.array([1], dtype=np.uint64), m, 3)
    >>> idx.tolist(), dist.tolist()
    ([1, 3, 2], [0, 0, 1])
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an int >= 0, got {k!r}")
    dist = batch_hamming(query, matrix, rows=rows, workers=workers)
    n = dist.shape[0]
    if k < n:
        # the k-th smallest distance; every row at or below it is a candidate, ties resolved below
        kth = np.partition(dist, k - 1)[k - 1] if k else -1
        cand = np.flatnonzero(dist <= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, dist[cand]))[:k]
    picked = cand[order]
    ids = picked if rows is None else np.asarray(rows, dtype=np.intp).reshape(-1)[picked]
    return ids.astype(np.intp), dist[picked]
