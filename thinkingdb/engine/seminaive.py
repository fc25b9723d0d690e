"""The semi-naive reference engine: the oracle of every faster engine, and the engine of small inputs.

Round ``d`` fires every rule at the facts new or improved in round ``d - 1`` (round 1: at every
asserted fact in scope), one tuple-at-a-time join per rule and start premise
(:mod:`thinkingdb.engine.joins`); each head keeps its best derivation (highest score, then lowest
depth, then the canonical order: rule name, then premise keys' ranks), applied at the end of the
round. Bounds and their reports are described in :mod:`thinkingdb.engine.closure`.

A ``budget`` makes it give up (return None) past that many rule firings:
:func:`~thinkingdb.engine.closure.closure` tries it on small inputs, where it is done before numpy
would have been imported, and runs the columnar engine when it gives up.
"""

from __future__ import annotations

import heapq
import time

from .joins import FactStore, compile_rule, fire
from .results import ClosureResult

__all__ = ["semi_naive", "SMALL_FACTS", "SMALL_BUDGET"]

# Inputs of at most SMALL_FACTS asserted facts are closed by this engine first, within SMALL_BUDGET rule
# firings (about 3.5 us each: ~35 ms, less than importing numpy costs a fresh process; docs/closure.md,
# "Small inputs"); past the budget the columnar engine or a fast path runs.
SMALL_FACTS = 2_000
SMALL_BUDGET = 10_000


class _Timeout(Exception):
    pass


class _Found(Exception):
    pass


class _OverBudget(Exception):
    pass


