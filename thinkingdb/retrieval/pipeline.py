"""The retrieval pipeline: one function, three profiles (SPEC §7, issue 6).

    access filter → seed lanes (BM25; HDC when escalated) → bounded closure from the seeds (when the
    profile's expansion depth > 0) → fusion → min score → gap threshold → max results

* **Access first.** The caller's view (acl tags, region, as-of date; :mod:`thinkingdb.store.access`) decides
  which units exist for this search. BM25 searches an index built from the view's units only, so
  hidden text changes neither scores nor their order; HDC is searched with ``allowed`` = the view;
  the closure runs on the facts the view may see (:mod:`thinkingdb.retrieval.lanes`). Results, proofs and the
  trace therefore only ever name visible units and facts.
* **Escalation.** With ``hdc = "escalate"`` HDC runs only when fewer than ``min_acceptable`` BM25 hits
  reach ``min_score`` after normalization (:mod:`thinkingdb.retrieval.fusion`); the trace says whether it ran.
* **Closure lane.** A relational question's asks (:mod:`.question`) are answered goal-directed and
  the units carrying an answer rank first, the asked symbol's own unit ahead (:mod:`.answers`);
  otherwise the closure runs from the seeds (:mod:`.expansion`). The trace's ``explain`` says whether
  an answer was found and which threshold cut a unit of the best chain.
* **Decomposition** (``decompose``): a long query's BM25 lane runs as sub-queries of two consecutive
  content words, combined with the intersection bonus (:mod:`thinkingdb.retrieval.decompose`); HDC and the
  closure still see the whole query. The trace lists the sub-queries.
* **Alignment** (``alignment``): after the cuts, the kept units are ordered by the SSM-Search RSI of
  their feature evidence, then by fused score (:mod:`thinkingdb.retrieval.alignment`); scores are unchanged and
  each result carries its RSI and band.
* **Trace.** Unit ids, ranks and per-lane scores, the profile and its parameters, index versions,
  escalation, closure bounds and ``truncated``, and per-stage timings — never a unit's text.

>>> import tempfile, os, json
>>> d = tempfile.mkdtemp(); src = os.path.join(d, "units.jsonl")
>>> _ = open(src, "w").write(json.dumps({"id": "rpl-14", "topic": "Refurbished laptop replacement",
...     "claim": "Rule RPL-14: damaged refurbished laptops are replaced within 14 days."}) + "\\n")
>>> from thinkingdb.api import KnowledgeBase
>>> kb = KnowledgeBase(os.path.join(d, "kb.sqlite")); _ = kb.ingest([src])
>>> [r.unit_id for r in search(kb, "RPL-14", profile="kb-fast")]
['rpl-14']
>>> kb.close()
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping

from lexical.errors import check_text

from ..store.access import Caller, parse_date
from ..errors import ThinkingDBError, ValidationError, translate
from .fusion import (apply_thresholds, bm25_ideal, clip01, cut_reasons, normalize_bm25, normalize_hdc, rank, rrf_fusion,
                     weighted_fusion)
from .alignment import AlignmentParams
from .profiles import Profile, get_profile

__all__ = ["search", "Result", "SearchResult", "TRACE_LIMIT"]

TRACE_LIMIT = 50   # hits listed per lane in the trace
HDC_FLOOR = 0.05   # an HDC score at or below this is chance agreement (noise ~ 0.016 per field)


@dataclass(frozen=True)
class Result:
    """One returned unit: fused score, each lane's rank and score, and the closure proof if any."""

    unit_id: str
    score: float
    lanes: Mapping[str, Mapping[str, Any]]
    proof: Any = None
    pinned: bool = False
    alignment: Mapping[str, Any] | None = None

    def to_json(self) -> dict:
        out = {"unit_id": self.unit_id, "score": self.score, "lanes": {k: dict(v) for k, v in self.lanes.items()},
               "proof": None if self.proof is None else self.proof.to_json()}
        if self.pinned:
            out["states_answer"] = True
        if self.alignment is not None:
            out["alignment"] = dict(self.alignment)
        return out


@dataclass(frozen=True)
class SearchResult:
    """The results, best first, and the trace of the search (SPEC §8 ``search --json`` shape)."""

    results: tuple[Result, ...]
    trace: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[Result]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def ids(self) -> list[str]:
        return [r.unit_id for r in self.results]

    def to_json(self) -> dict:
        return {"results": [r.to_json() for r in self.results], "trace": self.trace}


