"""Majority tallies: the fast path of :func:`hdc.bundle` for the text encoders.

A text vector is the weighted majority of many components (words, word n-grams, character n-grams).
Instead of stacking and unpacking every component each time, a :class:`Tally` adds per-bit vote
counts, so that the encoders can add the character n-gram votes of a token, computed once and cached
per token, in one step. The result
is the same vector :func:`hdc.bundle` gives for the same components and weights (bit for bit with
integer weights; the tests check this against ``bundle``), including its content-derived tie-break.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .vectors import Vector, _random_words, pack_bits, unpack_bits

__all__ = ["Tally"]


class Tally:
    """Running weighted vote counts of a bundle that has not been resolved yet.

    >>> from hdc import bundle, random_matrix
    >>> m = random_matrix(["a", "b", "c", "d"], 128)
    >>> t = Tally(128)
    >>> t.add_matrix(m[:3], 1.0); t.add_matrix(m[3:], 2.0)
    >>> bool((t.resolve(seed=1) == bundle(m, [1, 1, 1, 2], seed=1)).all())
    True
    """

    __slots__ = ("dim", "votes", "total", "word_sum", "members")

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.votes = np.zeros(dim, dtype=np.float64)  # 2 x weighted count of ones, per bit
        self.total = 0.0  # sum of weights
        self.word_sum = np.zeros(dim // 64, dtype=np.uint64)  # wrapping sum of members' words
        self.members = 0

    def add_matrix(self, matrix: npt.NDArray[np.uint64], weight: float) -> None:
        """Add every row of ``matrix`` as a member of weight ``weight`` (0 adds nothing)."""
        if weight <= 0 or matrix.shape[0] == 0:
            return
        acc = np.uint16 if matrix.shape[0] < 1 << 15 else np.int64
        self.add_votes(unpack_bits(matrix).sum(axis=0, dtype=acc), matrix.shape[0], np.add.reduce(matrix, axis=0, dtype=np.uint64), weight)

    def add_votes(self, ones: npt.NDArray[np.integer], members: int, word_sum: npt.NDArray[np.uint64], weight: float) -> None:
        """Add ``members`` members of weight ``weight`` given their per-bit count of ones and word sum."""
        if weight <= 0 or members == 0:
            return
        self.votes += ones * (2 * weight)
        self.total += weight * members
        self.word_sum += word_sum
        self.members += members

    def resolve(self, seed: int) -> Vector | None:
        """The majority vector (ties from the content-derived tie-break), or ``None`` if empty."""
        if self.members == 0:
            return None
        out = self.votes > self.total
        tied = self.votes == self.total
        if tied.any():
            tie = _random_words(self.word_sum.astype("<u8").tobytes(), self.dim, seed, b"tie")
            out |= tied & unpack_bits(tie).astype(bool)
        return pack_bits(out)
