"""The reference engine for rule sets with ``not`` premises or statement-node heads: stratum by stratum.

:func:`thinkingdb.stratify.strata` orders the rules so that every relation a ``not`` premise names is
complete before a rule relies on its absence. Each stratum runs semi-naive rounds to its fixpoint over
everything known so far (asserted facts, then what lower strata derived): round 1 fires every rule of
the stratum over all facts, later rounds only over the facts new or improved in the round before. A
match fires when no ``not`` premise matches (:class:`~thinkingdb.engine.joins.Plan` ``special``); a
statement-node head makes the node's key from the matched values.

Depth is a property of a derivation here (1 + its deepest premise), not of a round: ``max_depth`` drops
a derivation deeper than the bound and reports ``depth``. Trust: a rule with ``not`` premises runs only
while nothing is truncated -- after any bound cut the run short, an absence may be an artefact of the
bound, so those rules do not fire (the other rules of their stratum do) and the result stays
``truncated``: answers may be missing, never wrong. A seeded scope would make facts outside it look
absent, so the run is in full mode -- or goal-directed, over the demand of the question, which includes
every ``not`` atom whole (see ``admit``).
"""

from __future__ import annotations

import time

from ..arith import run as run_constraints
from ..model import Node, Var, node_key
from ..stratify import strata
from .joins import ANY, CONST, NODE, FactStore, compile_rule, fire
from .results import ClosureResult
from .rules import carries_score

__all__ = ["stratified_closure", "goal_directed_refusal", "needs"]


class _Timeout(Exception):
    pass


def _value(spec, env, ids):
    """The symbol id a compiled head or 'not' term stands for (None: a node that does not exist)."""
    kind, v = spec
    if kind == CONST:
        return v
    if kind == NODE:
        rel, args = v
        return ids.sym(node_key(rel, [ids.sym_key(_value(a, env, ids)) for a in args]))
    return env[v]


def _node_id(spec, env, ids):
    """Like :func:`_value` but never makes a new node: a node nobody made has no facts."""
    kind, v = spec
    if kind != NODE:
        return _value(spec, env, ids)
    rel, args = v
    return ids.find_sym(node_key(rel, [ids.sym_key(_value(a, env, ids)) for a in args]))


def _special(plan, ids, store, constraints=()):
    """``env -> head key``, or None when a constraint fails or a 'not' premise matches a known fact.
    Constraints run first, in order: an assignment fills its variable's slot of ``env``."""
    hs, hr, ho = plan.head
    negs = plan.negs
    assigned = [(c.left, plan.slots[c.left]) for c in constraints if c.assigns]
    used = sorted({v for c in constraints for v in c.variables()} - {v for v, _ in assigned}, key=str)
    slots = [(v, plan.slots[v]) for v in used]
    sym_key, sym = ids.sym_key, ids.sym

    def special(env):
        if constraints:
            values = {v: sym_key(env[i]) for v, i in slots}
            if run_constraints(constraints, values) is None:
                return None
            for v, i in assigned:
                env[i] = sym(values[v])
        for s_spec, r, o_spec in negs:
            s = None if s_spec[0] == ANY else _node_id(s_spec, env, ids)
            o = None if o_spec[0] == ANY else _node_id(o_spec, env, ids)
            if (s_spec[0] != ANY and s is None) or (o_spec[0] != ANY and o is None):
                continue   # a statement node that was never made: the fact is absent
            if s is not None and o is not None:
                if store.score_depth((s, r, o)) is not None:
                    return None
            elif s is not None:
                if next(iter(store.out(r, s)), None) is not None:
                    return None
            elif o is not None:
                if next(iter(store.inn(r, o)), None) is not None:
                    return None
            elif store.size(r):
                return None
        return _value(hs, env, ids), hr, _value(ho, env, ids)
    return special


def needs(rules) -> str:
    """What in ``rules`` needs this engine (the fast paths and the columnar engine decline it).

    >>> from thinkingdb.model import Atom, Rule, Var
    >>> x = Var("x")
    >>> needs([Rule("r", (Atom(x, "a", "b"),), Atom(x, "c", "d"), negated=(Atom(x, "e", "f"),))])
    "'not' premises"
    """
    found = []
    if any(r.negated for r in rules):
        found.append("'not' premises")
    if any(r.constraints for r in rules):
        found.append("comparisons")
    if any(isinstance(t, Node) for r in rules for t in (r.head.subject, r.head.object)):
        found.append("statement-node heads")
    return ", ".join(found)


def goal_directed_refusal(rules) -> str | None:
    """Why ``rules`` cannot run goal-directed on this engine (None: they can). Comparisons assign
    values the demand tables cannot follow, and statement nodes are made, not matched, by the rules."""
    if any(r.constraints for r in rules):
        return "comparisons: the demand tables cannot follow assigned values; the full stratified closure ran"
    if any(isinstance(t, Node) for r in rules for a in (r.head,) + r.negated for t in (a.subject, a.object)):
        return "statement-node (n-ary) heads or 'not' premises; the full stratified closure ran"
    return None