def _caller(caller) -> Caller:
    if caller is None:
        return Caller()
    if isinstance(caller, Caller):
        return caller
    if isinstance(caller, dict):
        return Caller.from_json(caller)
    raise ValidationError(f"caller must be a Caller or a dict with tags and region, got {caller!r}")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _ideal(idx, tokenizer, text: str) -> float:
    """The BM25 score a perfect match of ``text`` would get (see :mod:`thinkingdb.retrieval.fusion`)."""
    from lexical.scoring import idf
    n = len(idx)
    return bm25_ideal(idf(idx.document_frequency(t), n) for t in tokenizer(text))


def _bm25_lane(idx, tokenizer, text: str, k: int) -> tuple[list[tuple[str, float, float]], float]:
    """BM25 hits as ``(id, normalized, raw)`` and the query's ideal score."""
    ideal = _ideal(idx, tokenizer, text)
    hits = idx.search(text, k=k)
    return [(h.doc_id, normalize_bm25(h.score, ideal), h.score) for h in hits], ideal


def _bm25_or_decomposed(idx, tokenizer, text: str, p: Profile) -> tuple[list[tuple[str, float, float]], float, list[str]]:
    """The BM25 lane, through sub-queries when the profile decomposes and the query is long enough.

    Each sub-query is normalized by its own ideal score, then :func:`thinkingdb.retrieval.decompose.combine`
    takes the mean over sub-queries with the intersection bonus; the result is clipped to 1. ``raw``
    is the best raw BM25 score over the sub-queries; the reported ideal is the whole query's.
    """
    from .decompose import combine, content_words, sub_queries
    if not p.decompose:
        hits, ideal = _bm25_lane(idx, tokenizer, text, p.candidates)
        return hits, ideal, []
    subs = sub_queries(content_words(tokenizer, text), p.decompose_threshold)
    if len(subs) == 1:
        hits, ideal = _bm25_lane(idx, tokenizer, text, p.candidates)
        return hits, ideal, subs
    per, best_raw = [], {}
    for q in subs:
        sub_hits, _ = _bm25_lane(idx, tokenizer, q, p.candidates)
        per.append([(u, s) for u, s, _ in sub_hits])
        for u, _, r in sub_hits:
            best_raw[u] = max(best_raw.get(u, 0.0), r)
    combined = combine(per, p.intersection_bonus)[:p.candidates]
    return [(u, clip01(s), best_raw[u]) for u, s in combined], _ideal(idx, tokenizer, text), subs


def search(kb, text: str, *, profile: str | Profile = "kb-balanced", caller: Caller | dict | None = None,
           as_of: str | _dt.date | None = None, role: str | None = None, decompose: bool | None = None,
           alignment: bool | AlignmentParams | None = None,
           features: Mapping[str, Any] | None = None) -> SearchResult:
    """Retrieve the units of ``kb`` for ``text`` that ``caller`` may see on ``as_of`` (default today).

    ``profile``: a built-in name (``kb-fast``, ``kb-balanced``, ``kb-thinkingdb``) or a
    :class:`~thinkingdb.retrieval.profiles.Profile`. ``caller``: a :class:`~thinkingdb.store.access.Caller` or
    ``{"tags": [...], "region": ...}``; None is an anonymous caller who sees public units only.
    ``decompose`` and ``alignment`` override the profile's keys of the same name (``alignment`` may
    also be an :class:`~thinkingdb.retrieval.alignment.AlignmentParams`). ``features``: alignment evidence per
    unit id, a mapping of feature values in [0, 1] or a list of them, pooled with the evidence stored
    on the unit (its ``features`` field at ingest); giving ``features`` turns alignment on unless
    ``alignment=False``.
    """
    try:
        p = get_profile(profile)
        params = alignment if isinstance(alignment, AlignmentParams) else None
        if alignment is None and features is not None:
            alignment = True
        if alignment is not None or decompose is not None:
            p = replace(p, alignment=p.alignment if alignment is None else alignment is not False,
                        decompose=p.decompose if decompose is None else bool(decompose))
        if features is not None and not isinstance(features, Mapping):
            raise ValidationError(f"features must map unit ids to feature values, got {type(features).__name__}")
        return _search(kb, text, p, _caller(caller), parse_date(as_of), role, params, features or {})
    except ThinkingDBError:
        raise
    except (ValueError, TypeError, KeyError, OSError) as exc:
        raise translate(exc) from exc


