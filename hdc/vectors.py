"""Packed binary hypervectors and the random vector of a symbol.

Layout: a ``dim``-bit vector is a 1-D ``numpy.uint64`` array of ``dim // 64`` words. Bit ``i`` is bit
``i % 64`` (least significant first) of word ``i // 64``. The words are little-endian when they are
turned into bytes (hashing, saving), so a vector means the same on every platform.

Random vectors come from keyed BLAKE2b (RFC 7693), not from a linear generator::

    block_j = BLAKE2b-512(message=utf8(symbol), key=seed as 8 little-endian bytes,
                          salt=j as 16 little-endian bytes, person=utf8(namespace))
    vector  = block_0 || block_1 || ... (dim / 512 blocks, cut to dim bits)

Each bit is then an independent fair coin for every practical purpose, which is what makes two
unrelated vectors agree on 50% of their bits (similarity 0.50), and the vector of a symbol depends
only on (symbol, dim, seed, namespace): no global state, no registration order.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Iterable

import numpy as np
import numpy.typing as npt

from .errors import DimensionError, ParamsError
from .params import DEFAULT_DIM, DEFAULT_SEED, HDCParams

__all__ = [
    "Vector",
    "random_vector",
    "random_matrix",
    "zeros",
    "pack_bits",
    "unpack_bits",
    "as_vector",
    "as_matrix",
    "dim_of",
]

#: A packed hypervector: 1-D ``uint64`` array of ``dim // 64`` words.
Vector = npt.NDArray[np.uint64]

_BLOCK_BYTES = 64  # BLAKE2b's largest digest
_CACHE_SIZE = 1 << 16  # vectors (32 MiB at 4096 bits)
_WORD = np.dtype("<u8")


@lru_cache(maxsize=256)
def _validate(dim: int, seed: int) -> None:
    HDCParams(dim=dim, seed=seed)  # the one place that validates dim and seed


@lru_cache(maxsize=_CACHE_SIZE)
def _random_words(data: bytes, dim: int, seed: int, person: bytes) -> Vector:
    key = seed.to_bytes(8, "little")
    nbytes = dim // 8
    blocks = bytearray()
    for counter in range(-(-nbytes // _BLOCK_BYTES)):
        salt = counter.to_bytes(16, "little")
        blocks += hashlib.blake2b(data, digest_size=_BLOCK_BYTES, key=key, salt=salt, person=person).digest()
    words = np.frombuffer(bytes(blocks[:nbytes]), dtype=_WORD).astype(np.uint64)
    words.flags.writeable = False  # shared through the cache
    return words


def random_vector(
    symbol: str | bytes, dim: int = DEFAULT_DIM, *, seed: int = DEFAULT_SEED, namespace: str = ""
) -> Vector:
    """The random hypervector of ``symbol`` (read-only; copy it before writing into it).

    ``namespace`` (at most 16 UTF-8 bytes) separates vector spaces: the same string gives unrelated
    vectors in different namespaces. The encoders use ``"tok"``, ``"gram"`` and ``"role"``.

    >>> v = random_vector("openssl", 128)
    >>> v.dtype, v.shape
    (dtype('uint64'), (2,))
    >>> bool((v == random_vector("openssl", 128)).all())
    True
    >>> bool((v == random_vector("openssl", 128, seed=1)).all())
    False
    """
    _validate(dim, seed)
    data = symbol.encode("utf-8") if isinstance(symbol, str) else bytes(symbol)
    person = namespace.encode("utf-8")
    if len(person) > 16:
        raise ParamsError(f"namespace must be at most 16 UTF-8 bytes, got {namespace!r}")
    return _random_words(data, dim, seed, person)


def random_matrix(
    symbols: Iterable[str | bytes], dim: int = DEFAULT_DIM, *, seed: int = DEFAULT_SEED, namespace: str = ""
) -> npt.NDArray[np.uint64]:
    """Stack the random vectors of ``symbols`` into an ``(n, dim // 64)`` matrix.

    >>> random_matrix(["a", "b", "c"], 64).shape
    (3, 1)
    """
    rows = [random_vector(s, dim, seed=seed, namespace=namespace) for s in symbols]
    if not rows:
        return np.zeros((0, dim // 64), dtype=np.uint64)
    return np.stack(rows)


def zeros(dim: int = DEFAULT_DIM) -> Vector:
    """The all-zero vector (the identity of :func:`hdc.bind`).

    >>> zeros(128)
    array([0, 0], dtype=uint64)
    """
    HDCParams(dim=dim)
    return np.zeros(dim // 64, dtype=np.uint64)


def pack_bits(bits: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Pack 0/1 values (last axis = ``dim`` bits, bit ``i`` first) into ``uint64`` words.

    >>> pack_bits([1] + [0] * 63)
    array([1], dtype=uint64)
    >>> pack_bits([0, 1] + [0] * 62)
    array([2], dtype=uint64)
    """
    arr = np.asarray(bits)
    if arr.ndim == 0 or arr.shape[-1] == 0 or arr.shape[-1] % 64:
        raise DimensionError(f"bit arrays need a last axis that is a positive multiple of 64, got shape {arr.shape}")
    packed = np.packbits(arr.astype(bool, copy=False), axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view(_WORD).astype(np.uint64, copy=False)


def unpack_bits(words: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Unpack ``uint64`` words into 0/1 ``uint8`` values, the inverse of :func:`pack_bits`.

    >>> unpack_bits(pack_bits([1, 0, 1] + [0] * 61))[:4].tolist()
    [1, 0, 1, 0]
    """
    arr = np.ascontiguousarray(words, dtype=np.uint64)
    as_bytes = arr.astype(_WORD, copy=False).view(np.uint8)
    return np.unpackbits(as_bytes, axis=-1, bitorder="little")


def as_vector(value: npt.ArrayLike, dim: int | None = None) -> Vector:
    """Check that ``value`` is one packed vector (of ``dim`` bits if given) and return it as uint64.

    >>> as_vector(random_vector("x", 64), 128)
    Traceback (most recent call last):
    ...
    hdc.errors.DimensionError: expected a 128-bit vector (2 uint64 words), got shape (1,)
    """
    arr = np.asarray(value)
    if arr.dtype != np.uint64:
        raise DimensionError(f"hypervectors are uint64 arrays, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] == 0 or (dim is not None and arr.shape[0] * 64 != dim):
        want = f"a {dim}-bit vector ({dim // 64} uint64 words)" if dim else "a 1-D vector"
        raise DimensionError(f"expected {want}, got shape {arr.shape}")
    return arr


def as_matrix(value: npt.ArrayLike, dim: int | None = None) -> npt.NDArray[np.uint64]:
    """Check that ``value`` is an ``(n, words)`` uint64 matrix of packed vectors.

    >>> as_matrix(random_matrix(["a"], 64)).shape
    (1, 1)
    """
    arr = np.asarray(value)
    if arr.dtype != np.uint64 or arr.ndim != 2 or arr.shape[1] == 0:
        raise DimensionError(f"expected an (n, words) uint64 matrix, got {arr.dtype} array of shape {arr.shape}")
    if dim is not None and arr.shape[1] * 64 != dim:
        raise DimensionError(f"expected {dim}-bit rows ({dim // 64} words), got {arr.shape[1]} words")
    return arr


def dim_of(vector: npt.ArrayLike) -> int:
    """Dimension in bits of a packed vector or matrix.

    >>> dim_of(random_vector("x"))
    4096
    """
    return int(np.shape(vector)[-1]) * 64
