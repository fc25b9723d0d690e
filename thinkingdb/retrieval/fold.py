"""Fold: choose results to fit a token budget (greedy knapsack with a diversity penalty).

Each candidate has a score, a token cost, a category and a source. At every step the candidate with the
highest adjusted value is considered:

    value = score × category_weight[category] × (1 − diversity_bias)^(already chosen with the same
            category) × (1 − diversity_bias)^(already chosen from the same source)

It is taken when its tokens fit in what is left of the budget, otherwise dropped; the loop ends when the
budget is spent or no candidate is left. The budget is never exceeded. Ties break on the id.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..numeric import check_number


@dataclass(frozen=True)
class Candidate:
    """One result offered to the fold."""

    id: str
    score: float
    tokens: int
    category: str = ""
    source: str = ""


def estimate_tokens(text: str) -> int:
    """A cheap token estimate: 4 characters per token, at least one per word, at least 1.

    >>> estimate_tokens("Damaged refurbished laptops qualify for replacement.")
    13
    """
    return max(1, len(text.split()), math.ceil(len(text) / 4))


def fold(candidates: Sequence[Candidate], budget_tokens: int, *, diversity_bias: float = 0.3,
         category_weights: Mapping[str, float] | None = None) -> list[Candidate]:
    """Select candidates within ``budget_tokens``, most valuable first.

    >>> cs = [Candidate("a", 1.0, 60, "policy", "s1"), Candidate("b", 0.9, 50, "policy", "s1"),
    ...       Candidate("c", 0.8, 40, "faq", "s2")]
    >>> [c.id for c in fold(cs, 100)]   # b is penalized: same category and source as a
    ['a', 'c']
    """
    budget = int(check_number(budget_tokens, "budget_tokens", low=0))
    bias = check_number(diversity_bias, "diversity_bias", low=0.0, high=1.0)
    weights = {k: check_number(v, f"category_weights.{k}", low=0.0) for k, v in (category_weights or {}).items()}
    for c in candidates:
        check_number(c.score, f"candidates[{c.id}].score")
        if c.tokens < 0:
            raise ValueError(f"candidates[{c.id}].tokens must be >= 0")
    left = list(candidates)
    chosen: list[Candidate] = []
    per_category: dict[str, int] = {}
    per_source: dict[str, int] = {}
    remaining = budget

    def value(c: Candidate) -> float:
        keep = 1.0 - bias
        return (c.score * weights.get(c.category, 1.0) * keep ** per_category.get(c.category, 0)
                * keep ** per_source.get(c.source, 0))

    while left and remaining > 0:
        best = min(left, key=lambda c: (-value(c), c.id))
        left.remove(best)
        if best.tokens <= remaining:
            chosen.append(best)
            remaining -= best.tokens
            per_category[best.category] = per_category.get(best.category, 0) + 1
            per_source[best.source] = per_source.get(best.source, 0) + 1
    return chosen
