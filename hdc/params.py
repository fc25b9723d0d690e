"""Settings of the HDC lane, validated in one place.

:class:`HDCParams` holds everything that changes the vectors an index stores: the dimension, the key of
the symbol hash, and the encoder settings. Two indexes agree bit for bit when their params are equal,
so the params record is saved with an index and compared when it is loaded.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from .errors import ParamsError

__all__ = ["HDCParams", "DEFAULT_DIM", "DEFAULT_SEED", "MAX_DIM"]

DEFAULT_DIM = 4096
#: Key of the symbol hash unless the caller picks another ("seed" read as hex: 5EED).
DEFAULT_SEED = 0x5EED
#: Upper bound on ``dim`` (2**20 bits = 128 KiB per vector), far beyond any sensible use.
MAX_DIM = 1 << 20


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamsError(f"HDCParams.{name} must be an int, got {value!r}")
    if not low <= value <= high:
        raise ParamsError(f"HDCParams.{name} must be in [{low}, {high}], got {value!r}")


def _check_weight(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamsError(f"HDCParams.{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ParamsError(f"HDCParams.{name} must be finite and >= 0, got {value!r}")


@dataclass(frozen=True, order=True, kw_only=True)
class HDCParams:
    """Dimension, hash key and encoder settings of hypervectors.

    Attributes:
        dim: bits per vector; a positive multiple of 64 (vectors are packed in ``dim // 64``
            little-endian ``uint64`` words).
        seed: key of the keyed BLAKE2b hash that turns a symbol into its random vector,
            an int in ``[0, 2**64)``. Another seed gives an unrelated set of vectors.
        ngram: length of the character n-grams of each token (0 switches them off).
        word_ngram: length of the order-keeping word n-grams (1 switches them off).
        unigram_weight, order_weight, char_weight: votes of one word, one word n-gram and one
            character n-gram in the majority that forms a text vector (finite, >= 0, not all 0).

    >>> HDCParams().dim
    4096
    >>> HDCParams(dim=100)
    Traceback (most recent call last):
    ...
    hdc.errors.ParamsError: HDCParams.dim must be a positive multiple of 64, got 100
    """

    dim: int = DEFAULT_DIM
    seed: int = DEFAULT_SEED
    ngram: int = 3
    word_ngram: int = 2
    unigram_weight: float = 2.0
    order_weight: float = 1.0
    char_weight: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim <= 0 or self.dim % 64:
            raise ParamsError(f"HDCParams.dim must be a positive multiple of 64, got {self.dim!r}")
        _check_int("dim", self.dim, 64, MAX_DIM)
        _check_int("seed", self.seed, 0, 2**64 - 1)
        _check_int("ngram", self.ngram, 0, 16)
        _check_int("word_ngram", self.word_ngram, 1, 8)
        for name in ("unigram_weight", "order_weight", "char_weight"):
            _check_weight(name, getattr(self, name))
        if self.unigram_weight + self.order_weight + self.char_weight <= 0:
            raise ParamsError("HDCParams weights must not all be 0")

    @property
    def words(self) -> int:
        """Number of ``uint64`` words per packed vector (``dim // 64``).

        >>> HDCParams(dim=128).words
        2
        """
        return self.dim // 64

    def to_dict(self) -> dict[str, Any]:
        """The params as a JSON-ready dict (the record saved with an index).

        >>> HDCParams(dim=64).to_dict()["dim"]
        64
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HDCParams:
        """Rebuild params from :meth:`to_dict` output; unknown keys raise :class:`ParamsError`.

        >>> HDCParams.from_dict(HDCParams(seed=7).to_dict()) == HDCParams(seed=7)
        True
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ParamsError(f"unknown HDCParams field(s): {', '.join(unknown)}")
        return cls(**dict(data))
