"""The HDC lane's scores (seed "retrieval strategies", SPEC §7), with ``h`` the Hamming distance of two
field vectors of ``dim`` bits::

    sim        = 1 - h / dim
    field      = max(0, 2 (sim - 0.5))  = max(0, 1 - 2h / dim)      (0.50 is chance agreement)
    final      = 0.35 topic + 0.35 claim + 0.20 role + 0.10 acts    (absent field: 0)
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import numpy.typing as npt

__all__ = ["FIELD_WEIGHTS", "field_score", "field_scores", "final_score"]

#: Fixed weights of the final score (seed "retrieval strategies"); they sum to 1.
FIELD_WEIGHTS: Mapping[str, float] = {"topic": 0.35, "claim": 0.35, "role": 0.20, "acts": 0.10}


def field_score(sim: float) -> float:
    """``max(0, 2 (sim - 0.5))``: 0 at chance (0.5) or below, 1 for identical vectors.

    >>> field_score(1.0), field_score(0.75), field_score(0.4)
    (1.0, 0.5, 0.0)
    """
    return max(0.0, 2.0 * (sim - 0.5))


def final_score(topic: float = 0.0, claim: float = 0.0, role: float = 0.0, acts: float = 0.0) -> float:
    """``0.35 topic + 0.35 claim + 0.20 role + 0.10 acts`` over field scores in [0, 1].

    >>> final_score(topic=1.0, role=1.0)
    0.55
    """
    w = FIELD_WEIGHTS
    return w["topic"] * topic + w["claim"] * claim + w["role"] * role + w["acts"] * acts


def field_scores(dist: npt.NDArray[np.int32], dim: int) -> npt.NDArray[np.float64]:
    """:func:`field_score` of many Hamming distances ``dist`` between vectors of ``dim`` bits.

    >>> field_scores(np.array([0, 256, 512, 700]), 1024).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """
    return np.maximum(0.0, 1.0 - (2.0 / dim) * dist)