def _search(kb, text: str, p: Profile, caller: Caller, day: _dt.date, role: str | None,
            params: AlignmentParams | None = None, features: Mapping[str, Any] | None = None) -> SearchResult:
    from .lanes import lanes_for
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("search text is empty")
    check_text(text, "search text")
    t_all = t0 = time.perf_counter()
    timings: dict[str, float] = {}
    lanes = lanes_for(kb)
    timings["lanes"] = _ms(t0)
    t0 = time.perf_counter()
    view = lanes.access.view(caller, day)
    timings["access"] = _ms(t0)
    trace: dict[str, Any] = {"query": text, "profile": p.to_json(), "caller": caller.to_json(),
                             "as_of": day.isoformat(), "view": {"units": view.count, "fingerprint": view.fingerprint},
                             "index_versions": {}, "lanes": {}, "timings_ms": timings}
    scores: dict[str, dict[str, float]] = {}
    order: dict[str, list[str]] = {}
    raw: dict[str, dict[str, float]] = {}
    if view.count == 0:
        trace["lanes"]["bm25"] = {"ran": False, "reason": "the caller sees no unit"}
        return _finish(p, trace, {}, {}, {}, None, timings, t_all, None)

    acceptable = 0
    if p.bm25:
        t0 = time.perf_counter()
        idx, version = lanes.bm25(view)
        timings["bm25_index"] = _ms(t0)
        t0 = time.perf_counter()
        hits, ideal, subs = _bm25_or_decomposed(idx, lanes.tokenizer, text, p)
        timings["bm25"] = _ms(t0)
        trace["index_versions"]["bm25"] = version
        scores["bm25"] = {u: s for u, s, _ in hits}
        order["bm25"] = [u for u, _, _ in hits]
        raw["bm25"] = {u: r for u, _, r in hits}
        acceptable = sum(1 for _, s, _ in hits if s >= p.min_score)
        trace["lanes"]["bm25"] = {"ran": True, "hits": len(hits), "acceptable": acceptable,
                                  "ideal": round(ideal, 6), "docs": len(idx)}
        if p.decompose:
            trace["lanes"]["bm25"]["decompose"] = {
                "sub_queries": subs, "applied": len(subs) > 1, "threshold": p.decompose_threshold,
                "intersection_bonus": p.intersection_bonus}

    run_hdc = p.hdc == "always" or (p.hdc == "escalate" and acceptable < p.min_acceptable)
    hdc_info: dict[str, Any] = {"ran": run_hdc, "mode": p.hdc}
    if p.hdc == "escalate":
        hdc_info["escalation"] = run_hdc
        hdc_info["reason"] = (f"BM25 returned {acceptable} acceptable candidate(s) "
                              f"{'<' if run_hdc else '>='} min_acceptable {p.min_acceptable}")
    if run_hdc:
        t0 = time.perf_counter()
        hdc_idx, version = lanes.hdc()
        allowed = None if view.everything else lanes.view_ids(view)
        timings["hdc_index"] = _ms(t0)
        t0 = time.perf_counter()
        try:
            hdc_hits = hdc_idx.search(text, k=p.candidates, allowed=allowed, role=role, min_score=HDC_FLOOR)
        except Exception as exc:  # leaf errors stop here
            raise translate(exc) from exc
        timings["hdc"] = _ms(t0)
        trace["index_versions"]["hdc"] = version
        scores["hdc"] = {u: normalize_hdc(s) for u, s in hdc_hits}
        raw["hdc"] = dict(hdc_hits)
        order["hdc"] = [u for u, _ in hdc_hits]
        hdc_info["hits"] = len(hdc_hits)
    trace["lanes"]["hdc"] = hdc_info

    expansion = question = None
    if p.expansion_depth > 0:
        expansion, question = _closure_lane(kb, lanes, view, text, p, scores, timings)
        scores["closure"] = {u: clip01(c.score) for u, c in expansion.credits.items()}
        order["closure"] = [u for u, _ in rank(scores["closure"])]
        trace["lanes"]["closure"] = _closure_trace(expansion, p)
    else:
        trace["lanes"]["closure"] = {"ran": False, "reason": "expansion_depth is 0"}
    aligner = _aligner(kb, params, features) if p.alignment else None
    return _finish(p, trace, scores, order, raw, expansion, timings, t_all, aligner, question)


