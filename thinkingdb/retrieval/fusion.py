"""Small pure functions of the retrieval pipeline: lane normalization, fusion, thresholds.

Every lane's raw scores are first mapped to ``[0, 1]`` on an *absolute* scale, so that ``min_score``
means the same thing for every query (dividing by the lane's top score would make the best hit 1.0
even when it is noise, and no query could ever abstain):

* BM25: ``tanh(raw / ideal)``, with ``ideal = Σ_t qf(t) · idf(t) · w_max`` the score of a unit that has
  every query term once in its heaviest field (topic, weight 1.5) at average length — the
  saturation ``tf(k1+1)/(tf + k1(1-b+b·dl/avgdl))`` is then exactly 1. A unit matching every term in
  its claim only scores ``tanh(2/3) ≈ 0.58``; one matching a third of the query's idf mass ≈ 0.2.
  Query terms that no visible unit contains count in ``ideal`` with ``df = 0``, so asking for an
  unknown code lowers every score instead of promoting partial matches.
* HDC: the lane's final score is ``max(0, 2(sim − 0.5))``-based, 0 at chance (noise ≈ 0.016 per
  field) but rarely above 0.7 (the role term counts only when a role is asked for, acts seldom match):
  ``tanh(score / 0.25)``; 0.25 is about what a unit whose topic or claim shares most of the query's
  words scores, so such a unit normalizes to ≈ 0.76, a misspelled match (≈ 0.1) to ≈ 0.38.
* Closure: a proof score (product of confidences and rule weights) is in ``[0, 1]``: used as is.

Fusion (SPEC §7, issue 6): ``fused = Σ_lane weight_lane · norm_lane + agreement`` where the
agreement bonus is added once when more than one lane found the unit. The alternative is reciprocal
rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): ``rrf = Σ_lane 1 / (k + rank_lane)``, k = 60.

Thresholds, in this order: ``min_score`` (on the fused score; with RRF on the best normalized lane
score, since RRF values are ranks, not evidence), then the gap threshold (drop what scores below
``top × gap``), then ``max_results``. Pinned units (a unit stating the answer directly) pass both
thresholds and are kept first when ``max_results`` cuts.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

__all__ = ["bm25_ideal", "normalize_bm25", "normalize_hdc", "HDC_SCALE", "clip01", "weighted_fusion", "rrf_fusion", "rank",
           "apply_thresholds", "cut_reasons"]


def bm25_ideal(idfs: Iterable[float], max_field_weight: float = 1.5) -> float:
    """``Σ idf × w_max`` over the query terms (repeat a term to count its query frequency).

    >>> round(bm25_ideal([1.0, 2.0], 1.5), 6)
    4.5
    """
    return sum(idfs) * max_field_weight


def normalize_bm25(raw: float, ideal: float) -> float:
    """``tanh(raw / ideal)`` in ``[0, 1)``; 0 when there is no ideal (an empty query).

    >>> round(normalize_bm25(3.0, 4.5), 6)    # tanh(2/3)
    0.582783
    >>> normalize_bm25(1.0, 0.0)
    0.0
    """
    if ideal <= 0 or raw <= 0:
        return 0.0
    return math.tanh(raw / ideal)


HDC_SCALE = 0.25


def normalize_hdc(score: float, scale: float = HDC_SCALE) -> float:
    """``tanh(score / scale)`` in ``[0, 1)``; 0 for a score at or below chance.

    >>> round(normalize_hdc(0.25), 6), normalize_hdc(0.0)    # tanh(1)
    (0.761594, 0.0)
    """
    return math.tanh(score / scale) if score > 0 else 0.0


def clip01(x: float) -> float:
    """Clip a score to ``[0, 1]`` (HDC and closure scores are already on that scale).

    >>> clip01(1.2), clip01(-0.1), clip01(0.4)
    (1.0, 0.0, 0.4)
    """
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def weighted_fusion(lanes: Mapping[str, Mapping[str, float]], weights: Mapping[str, float],
                    agreement: float) -> dict[str, float]:
    """``Σ w_lane × score_lane`` per unit, plus ``agreement`` when more than one lane found it.

    A unit counts as found by a lane when the lane returned it, whatever its score.

    >>> f = weighted_fusion({"bm25": {"a": 0.8, "b": 0.5}, "hdc": {"a": 0.4}}, {"bm25": 1.0, "hdc": 0.7}, 0.15)
    >>> round(f["a"], 6), f["b"]      # 0.8 + 0.7 × 0.4 + 0.15 = 1.23
    (1.23, 0.5)
    """
    out: dict[str, float] = {}
    found: dict[str, int] = {}
    for lane, scores in lanes.items():
        w = weights[lane]
        for uid, s in scores.items():
            out[uid] = out.get(uid, 0.0) + w * s
            found[uid] = found.get(uid, 0) + 1
    for uid, n in found.items():
        if n > 1:
            out[uid] += agreement
    return out


def rrf_fusion(rankings: Mapping[str, Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: ``Σ_lane 1 / (k + rank)``, ranks from 1.

    >>> f = rrf_fusion({"bm25": ["a", "b"], "hdc": ["b"]}, k=60)
    >>> round(f["a"], 6) == round(1 / 61, 6), round(f["b"], 6) == round(1 / 62 + 1 / 61, 6)
    (True, True)
    """
    out: dict[str, float] = {}
    for ranked in rankings.values():
        for r, uid in enumerate(ranked, 1):
            out[uid] = out.get(uid, 0.0) + 1.0 / (k + r)
    return out


