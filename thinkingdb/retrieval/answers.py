"""The closure lane for a relational question: answer each ask goal-directed, rank its proofs' units.

When :mod:`thinkingdb.retrieval.question` reads asks in a question ("what is A part of" asks
``A part_of ?x``), each ask is answered by a goal-directed closure (``closure(goals=...)``,
:mod:`thinkingdb.engine.demand`) over the rules that can derive the relation
(:func:`~thinkingdb.engine.rules.relevant_rules`): only what the ask's answers rest on is derived,
with the full closure's scores and proofs. A link ask ("how is A related to B") has one goal per
relation. Bounds are the profile's (``max_depth`` = expansion depth, ``max_nodes``, ``max_derived``,
``timeout_ms``); a bound that cut a run short is reported per ask. An ask is **deepened**: run at
depth 1, then 2, ... up to ``max_depth``, and it stops at the first depth that gives ``enough``
answers (half the profile's ``max_results``; a link ask: one) — shallow answers cost a shallow run,
and the trace gives the depth reached. Each run spends at most
:data:`~thinkingdb.retrieval.expansion.EXACT_STEPS` on exact depth reporting.

Every answer is a candidate fact with its best proof, in the tiers of
:mod:`thinkingdb.retrieval.expansion`: ``exact`` when the answer is another symbol the question
names, else ``strong`` when the question names one symbol and ``weak`` when it names more (a weak
answer is credited but neither pinned nor given priority). Candidates are taken best first — tier,
then proof score, then the fact — up to ``max_answers`` per ask (the trace gives both counts). Each
visible unit asserting a leaf of a candidate's proof is credited with ``proof score × tier factor``.

**Priority** (the order in which units carrying an answer are ranked above every lexical
neighbour): candidate by candidate, the units of its proof's leaves followed by the unit of the
answer itself (a unit whose topic is the answer symbol), and right after the best candidate the
asked symbols' own units, so that the question's subject is always kept. The answer's unit is
credited with the tier ``answer``, the asked symbol's unit (when no leaf credits it) with
``subject``; both carry the candidate's proof. A chain's units therefore come together, and the
results hold whole answering chains before partial ones.

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.language import compile_source
>>> from thinkingdb.model import Fact
>>> from thinkingdb.retrieval.expansion import SymbolMatcher
>>> from thinkingdb.retrieval.question import QuestionReader
>>> g = FactGraph([Fact("spoke_wheel", "is_a", "wheel"), Fact("wheel", "part_of", "bike")])
>>> rules = [r for r, _ in compile_source("rule r @0.9: ?x is_a ?y, ?y part_of ?z => ?x part_of ?z.").rules]
>>> reader = QuestionReader(SymbolMatcher(["spoke_wheel", "wheel", "bike"], []), ["is_a", "part_of"])
>>> units = {Triple("spoke_wheel", "is_a", "wheel"): {"u1": 1.0}, Triple("wheel", "part_of", "bike"): {"u2": 1.0}}
>>> exp = answer_asks(g, rules, reader.read("What is spoke wheel part of?"), units, lambda u: True,
...                   {"bike": ["u3"]}, depth=3, max_nodes=64, max_derived=1000, timeout_ms=1000)
>>> exp.priority, round(exp.credits["u2"].score, 6), exp.credits["u3"].tier    # 0.9 x 0.8 (strong)
(('u1', 'u2', 'u3'), 0.72, 'answer')
"""

from __future__ import annotations

import heapq
import time
from dataclasses import replace
from functools import lru_cache
from typing import Callable, Iterable, Mapping

from ..engine.proofs import Proof
from ..model import Limits, PathRel, Query, QueryPattern, Triple, Var
from .expansion import EXACT_STEPS, TIERS, Credit, Expansion
from .question import ANY, Ask, Question

__all__ = ["answer_asks", "answering_priority", "explain", "MAX_ANSWERS"]

MAX_ANSWERS = 64   # candidate answers credited per ask (best first)
ENOUGH = 4         # answers at which an ask stops deepening (the pipeline passes half the profile's max_results)
_TIER = ("exact", "strong", "weak")
_RANK = {t: i for i, t in enumerate(_TIER)}


@lru_cache(maxsize=256)
def _rules_for(rules: tuple, relations: tuple) -> tuple:
    from ..engine.rules import relevant_rules
    return relevant_rules(rules, relations)


