"""Frozen values of the lexical lane: scoring parameters, hits and index statistics.

Parameters are validated in one place, :meth:`BM25Params.__post_init__`.

>>> BM25Params().k1, BM25Params().b, BM25Params().role_boost
(1.2, 0.75, 1.3)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .errors import ParameterError

__all__ = ["DEFAULT_FIELD_WEIGHTS", "BM25Params", "Hit", "IndexStats"]

#: Field weights of DS009 plus ``text`` (weight 1.0) for plain documents, so a
#: one-field corpus is scored by ordinary BM25.
DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "topic": 1.5,
        "claim": 1.0,
        "procedure": 1.0,
        "utility_acts": 0.8,
        "utility_note": 0.6,
        "condition": 0.6,
        "role": 0.5,
        "text": 1.0,
    }
)


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class BM25Params:
    """Scoring parameters; ``field_weights`` is kept as a sorted tuple of (field, weight) pairs.

    Ranges: ``k1 >= 0``, ``0 <= b <= 1``, ``role_boost > 0``, every weight ``> 0``
    (a field that should not count is simply not indexed).

    >>> BM25Params(k1=2.0, field_weights={"text": 1.0}).weights
    {'text': 1.0}
    >>> BM25Params(b=float("nan"))
    Traceback (most recent call last):
    ...
    lexical.errors.ParameterError: b must be finite, got nan
    """

    k1: float = 1.2
    b: float = 0.75
    role_boost: float = 1.3
    field_weights: Any = field(default_factory=lambda: DEFAULT_FIELD_WEIGHTS)

    def __post_init__(self) -> None:
        k1 = _finite("k1", self.k1)
        b = _finite("b", self.b)
        boost = _finite("role_boost", self.role_boost)
        if k1 < 0:
            raise ParameterError(f"k1 must be >= 0, got {k1!r}")
        if not 0.0 <= b <= 1.0:
            raise ParameterError(f"b must be in [0, 1], got {b!r}")
        if boost <= 0:
            raise ParameterError(f"role_boost must be > 0, got {boost!r}")
        raw = self.field_weights
        items = raw.items() if isinstance(raw, Mapping) else raw
        try:
            pairs = [(name, weight) for name, weight in items]
        except (TypeError, ValueError):
            raise ParameterError(f"field_weights must map field names to weights, got {raw!r}") from None
        if not pairs:
            raise ParameterError("field_weights must name at least one field")
        checked = {}
        for name, weight in pairs:
            if not isinstance(name, str) or not name:
                raise ParameterError(f"field name must be a non-empty str, got {name!r}")
            w = _finite(f"field_weights[{name!r}]", weight)
            if w <= 0:
                raise ParameterError(f"field_weights[{name!r}] must be > 0, got {w!r}")
            checked[name] = w
        object.__setattr__(self, "k1", k1)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "role_boost", boost)
        object.__setattr__(self, "field_weights", tuple(sorted(checked.items())))

    @property
    def weights(self) -> dict[str, float]:
        """The field weights as a new dict."""
        return dict(self.field_weights)

    @property
    def fields(self) -> tuple[str, ...]:
        """Field names in sorted order (the column order of per-field arrays)."""
        return tuple(name for name, _ in self.field_weights)

    def record(self) -> dict[str, Any]:
        """A JSON-able record of the parameters.

        >>> BM25Params(field_weights={"text": 1}).record()
        {'k1': 1.2, 'b': 0.75, 'role_boost': 1.3, 'field_weights': {'text': 1.0}}
        """
        return {"k1": self.k1, "b": self.b, "role_boost": self.role_boost, "field_weights": self.weights}


@dataclass(frozen=True, order=True)
class Hit:
    """One search result. Results are sorted by score descending, then ``doc_id`` ascending.

    >>> Hit("d1", 2.5)
    Hit(doc_id='d1', score=2.5)
    """

    doc_id: str
    score: float


@dataclass(frozen=True)
class IndexStats:
    """Statistics of the live documents.

    ``total_terms`` is the sum of all field lengths, in word positions (a
    compound word's whole form shares a position with its parts);
    ``vocabulary_size`` counts distinct terms; ``avg_field_lengths`` is the mean
    length of each field over the documents where that field is not empty.

    >>> IndexStats(total_docs=0, total_terms=0, avg_field_lengths={}, vocabulary_size=0).total_docs
    0
    """

    total_docs: int
    total_terms: int
    avg_field_lengths: dict[str, float]
    vocabulary_size: int
