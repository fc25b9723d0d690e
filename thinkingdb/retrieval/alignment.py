"""The SSM-Search alignment side-car: a bounded alignment index (RSI) per result, beside — never
instead of — the classical retrieval score.

For one piece of evidence about a result (features in [0, 1], from one lane, shard or page):

    e_out = (alpha·quality + beta·freshness + gamma·authority) / unit_out      (support)
    e_in  = (delta·risk_penalty + eta·coherence_penalty) / unit_in              (penalty)
    a_out = tanh(+c·e_out)        a_in = tanh(−c·e_in)

The chooser pools evidence with a weight w (1, or |m|^gamma_w where m is the classical score):

    V_out += w·atanh(a_out)       U_in += w·atanh(a_in)       W += w
    RSI = tanh((V_out + U_in) / max(W, eps_w))

Because ``a_in`` already carries the minus sign, adding ``U_in`` subtracts the penalty: RSI is the
tanh of the weighted mean of (support − penalty)·c. (The seed writes ``V_out − U_in`` with the same
sign convention for ``a_in``, which would reward penalties; we keep its intent.) Defaults of the seed:
c = 1, eps_w = 1e-12, w = 1 or |m|^gamma with gamma = 1.

The sums are exact (Shewchuk partials, as in ``math.fsum``), so shuffled, sharded and streamed evidence
give bit-for-bit the RSI of the batch. Ranking with the side-car is RSI first, classical score second;
the classical score is never modified. Bands for policy and display:

    A++  RSI ≥ 0.6    A+  0.2 ≤ RSI < 0.6    A0  −0.2 < RSI < 0.2    A−  −0.6 < RSI ≤ −0.2    A−−  RSI ≤ −0.6
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..errors import ValidationError
from ..model import Evidence
from ..numeric import check_number

BANDS = (("A++", 0.6), ("A+", 0.2), ("A0", -0.2 + 1e-300), ("A-", -0.6 + 1e-300))


@dataclass(frozen=True, kw_only=True)
class AlignmentParams:
    """Coefficients of the lens; every value is checked finite (and non-negative) at construction."""

    alpha: float = 1.0
    beta: float = 1.0
    gamma: float = 1.0
    delta: float = 1.0
    eta: float = 1.0
    unit_out: float = 1.0
    unit_in: float = 1.0
    c: float = 1.0
    eps_w: float = 1e-12
    weighting: str = "uniform"  # or "score": w = |m|^gamma_w
    gamma_w: float = 1.0

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma", "delta", "eta", "c", "gamma_w"):
            check_number(getattr(self, name), f"alignment.{name}", low=0.0)
        for name in ("unit_out", "unit_in", "eps_w"):
            check_number(getattr(self, name), f"alignment.{name}", low=0.0, low_open=True)
        if self.weighting not in ("uniform", "score"):
            raise ValidationError(f"alignment.weighting must be 'uniform' or 'score', got {self.weighting!r}")


def channels(ev: Evidence, p: AlignmentParams) -> tuple[float, float]:
    """(a_out, a_in) of one piece of evidence.

    >>> channels(Evidence(quality=1.0), AlignmentParams())
    (0.7615941559557649, -0.0)
    """
    e_out = (p.alpha * ev.quality + p.beta * ev.freshness + p.gamma * ev.authority) / p.unit_out
    e_in = (p.delta * ev.risk_penalty + p.eta * ev.coherence_penalty) / p.unit_in
    return math.tanh(p.c * e_out), math.tanh(-p.c * e_in)


class ExactSum:
    """An exactly rounded running sum (Shewchuk partials) that can absorb another; order-invariant."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def merge(self, other: "ExactSum") -> None:
        for x in other.partials:
            self.add(x)

    @property
    def value(self) -> float:
        return math.fsum(self.partials)


@dataclass
class Pool:
    """Accumulates evidence for one result; merge pools from shards in any order."""

    params: AlignmentParams = field(default_factory=AlignmentParams)
    v_out: ExactSum = field(default_factory=ExactSum)
    u_in: ExactSum = field(default_factory=ExactSum)
    w: ExactSum = field(default_factory=ExactSum)

    def add(self, ev: Evidence) -> None:
        p = self.params
        weight = 1.0 if p.weighting == "uniform" else abs(ev.m) ** p.gamma_w
        # atanh(a_out) = c·e_out and atanh(a_in) = −c·e_in exactly; taking them without the tanh round
        # trip keeps strong evidence finite (tanh rounds to 1.0 beyond about 19).
        e_out = (p.alpha * ev.quality + p.beta * ev.freshness + p.gamma * ev.authority) / p.unit_out
        e_in = (p.delta * ev.risk_penalty + p.eta * ev.coherence_penalty) / p.unit_in
        self.v_out.add(weight * p.c * e_out)
        self.u_in.add(-weight * p.c * e_in)
        self.w.add(weight)

    def merge(self, other: "Pool") -> None:
        self.v_out.merge(other.v_out)
        self.u_in.merge(other.u_in)
        self.w.merge(other.w)

    @property
    def rsi(self) -> float:
        total = ExactSum()
        total.merge(self.v_out)
        total.merge(self.u_in)
        return math.tanh(total.value / max(self.w.value, self.params.eps_w))


def rsi(evidence: Iterable[Evidence], params: AlignmentParams | None = None) -> float:
    """The RSI of a batch of evidence.

    >>> round(rsi([Evidence(quality=0.8, freshness=0.5, risk_penalty=0.3)]), 6)  # tanh(1.3 - 0.3)
    0.761594
    """
    pool = Pool(params or AlignmentParams())
    for ev in evidence:
        pool.add(ev)
    return pool.rsi


def band(value: float) -> str:
    """The policy band of an RSI.

    >>> [band(x) for x in (0.9, 0.3, 0.0, -0.3, -0.9)]
    ['A++', 'A+', 'A0', 'A-', 'A--']
    """
    if value >= 0.6:
        return "A++"
    if value >= 0.2:
        return "A+"
    if value > -0.2:
        return "A0"
    if value > -0.6:
        return "A-"
    return "A--"


def rank(results: Sequence[tuple[str, float]], evidence: Mapping[str, Sequence[Evidence]],
         params: AlignmentParams | None = None) -> list[tuple[str, float, float, str]]:
    """Order ``(id, classical score)`` pairs by RSI, then classical score, then id.

    Returns ``(id, classical score unchanged, rsi, band)``; a result without evidence has RSI 0.
    """
    out = []
    for uid, score in results:
        value = rsi(evidence.get(uid, ()), params) if evidence.get(uid) else 0.0
        out.append((uid, score, value, band(value)))
    return sorted(out, key=lambda r: (-r[2], -r[1], r[0]))