def semi_naive(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline, admit=None,
               probe=True, budget=None):
    """The semi-naive reference engine over the asserted facts in ``scope``:
    ``(result, rounds, firings, asserted in scope)``, ``result.stats`` left for the caller; None when
    ``budget`` (rule firings, the probing round's included) ran out first (nothing is kept then).

    ``admit(key)``: goal-directed runs, the last round a fact may be admitted in (below the current
    round: dropped); ``probe``: whether a depth bound runs its probing round. A ``truncated`` of
    ``"depth"`` given by the demand (a deeper fact foreseen) comes after every round: a bound that cuts
    inside the rounds is reported instead, as the full closure would (it stops there)."""
    foreseen, truncated = (True, None) if truncated == "depth" else (False, truncated)
    store = FactStore(g._out, g._in, scope, g._rel_sizes)
    rec = store.rec
    hist: dict[tuple, list] = {}
    alts: dict[tuple, dict] = {} if alternatives else None
    sizes = {}

    def size(r: int) -> int:
        if r not in sizes:
            sizes[r] = store.size(r)
        return sizes[r]

    n_vars = [len({v for p in rule.premises for v in p.variables()}) for rule in rules]
    plans = [[compile_rule(i, rule, k, ids.rel, ids.sym, size) for k in range(len(rule.premises))]
             for i, rule in enumerate(rules)]
    names = [rule.name for rule in rules]
    firings = rounds = 0
    state = {"round": 0, "probe": False}
    pending: dict[tuple, tuple] = {}

    if budget is not None and budget < 0:
        return None
    spent = [0]

    def tick() -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise _Timeout

    def canon(rule_idx: int, prems: tuple) -> tuple:
        return names[rule_idx], tuple(ids.key_rank(k) for k in prems)

    a_out, n_out = g._out, len(g._out)

    def conf_of(s: int, r: int, o: int):
        """Asserted confidence in scope (inlined twin of FactStore.asserted_conf: this is the hot path)."""
        if r < n_out and (scope is None or (scope[s] and scope[o])):
            row = a_out[r].get(s)
            if row is not None:
                return row.get(o)
        return None

    def make_emit(plan):
        w, rule_idx = plan.weight, plan.rule_idx

        def emit(head: tuple, prems: tuple) -> None:
            score, depth = w, 0
            for k in prems:
                c = conf_of(*k)
                if c is not None:
                    score *= c
                else:
                    v = rec[k]
                    score *= v[0]
                    if v[1] > depth:
                        depth = v[1]
            depth += 1
            if alts is not None and not state["probe"]:
                mine = alts.setdefault(head, {})
                key = (rule_idx, prems)
                old = mine.get(key)
                if old is None or score > old[0]:
                    mine[key] = (score, depth)
            if conf_of(*head) is not None:
                return
            cur = rec.get(head)
            if cur is not None and score <= cur[0]:
                return
            if state["probe"] and (admit is None or admit(head) >= 0):
                raise _Found
            p = pending.get(head)
            if p is not None:
                if score < p[0] or (score == p[0] and (depth > p[1] or (depth == p[1] and canon(rule_idx, prems) >= canon(p[2], p[3])))):
                    return
            pending[head] = (score, depth, rule_idx, prems)
            if capped is not None and p is None and cur is None:
                keep_within_cap(head)
        return emit

    # max_derived inside a round: of the new facts a round finds, only the canonically first ``room``
    # that survive the demand and scope filters can be kept (see below), so pending holds at most that
    # many: a later, canonically smaller one evicts the largest. Same facts kept, bounded memory.
    capped: list | None = [] if limits.max_derived is not None else None

    def keep_within_cap(head: tuple) -> None:
        if admit is not None and admit(head) < state["round"]:
            return                                  # dropped after the round anyway: not counted
        if scope is not None and not (scope[head[0]] and scope[head[2]]):
            return
        a, b, c = ids.key_rank(head)
        heapq.heappush(capped, (-a, -b, -c, head))
        if len(capped) > state["room"]:
            del pending[heapq.heappop(capped)[3]]
            state["evicted"] = True

    def metered(emit):
        def counted(head: tuple, prems: tuple) -> None:
            spent[0] += 1
            if spent[0] > budget:
                raise _OverBudget
            emit(head, prems)
        return counted

    emits = {id(p): make_emit(p) if budget is None else metered(make_emit(p)) for ps in plans for p in ps}

    def run_round(delta_by_rel) -> int:
        count = 0
        for i, ps in enumerate(plans):
            if delta_by_rel is None:   # round 1: every match over the asserted facts, once per rule
                p = min(ps, key=lambda p: (0 if p.first[2] == 0 or p.first[4] == 0 else 1, size(p.first[1])))
                count += fire(p, store.asserted_pairs(p.first[1], scope_list), store, emits[id(p)], tick, n_vars[i])
            else:
                for p in ps:
                    facts = delta_by_rel.get(p.first[1])
                    if facts:
                        count += fire(p, facts, store, emits[id(p)], tick, n_vars[i])
        return count

    delta_by_rel = None
    n_derived = 0
    try:
        while True:
            if limits.max_depth is not None and rounds >= limits.max_depth:
                if not probe:   # goal-directed with budgets: the demand decided whether depth cut anything
                    break
                state["probe"] = True
                try:
                    run_round(delta_by_rel)
                except _Found:
                    truncated = truncated or "depth"
                break
            pending.clear()
            if capped is not None:
                capped.clear()
                state.update(room=max(limits.max_derived - n_derived, 0), evicted=False, round=rounds + 1)
            firings += run_round(delta_by_rel)
            rounds += 1
            if capped is not None and state["evicted"]:
                truncated = truncated or "derived"
            if not pending:
                break
            new_keys = [k for k in pending if k not in rec]
            drop: set = set()
            if admit is not None:   # goal-directed: only demanded facts, within their depth budget
                drop = {k for k in pending if admit(k) < rounds}
            if scope is not None:   # only a rule constant can lie outside the scope; it may not come in
                out = {k for k in new_keys if k not in drop and not (scope[k[0]] and scope[k[2]])}
                if out:
                    truncated = truncated or "nodes"
                    drop |= out
            if limits.max_derived is not None and n_derived + sum(1 for k in new_keys if k not in drop) > limits.max_derived:
                room = limits.max_derived - n_derived
                ordered = sorted((k for k in new_keys if k not in drop), key=ids.key_rank)
                drop.update(ordered[room:])
                truncated = truncated or "derived"
            delta_by_rel = {}
            for k, v in pending.items():
                if k in drop or store.asserted_conf(*k) is not None:   # asserted facts are never replaced
                    continue
                old = rec.get(k)
                if old is None:
                    n_derived += 1
                    store.add_derived(k)
                else:
                    hist.setdefault(k, []).append(old)
                rec[k] = v
                delta_by_rel.setdefault(k[1], []).append((k[0], k[2]))
            if truncated == "derived" or not delta_by_rel:
                break
    except _Timeout:
        truncated = truncated or "time"
    except _OverBudget:
        return None
    if foreseen:
        truncated = truncated or "depth"
    asserted = len(g) if scope is None else sum(1 for r in range(len(g._out)) for _ in store.asserted_pairs(r, scope_list))
    return ClosureResult(g, ids, rules, store, hist, alts, alternatives, truncated, None), rounds, firings, asserted