def _deepen(graph, rules, ask: Ask, limits: Limits, relations: tuple, enough: int, named: set[str]):
    """The goal-directed closure for one ask (a link ask: one goal per relation), deepened one depth
    at a time up to ``limits.max_depth``: yields after each depth ``(run, answers, depth, done)``,
    the answers ``{(relation id, other symbol id): score}``; ``done`` once it has ``enough`` answers
    (a link ask: one) or nothing deeper can be found. The unbounded demand that makes the depth
    report exact is independent of the depth: once it is over its steps (or cut by ``max_nodes``),
    the deeper runs go straight to depth budgets (the same answers, reported conservatively)."""
    from ..engine.closure import closure
    rels = relations if ask.relation == ANY else (ask.relation,)
    x = Var("x")
    goals = [Query((QueryPattern(ask.symbol, PathRel(r), x) if ask.role == "subject"
                    else QueryPattern(x, PathRel(r), ask.symbol),)) for r in rels]
    chosen = _rules_for(rules, rels)
    deadline = None if limits.timeout_ms is None else time.perf_counter() + limits.timeout_ms / 1000
    top = limits.max_depth if limits.max_depth is not None else 1 << 30
    depth = 1 if limits.max_depth is not None else None
    exact_steps = EXACT_STEPS
    while True:
        left = None if deadline is None else max(1e-3, (deadline - time.perf_counter()) * 1000)
        res = closure(graph, chosen, limits=replace(limits, max_depth=depth, timeout_ms=left), goals=goals,
                      exact_steps=exact_steps)
        if getattr(res, "stats", None) is not None and res.stats.exact_depth is False:
            exact_steps = 0
        found = _answers(res, ask, rels, named)
        need = 1 if ask.relation == ANY else enough
        done = depth is None or depth >= top or res.truncated != "depth" or len(found) >= need
        yield res, found, depth, done
        if done:
            return
        depth += 1


def _run(graph, rules, ask: Ask, limits: Limits, relations: tuple, enough: int, named: set[str]):
    """:func:`_deepen` to the end: the last run, its answers and its depth."""
    for res, found, depth, done in _deepen(graph, rules, ask, limits, relations, enough, named):
        if done:
            return res, found, depth
    raise AssertionError("unreachable")


def _run_asks(graph, rules, asks: list[Ask], limits: Limits, relations: tuple, enough: int, named: set[str]):
    """Every ask's ``(run, answers, depth, ms, note)``. An ask the same as an earlier one (same
    symbol, relation and role, another phrase) shares its run (``note``: ``same as ask i``). The link
    asks ("how is A related to B") are deepened together, a depth at a time, and stop as soon as
    one of them links the named symbols: the chain the question asks for is found (``note`` of an
    ask stopped that way: ``stopped: ask i linked the named symbols``, its run the last it made, or
    None when it made none)."""
    out: list = [None] * len(asks)
    first: dict[tuple, int] = {}
    links: list[int] = []
    for i, ask in enumerate(asks):
        key = (ask.symbol, ask.relation, ask.role)
        if key in first:
            continue
        first[key] = i
        if ask.relation == ANY:
            links.append(i)
            continue
        t1 = time.perf_counter()
        res, found, reached = _run(graph, rules, ask, limits, relations, enough, named)
        out[i] = (res, found, reached, (time.perf_counter() - t1) * 1000, None)
    if links:
        gens = {i: _deepen(graph, rules, asks[i], limits, relations, enough, named) for i in links}
        spent = dict.fromkeys(links, 0.0)
        last: dict[int, tuple] = {}
        live = list(links)
        linked = None
        while live and linked is None:
            for i in list(live):
                t1 = time.perf_counter()
                res, found, reached, done = next(gens[i])
                spent[i] += (time.perf_counter() - t1) * 1000
                last[i] = (res, found, reached)
                if done:
                    live.remove(i)
                if found:
                    linked = i
                    break
        for i in links:
            note = None if i not in live or linked is None or i == linked else \
                f"stopped: ask {linked} linked the named symbols"
            res, found, reached = last.get(i, (None, {}, None))
            out[i] = (res, found, reached, spent[i], note)
    for i, ask in enumerate(asks):
        j = first[(ask.symbol, ask.relation, ask.role)]
        if j != i:
            res, found, reached, _, _ = out[j]
            out[i] = (res, found, reached, 0.0, f"same as ask {j}")
    return out