def rank(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """``(id, score)`` by score descending, then id ascending (deterministic ties).

    >>> rank({"b": 1.0, "a": 1.0, "c": 2.0})
    [('c', 2.0), ('a', 1.0), ('b', 1.0)]
    """
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def apply_thresholds(ranked: Sequence[tuple[str, float]], *, min_score: float, gap: float, max_results: int,
                     floor: Mapping[str, float] | None = None, pinned: Iterable[str] = (),
                     priority: Sequence[str] = ()) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """Min score, then gap (``score >= top × gap``), then max results; returns the kept list and how
    many each step dropped. ``floor``: the value compared with ``min_score`` when it is not the ranking
    score (RRF). ``pinned`` ids pass both thresholds and are kept first by the ``max_results`` cut.
    ``priority`` ids (units carrying an answer, in the order given) pass both thresholds too, are kept
    before everything else and come first in the kept list.

    >>> r = [("a", 1.0), ("b", 0.6), ("c", 0.45), ("d", 0.2), ("e", 0.1)]
    >>> apply_thresholds(r, min_score=0.15, gap=0.5, max_results=3)
    ([('a', 1.0), ('b', 0.6)], {'min_score': 1, 'gap': 2, 'max_results': 0})
    >>> apply_thresholds(r, min_score=0.0, gap=0.0, max_results=2, pinned=["e"])[0]
    [('a', 1.0), ('e', 0.1)]
    >>> apply_thresholds(r, min_score=0.15, gap=0.5, max_results=3, priority=["e", "d"])[0]
    [('e', 0.1), ('d', 0.2), ('a', 1.0)]
    """
    present = dict(ranked)
    prio = [u for u in dict.fromkeys(priority) if u in present]
    pins = set(pinned) | set(prio)
    value = floor if floor is not None else present
    after_min = [(u, s) for u, s in ranked if u in pins or value.get(u, 0.0) >= min_score]
    dropped = {"min_score": len(ranked) - len(after_min)}
    top = after_min[0][1] if after_min else 0.0
    after_gap = [(u, s) for u, s in after_min if u in pins or s >= top * gap]
    dropped["gap"] = len(after_min) - len(after_gap)
    if len(after_gap) > max_results:
        keep = set(prio[:max_results])
        order = [u for u, _ in after_gap]
        for u in sorted((u for u in pins if u not in keep), key=order.index):
            if len(keep) >= max_results:
                break
            keep.add(u)
        for u, _ in after_gap:
            if len(keep) >= max_results:
                break
            keep.add(u)
        final = [(u, s) for u, s in after_gap if u in keep]
    else:
        final = list(after_gap)
    dropped["max_results"] = len(after_gap) - len(final)
    if prio:
        first = [(u, present[u]) for u in prio if any(u == v for v, _ in final)]
        final = first + [(u, s) for u, s in final if u not in set(prio)]
    return final, dropped


def cut_reasons(ranked: Sequence[tuple[str, float]], kept: Iterable[str], ids: Iterable[str], *, min_score: float,
                gap: float, floor: Mapping[str, float] | None = None, pinned: Iterable[str] = ()) -> dict[str, str]:
    """Why each of ``ids`` is not among ``kept``: ``min_score``, ``gap``, ``max_results``, or
    ``no lane found it`` (the same rules as :func:`apply_thresholds`, for the trace).

    >>> r = [("a", 1.0), ("b", 0.6), ("c", 0.45), ("d", 0.1)]
    >>> cut_reasons(r, ["a"], ["a", "b", "c", "d", "z"], min_score=0.15, gap=0.5)
    {'a': 'kept', 'b': 'max_results', 'c': 'gap', 'd': 'min_score', 'z': 'no lane found it'}
    """
    present, kept, pins = dict(ranked), set(kept), set(pinned)
    value = floor if floor is not None else present
    top = next((s for u, s in ranked if u in pins or value.get(u, 0.0) >= min_score), 0.0)
    out = {}
    for u in ids:
        if u in kept:
            out[u] = "kept"
        elif u not in present:
            out[u] = "no lane found it"
        elif u not in pins and value.get(u, 0.0) < min_score:
            out[u] = "min_score"
        elif u not in pins and present[u] < top * gap:
            out[u] = "gap"
        else:
            out[u] = "max_results"
    return out