def _aligner(kb, params: AlignmentParams | None, features: Mapping[str, Any]):
    """A function from the kept ``(id, score)`` pairs to ``(id, score, rsi, band)`` in alignment order.

    A unit's evidence is the ``features`` stored on it (a mapping or a list of mappings) followed by
    the request's ``features[id]``; evidence without ``m`` takes the result's classical score.
    Feature values are checked finite and in [0, 1], the error naming the unit and the field.
    """
    from .alignment import Evidence, rank as align_rank

    def items(value, where):
        if value is None:
            return []
        if isinstance(value, Mapping):
            return [(value, where)]
        if isinstance(value, (list, tuple)):
            return [(v, f"{where}[{i}]") for i, v in enumerate(value)]
        raise ValidationError(f"{where}: must be a mapping of features or a list of them")

    def align(kept):
        evidence = {}
        for uid, score in kept:
            unit = kb.store.unit(uid)
            stored = json.loads(unit.extra or "{}").get("features") if unit is not None else None
            found = items(stored, f"unit {uid} features") + items(features.get(uid), f"features[{uid!r}]")
            evs = []
            for data, where in found:
                if not isinstance(data, Mapping):
                    raise ValidationError(f"{where}: must be a mapping of features")
                evs.append(Evidence.from_mapping({"m": score, **data}, where))
            evidence[uid] = evs
        return align_rank(kept, evidence, params)
    return align