def _answers(res, ask: Ask, rels: tuple, named: set[str]) -> dict[tuple[int, int], float]:
    ids = res.ids
    s = ids.find_sym(ask.symbol)
    found: dict[tuple[int, int], float] = {}
    for rel in rels:
        r = ids.find_rel(rel)
        if s is None or r is None:
            continue
        for other, score in (res.out(r, s) if ask.role == "subject" else res.inn(r, s)).items():
            if ask.relation != ANY or (other != s and ids.sym_key(other) in named):
                found[(r, other)] = score
    return found


def answer_asks(graph, rules, question: Question, fact_units: Mapping[Triple, Mapping[str, float]],
                visible: Callable[[str], bool], topic_units: Mapping[str, Iterable[str]], *, depth: int,
                max_nodes: int, max_derived: int, timeout_ms: float,
                max_answers: int = MAX_ANSWERS, enough: int = ENOUGH) -> Expansion:
    """Answer the question's asks over ``graph`` and credit units (see the module docstring).

    Asks whose symbol is not in ``graph`` or whose relation neither occurs in it nor heads a rule
    are left out; the trace lists what was kept.
    """
    rules = tuple(rules)
    t0 = time.perf_counter()
    heads = {r.head.relation for r in rules}
    relations = tuple(sorted(set(graph.relations()) | heads))
    asks = [a for a in question.asks if graph.symbol_id(a.symbol) is not None
            and (a.relation == ANY or graph.relation_id(a.relation) is not None or a.relation in heads)]
    named = {s for s in question.symbols if graph.symbol_id(s) is not None}
    limits = Limits(max_depth=depth, max_nodes=1 + max_nodes, max_derived=max_derived, timeout_ms=timeout_ms)
    cands: list[tuple[int, float, Triple, object, str, Ask]] = []   # tier rank, -score, fact, key, answer
    per_ask: list[dict] = []
    truncated = None
    group = {k: n for n, keys in enumerate(question.mentions()) for k in keys if k in named}
    n_named = len(set(group.values()))
    for ask, (res, found, reached, ms, note) in zip(asks, _run_asks(graph, rules, asks, limits, relations,
                                                                     enough, named)):
        row = {**ask.to_json(), "answers": len(found), "credited": min(len(found), max_answers),
               "depth": reached, "truncated": None if res is None else res.truncated, "ms": round(ms, 3)}
        if note:
            row["note"] = note
        per_ask.append(row)
        if res is None or (note and note.startswith("same as")):
            continue   # a shared run's answers are credited once, by the ask that made it
        truncated = truncated or res.truncated
        ids = res.ids
        s = ids.find_sym(ask.symbol)
        mine = []
        for (r, other), score in found.items():
            other_key = ids.sym_key(other)
            key = (s, r, other) if ask.role == "subject" else (other, r, s)
            tier = ("exact" if other_key in named and group[other_key] != group.get(ask.symbol)
                    else "strong" if n_named == 1 else "weak")
            mine.append((_RANK[tier], -score * TIERS[tier], ids.rel_key(r), other_key, key))
        for tr, neg, _, other_key, key in heapq.nsmallest(max_answers, mine):
            cands.append((tr, neg, ids.triple(key), (res, key), other_key, ask))
    t_credit = time.perf_counter()
    cands.sort(key=lambda c: (c[0], c[1], c[2]))
    credits: dict[str, Credit] = {}
    pinned: set[str] = set()
    priority: list[str] = []
    seen: set[str] = set()

    def push(uid: str) -> None:
        if uid not in seen:
            seen.add(uid)
            priority.append(uid)

    def credit(uid: str, tier: str, score: float, fact: Triple, proof: Proof, first: bool = True) -> None:
        if uid not in credits:
            credits[uid] = Credit(uid, score, tier, fact, proof)
        if first:
            push(uid)

    best: dict[Ask, tuple] = {}
    for c in cands:
        if c[0] < _RANK["weak"]:
            best.setdefault(c[5], c)
    def subjects() -> None:
        for ask in asks:
            for uid in sorted(topic_units.get(ask.symbol, ())):
                if visible(uid) and ask in best:
                    tr, neg, fact, (res, key), _, _ = best[ask]
                    credit(uid, "subject", -neg, fact, res.fact_proof(key))
                elif visible(uid):
                    push(uid)

    for i, (tr, neg, fact, (res, key), other_key, ask) in enumerate(cands):
        proof: Proof = res.fact_proof(key)
        tier = _TIER[tr]
        for leaf in proof.leaves():
            for uid in sorted(fact_units.get(leaf, ())):
                if visible(uid):
                    if proof.kind == "asserted" and tier != "weak":
                        pinned.add(uid)
                    credit(uid, tier, -neg, fact, proof, tier != "weak")
        for uid in sorted(topic_units.get(other_key, ())):
            if visible(uid):
                credit(uid, "answer", -neg, fact, proof, tier != "weak")
        if i == 0:
            subjects()
    if not cands:
        subjects()
    chain = None
    if cands and cands[0][0] < _RANK["weak"]:
        tr, neg, fact, (res, key), _, _ = cands[0]
        chain = {"fact": str(fact), "units": _leaf_units(res.fact_proof(key), fact_units, visible)}
    stats = {"asks": per_ask, "candidates": len(cands), "best_chain": chain,
             "closure_ms": round((t_credit - t0) * 1000, 3),
             "credit_ms": round((time.perf_counter() - t_credit) * 1000, 3)}
    return Expansion(credits, frozenset(pinned), tuple(sorted({a.symbol for a in question.asks})),
                     question.relations, (), len(named), limits, truncated, stats, tuple(priority))