def stratified_closure(g, ids, rules, scope, scope_list, truncated, limits, alternatives, deadline, admit=None):
    """Run ``rules`` stratum by stratum; returns ``(ClosureResult without stats, rounds, firings)``.

    ``admit`` (goal-directed runs): ``key -> budget`` of the demand (:mod:`thinkingdb.engine.demand`); a
    derived fact no demanded pattern matches (budget < 0) is not kept -- no answer needs it, so this is
    no truncation. Every ``not`` atom a demanded fact's rule checks is itself demanded, whole, so an
    absence is judged on the same facts as in the full closure."""
    order = strata(rules)
    store = FactStore(g._out, g._in, scope, g._rel_sizes)
    rec = store.rec
    hist: dict[tuple, list] = {}
    alts: dict[tuple, dict] | None = {} if alternatives else None
    names = [r.name for r in rules]
    pending: dict[tuple, tuple] = {}
    firings = rounds = n_derived = 0

    def tick() -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise _Timeout

    def canon(rule_idx: int, prems: tuple) -> tuple:
        return names[rule_idx], tuple(ids.key_rank(k) for k in prems)

    def make_emit(w: float, rule_idx: int):
        scored = carries_score(rules[rule_idx].head)   # a statement's roles 2.. score 1

        def emit(head: tuple, prems: tuple) -> None:
            score, depth = w, 0
            for k in prems:
                sd = store.score_depth(k)
                score *= sd[0]
                if sd[1] > depth:
                    depth = sd[1]
            depth += 1
            if not scored:
                score = 1.0
            if alts is not None and (limits.max_depth is None or depth <= limits.max_depth):
                mine = alts.setdefault(head, {})   # (a deeper derivation is past the bound, as a fact)
                old = mine.get((rule_idx, prems))
                if old is None or score > old[0]:
                    mine[(rule_idx, prems)] = (score, depth)
            if store.asserted_conf(*head) is not None:
                return
            cur = rec.get(head)
            if cur is not None and score <= cur[0]:
                return
            p = pending.get(head)
            if p is not None and (score < p[0] or (score == p[0] and (depth > p[1] or (
                    depth == p[1] and canon(rule_idx, prems) >= canon(p[2], p[3]))))):
                return
            pending[head] = (score, depth, rule_idx, prems)
        return emit

    def apply() -> dict:
        """Move the pending derivations into the store within the bounds; the new facts by relation."""
        nonlocal truncated, n_derived
        drop = set()
        if admit is not None:   # first: a fact no question needs is not a cut, whatever its depth or symbols
            drop |= {k for k in pending if admit(k) < 0}
        if limits.max_depth is not None:
            deep = {k for k, v in pending.items() if v[1] > limits.max_depth and k not in drop}
            if deep:
                drop |= deep
                truncated = truncated or "depth"
        if scope is not None:
            for k in pending:
                for s in (k[0], k[2]):
                    if s >= len(scope):   # a statement node made from symbols in scope is in scope
                        scope.extend(b"\x01" * (s + 1 - len(scope)))
            out = {k for k in pending if k not in drop and not (scope[k[0]] and scope[k[2]])}
            if out:
                drop |= out
                truncated = truncated or "nodes"
        new_keys = [k for k in pending if k not in rec and k not in drop]
        if limits.max_derived is not None and n_derived + len(new_keys) > limits.max_derived:
            ordered = sorted(new_keys, key=ids.key_rank)
            drop.update(ordered[max(limits.max_derived - n_derived, 0):])
            truncated = truncated or "derived"
        delta: dict[int, list] = {}
        for k, v in pending.items():
            if k in drop:
                continue
            old = rec.get(k)
            if old is None:
                n_derived += 1
                store.add_derived(k)
            else:
                hist.setdefault(k, []).append(old)
            rec[k] = v
            delta.setdefault(k[1], []).append((k[0], k[2]))
        pending.clear()
        return delta

    try:
        for stratum in order:
            if truncated:   # an absence after a cut bound proves nothing: rules with 'not' do not fire
                stratum = [i for i in stratum if not rules[i].negated]   # (the others derive true facts)
            sizes: dict[int, int] = {}

            def size(r: int) -> int:
                if r not in sizes:
                    sizes[r] = store.size(r)
                return sizes[r]

            plans = []
            for i in stratum:
                rule = rules[i]
                emit = make_emit(rule.weight, i)
                ps = [compile_rule(i, rule, k, ids.rel, ids.sym, size) for k in range(len(rule.premises))]
                n_vars = len(ps[0].slots) if ps else 0
                if not ps:   # only ground 'not' premises: fires once, on nothing
                    head = _special(_GroundPlan(rule, ids), ids, store)({})
                    if head is not None:
                        firings += 1
                        emit(head, ())
                    continue
                for p in ps:
                    p.special = _special(p, ids, store, rule.constraints)
                plans.append((ps, emit, n_vars))
            delta = None
            while True:
                for ps, emit, n_vars in plans:
                    if delta is None:   # round 1 of the stratum: every match over all facts known
                        p = min(ps, key=lambda p: size(p.first[1]))
                        firings += fire(p, list(store.pairs(p.first[1], scope_list)), store, emit, tick, n_vars)
                    else:
                        for p in ps:
                            facts = delta.get(p.first[1])
                            if facts:
                                firings += fire(p, facts, store, emit, tick, n_vars)
                rounds += 1
                if not pending:
                    break
                delta = apply()
                if not delta or truncated == "derived":
                    break
            if truncated == "derived":
                break
    except _Timeout:
        pending.clear()
        truncated = truncated or "time"
    res = ClosureResult(g, ids, rules, store, hist, alts, alternatives, truncated, None)
    return res, rounds, firings


class _GroundPlan:
    """The compiled head and 'not' premises of a rule without positive premises."""

    def __init__(self, rule, ids) -> None:
        def spec(t):
            if isinstance(t, Node):
                return NODE, (t.relation, tuple(spec(a) for a in t.args))
            if isinstance(t, Var):
                return ANY, None
            return CONST, ids.sym(t)
        h = rule.head
        self.head = (spec(h.subject), ids.rel(h.relation), spec(h.object))
        self.negs = tuple((spec(a.subject), ids.rel(a.relation), spec(a.object)) for a in rule.negated)