def _closure_lane(kb, lanes, view, text: str, p: Profile, scores, timings):
    """The question's asks answered goal-directed (:mod:`.answers`); when it has none, or they find no
    answer, the closure from the seeds (:mod:`.expansion`)."""
    from .answers import answer_asks, answering_priority
    from .expansion import expand
    t0 = time.perf_counter()
    graph, matcher, facts, visible = lanes.graph(view), lanes.matcher(view), lanes.facts, lanes.visible_unit(view)
    rules = lanes.rules(view)
    question = lanes.question_reader(view).read(text)
    timings["closure_prepare"] = _ms(t0)
    b = p.closure
    bounds = dict(depth=p.expansion_depth, max_nodes=b.max_nodes, max_derived=b.max_derived, timeout_ms=b.timeout_ms)
    t0 = time.perf_counter()
    # an ask deepens until its answers' chains could fill half the results (measured on GO: fewer,
    # shallower answers keep every chain and more answer units in the results, and cost less)
    exp = answer_asks(graph, rules, question, facts.fact_units, visible, lanes.topic_units(),
                      enough=max(1, p.max_results // 2), **bounds)
    timings["answers"] = _ms(t0)
    if exp.stats.get("best_chain") is None:
        t0 = time.perf_counter()
        pre = weighted_fusion({k: v for k, v in scores.items()},
                              {"bm25": p.weights.bm25, "hdc": p.weights.hdc}, p.weights.agreement)
        seeds = [u for u, s in rank(pre) if s >= p.min_score][:b.seed_units]
        symbols, relations = matcher.match(text)
        general = expand(graph, rules, facts.unit_facts, facts.fact_units, visible, seeds, symbols, relations,
                         partial_weight=b.partial_weight, **bounds)
        exp = answering_priority(general, facts.fact_units, visible, asks=exp.stats["asks"])
        timings["closure"] = _ms(t0)
    return exp, question


def _closure_trace(exp, p: Profile) -> dict:
    lim = exp.limits
    return {"ran": lim is not None, "query_symbols": list(exp.query_symbols),
            "query_relations": list(exp.query_relations), "seed_units": list(exp.seed_units),
            "seed_symbols": exp.seed_symbols,
            "bounds": None if lim is None else {"max_depth": lim.max_depth, "max_nodes": lim.max_nodes,
                                                 "max_derived": lim.max_derived, "timeout_ms": lim.timeout_ms},
            "truncated": exp.truncated, "credited": len(exp.credits), "pinned": sorted(exp.pinned),
            "stats": exp.stats, **({} if lim is not None else {"reason": "no query symbol in the view's facts"})}


def _finish(p: Profile, trace, scores, order, raw, expansion, timings, t_all, aligner,
            question=None) -> SearchResult:
    t0 = time.perf_counter()
    weights = {"bm25": p.weights.bm25, "hdc": p.weights.hdc, "closure": p.weights.closure}
    if p.fusion == "rrf":
        fused = rrf_fusion(order, p.rrf_k)
        floor = {u: max(s.get(u, 0.0) for s in scores.values()) for u in fused}
    else:
        fused = weighted_fusion(scores, weights, p.weights.agreement)
        floor = None
    ranked = rank(fused)
    pinned = expansion.pinned if expansion is not None else frozenset()
    priority = expansion.priority if expansion is not None else ()
    kept, dropped = apply_thresholds(ranked, min_score=p.min_score, gap=p.gap, max_results=p.max_results,
                                     floor=floor, pinned=pinned, priority=priority)
    timings["fusion"] = _ms(t0)
    if question is not None:
        from .answers import explain
        trace["lanes"]["closure"]["explain"] = explain(question, expansion, lambda ids: cut_reasons(
            ranked, [u for u, _ in kept], ids, min_score=p.min_score, gap=p.gap, floor=floor,
            pinned=set(pinned) | set(priority)))
    aligned: dict[str, tuple[float, str]] = {}
    if aligner is not None:
        t0 = time.perf_counter()
        ordered = aligner(kept)
        kept = [(uid, score) for uid, score, _, _ in ordered]
        aligned = {uid: (value, band) for uid, _, value, band in ordered}
        timings["alignment"] = _ms(t0)
        trace["alignment"] = {"order": "rsi, then score",
                              "ranked": [{"unit_id": u, "rsi": round(v, 6), "band": b} for u, _, v, b in ordered]}
    ranks = {lane: {u: i for i, u in enumerate(ids, 1)} for lane, ids in order.items()}
    results = []
    for uid, score in kept:
        lanes = {}
        for lane in order:
            if uid in scores[lane]:
                entry = {"rank": ranks[lane][uid], "score": scores[lane][uid]}
                if lane in raw:
                    entry["raw"] = raw[lane][uid]
                lanes[lane] = entry
        credit = expansion.credits.get(uid) if expansion is not None else None
        if credit is not None:
            lanes["closure"]["tier"] = credit.tier
        align = None if uid not in aligned else {"rsi": aligned[uid][0], "band": aligned[uid][1]}
        results.append(Result(uid, score, lanes, None if credit is None else credit.proof, uid in pinned, align))
    for lane, ids in order.items():
        trace["lanes"][lane]["ranked"] = [{"unit_id": u, "rank": i, "score": round(scores[lane][u], 6)}
                                          for i, u in enumerate(ids[:TRACE_LIMIT], 1)]
    trace["fusion"] = {"method": p.fusion, "candidates": len(ranked), "dropped": dropped,
                       "top": [{"unit_id": u, "score": round(s, 6)} for u, s in ranked[:TRACE_LIMIT]]}
    trace["returned"] = [r.unit_id for r in results]
    timings["total"] = _ms(t_all)
    return SearchResult(tuple(results), trace)


def fold_result(kb, result: SearchResult, budget_tokens: int, *, diversity_bias: float = 0.3) -> SearchResult:
    """Keep the results that fit ``budget_tokens`` (see :mod:`thinkingdb.retrieval.fold`): each unit costs the
    token estimate of its text, its category is its role and its source is its provenance source."""
    from .fold import Candidate, estimate_tokens, fold
    cands = []
    for r in result.results:
        unit = kb.store.unit(r.unit_id)
        text = " ".join(unit.text_fields().values()) if unit is not None else r.unit_id
        cands.append(Candidate(r.unit_id, r.score, estimate_tokens(text), unit.role if unit else "",
                               unit.source if unit else ""))
    chosen = {c.id for c in fold(cands, budget_tokens, diversity_bias=diversity_bias)}
    kept = tuple(r for r in result.results if r.unit_id in chosen)
    trace = dict(result.trace)
    trace["fold"] = {"budget_tokens": budget_tokens, "diversity_bias": diversity_bias,
                     "tokens": sum(c.tokens for c in cands if c.id in chosen), "kept": [r.unit_id for r in kept]}
    return SearchResult(kept, trace)