def _leaf_units(proof: Proof, fact_units, visible) -> list[str]:
    return list(dict.fromkeys(u for leaf in proof.leaves() for u in sorted(fact_units.get(leaf, ())) if visible(u)))


def answering_priority(exp: Expansion, fact_units, visible, asks: list | None = None) -> Expansion:
    """The general closure lane's expansion with its answer-carrying units (tiers exact and strong,
    best candidate first) as the priority, and its best answering chain (and ``asks``, the
    outcome of the asks that found none) in the stats."""
    carriers = [u for u, c in exp.credits.items() if c.tier in ("exact", "strong")]
    best = next((c for c in exp.credits.values() if c.tier in ("exact", "strong")), None)
    chain = None if best is None else {"fact": str(best.fact), "units": _leaf_units(best.proof, fact_units, visible)}
    extra = {} if not asks else {"asks": asks}
    return replace(exp, priority=tuple(carriers), stats={**exp.stats, "best_chain": chain, **extra})


def explain(question: Question, exp: Expansion | None, reasons: Callable[[list[str]], dict[str, str]]) -> dict:
    """The trace's account of a relational question: what was asked, whether the closure found an
    answer, and why a unit of the best answering chain (or any answer-carrying unit) was cut.

    ``reasons`` maps unit ids to ``kept`` or the threshold that cut them
    (:func:`~thinkingdb.retrieval.fusion.cut_reasons`).

    >>> explain(Question(("nucleus",), (), ()), None, lambda ids: {})["reason"]
    "no symbol of the question is in the caller's facts"
    """
    out: dict = {"question": question.to_json()}
    stats = {} if exp is None else exp.stats
    asks = stats.get("asks")
    if asks is not None:
        out["asks"] = asks
    chain = stats.get("best_chain")
    out["answered"] = chain is not None
    if exp is None or exp.limits is None:
        out["reason"] = "no symbol of the question is in the caller's facts"
    elif chain is None:
        if not question.asks:
            named = "no relation phrase of this knowledge base" if question.symbols else "no symbol"
            out["reason"] = f"the question names {named}, and no fact links its symbols within the bounds"
        else:
            cut = f" (cut short by the {exp.truncated} bound)" if exp.truncated else ""
            pats = ", ".join(a.describe() for a in question.asks)
            out["reason"] = f"the closure found no fact for {pats} within the bounds{cut}"
    if chain is not None:
        out["best_chain"] = {"fact": chain["fact"], "units": reasons(chain["units"])}
        cut = {u: why for u, why in reasons(list(exp.priority)).items() if why != "kept"}
        out["cut"] = dict(list(cut.items())[:50])
    return out
