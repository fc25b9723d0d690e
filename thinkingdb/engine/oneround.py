"""One-round rule sets: which rules qualify, and their join in pure Python for small inputs.

A rule set finishes in one round when every rule has exactly two premises over variables only, the
premises share exactly one variable ``?y`` and each has one other variable of its own, the head
relates those two other variables (in either order), and no rule's premise uses a relation that any
rule of the set derives (:func:`one_round_plan`). Every derivation then has depth 1 and asserted
premises, so the closure is one join per rule.

Two executors run that join with the same results (facts, scores, depths, proofs, bounds):
:mod:`thinkingdb.engine.nonrecursive` over numpy arrays, and :func:`run_small` here, over the
graph's dicts, when its work (facts walked plus candidate 2-paths) is at most :data:`SMALL_JOIN`.
Below that the pure-Python join is faster than importing numpy (about 60 ms, and 13-15 MB, in a
fresh process) and its join together; ``stats.engine`` says ``"one-round-python"``.

Per head key the best derivation is kept as the semi-naive engine keeps it: the highest score
``(w * c_p) * c_q`` (premise order), then the canonical order (rule name, then premise keys' ranks;
for one rule and one head the premise keys differ only in ``?y``, so ``?y``'s rank decides).

The common case runs grouped (:mod:`thinkingdb.engine.grouped`): over whole relations, one rule per
head relation, each walking a premise whose subject is a head variable (composition ``?x r ?y, ?y s
?z`` is one), each walked subject's best ``?y`` per head in one small dict, scores and proofs rebuilt
from the graph when read. Anything else (a scope, two rules on one head relation) runs the general
loop (:func:`_join`).

>>> from thinkingdb.model import Atom, Rule, Var
>>> x, y, z = Var("x"), Var("y"), Var("z")
>>> [s.p_drives for s in one_round_plan((Rule("c", (Atom(x, "r", y), Atom(y, "r", z)), Atom(z, "h", x)),),
...                                     Limits(), 0)]
[False]
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager

from ..model import Limits, Rule, Var
from .grouped import _ByObject, _candidates, _Deadline, _fill_grouped, _sides
from .joins import FactStore
from .results import ClosureResult

# The join runs in pure Python (run_small) up to this much work: facts walked plus candidate 2-paths
# (join_work). Measured on the closure benchmark's layered DAGs (docs/closure.md, "Small inputs"): the
# general loop ~0.65 us a unit (~20 ms at the cap), the grouped one ~0.2 us, where numpy's import alone
# takes ~60 ms in a fresh process.
SMALL_JOIN = 30_000


class _Shape:
    """Where a rule's terms sit: premise relations, which end of each premise is the join variable,
    whether premise 0 drives (provides the head subject)."""

    __slots__ = ("candidates", "head", "idx", "name", "p_drives", "p_key_subj", "q_key_subj", "rel_p", "rel_q",
                 "weight")

    def __init__(self, idx, rule, p_key_subj, q_key_subj, p_drives):
        self.idx, self.name, self.weight = idx, rule.name, rule.weight
        self.rel_p, self.rel_q = rule.premises[0].relation, rule.premises[1].relation
        self.p_key_subj, self.q_key_subj, self.p_drives = p_key_subj, q_key_subj, p_drives
        self.head = rule.head.relation
        self.candidates = None   # over whole relations: counted by join_work, reused as run_small's firings


def _shape(idx: int, rule: Rule) -> _Shape | None:
    if len(rule.premises) != 2:
        return None
    p, q, h = rule.premises[0], rule.premises[1], rule.head
    terms = (p.subject, p.object, q.subject, q.object, h.subject, h.object)
    if not all(isinstance(t, Var) for t in terms):
        return None
    if p.subject == p.object or q.subject == q.object or h.subject == h.object:
        return None
    shared = set(p.variables()) & set(q.variables())
    if len(shared) != 1:
        return None
    (y,) = shared
    a = p.object if p.subject == y else p.subject
    b = q.object if q.subject == y else q.subject
    if {h.subject, h.object} != {a, b}:
        return None
    return _Shape(idx, rule, p.subject == y, q.subject == y, h.subject == a)


def one_round_plan(rules: tuple[Rule, ...], limits: Limits, alternatives: int) -> list[_Shape] | None:
    """The rules' shapes when the one-round join is exact for them, else None."""
    if alternatives or not rules or limits.max_depth == 0:
        return None
    shapes = [_shape(i, r) for i, r in enumerate(rules)]
    if any(s is None for s in shapes):
        return None
    if len({r.name for r in rules}) != len(rules):   # the canonical tie-break needs distinct names
        return None
    heads = {r.head.relation for r in rules}
    if any(p.relation in heads for r in rules for p in r.premises):
        return None
    return shapes


def join_work(g, shapes: list[_Shape], scope, cap: int) -> int | None:
    """The pure-Python join's work: the facts it walks (every fact of each rule's walked premise
    relation, in scope or not) plus the candidate 2-paths in ``scope``; None past ``cap`` (the count
    stops there, so it costs at most about ``cap`` steps itself; nothing when the walked relations
    alone hold more than ``cap`` facts). Over whole relations (no ``scope``) the count runs in C
    over the walked facts, and each rule's candidates are kept on its shape for :func:`run_small`."""
    walked = [g.relation_id(sh.rel_q if sh.p_key_subj and not sh.q_key_subj else sh.rel_p) for sh in shapes]
    if sum(g.relation_size(r) for r in walked if r is not None) > cap:
        return None
    total = 0
    if scope is None:
        for sh in shapes:
            (rows, w_subj), keyed, _ = _sides(g, sh)
            if rows is not None:
                sh.candidates = _candidates(rows, w_subj, keyed)
                total += sum(map(len, rows.values())) + sh.candidates
        return total if total <= cap else None
    for sh in shapes:
        (rows, w_subj), keyed, _ = _sides(g, sh)
        if rows is None:
            continue
        for s, row in rows.items():
            total += len(row)
            if scope is not None and not scope[s]:
                continue
            for o in row:
                if scope is not None and not scope[o]:
                    continue
                other = keyed.get(s if w_subj else o)
                if other:
                    total += len(other) if scope is None else sum(1 for t in other if scope[t])
            if total > cap:
                return None
    return total if total <= cap else None


def run_small(g, ids, rules, shapes: list[_Shape], scope, limits: Limits, deadline):
    """The one-round join over the graph's dicts: ``(result, firings)``, ``result`` a
    :class:`~thinkingdb.engine.results.ClosureResult` (``stats`` left for the caller)."""
    store = FactStore(g._out, g._in, scope, g._rel_sizes)
    with no_gc():
        firings, truncated = _fill(g, ids, shapes, scope, deadline, store)
    rec = store.rec
    if limits.max_derived is not None and len(rec) > limits.max_derived:
        kept = {k: rec[k] for k in sorted(rec, key=ids.key_rank)[:limits.max_derived]}
        store = FactStore(g._out, g._in, scope, g._rel_sizes)
        for k, v in kept.items():
            store.rec[k] = v
            store.add_derived(k)
        truncated = "derived"
    return ClosureResult(g, ids, rules, store, {}, None, 0, truncated, None), firings


@contextmanager
def no_gc():
    """The cyclic garbage collector paused: building many small acyclic containers (tuples, sets)
    otherwise triggers collections that walk every container the process holds (the graph's dicts
    included) -- half the time of a 15,000-fact join."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _fill(g, ids, shapes, scope, deadline, store) -> tuple[int, str | None]:
    """Every head relation's best derivations into ``store`` (nothing on timeout):
    ``(firings, truncated)``."""
    sym_rank, _ = g.ranks()
    if scope is None and len({sh.head for sh in shapes}) == len(shapes) and not any(
            sh.p_key_subj and sh.q_key_subj for sh in shapes):
        return _fill_grouped(g, ids, shapes, sym_rank, deadline, store)
    ranks = {name: i for i, name in enumerate(sorted(sh.name for sh in shapes))}
    n = max(sh.idx for sh in shapes) + 1
    name_rank, y_at = [0] * n, [0] * n   # per rule index: its name's rank, where ?y sits in premise 0's key
    for sh in shapes:
        name_rank[sh.idx], y_at[sh.idx] = ranks[sh.name], 0 if sh.p_key_subj else 2
    rec, d_out = store.rec, store.d_out
    firings = 0
    for sh in shapes:
        try:
            firings += _join(g, ids, sh, scope, rec, name_rank, y_at, sym_rank, deadline)
        except _Deadline:
            rec.clear()
            return firings, "time"
    for k in rec:
        x, h, z = k
        outs = d_out.get(h)
        if outs is None:
            outs = d_out[h] = {}
        col = outs.get(x)
        if col is None:
            col = outs[x] = set()
        col.add(z)
    store.d_in = _ByObject(d_out)
    return firings, None


def _join(g, ids, sh: _Shape, scope, rec: dict, name_rank, y_at, sym_rank, deadline) -> int:
    """Every candidate of one rule into ``rec`` (head key -> (score, 1, rule index, premise keys)),
    each head keeping its best; returns the candidates."""
    (rows, w_subj), keyed, swapped = _sides(g, sh)
    if rows is None:
        return 0
    w, idx, mine_rank = sh.weight, sh.idx, name_rank[sh.idx]
    h = ids.rel(sh.head)
    rw, rk = (ids.rel(sh.rel_q), ids.rel(sh.rel_p)) if swapped else (ids.rel(sh.rel_p), ids.rel(sh.rel_q))
    k_subj = sh.p_key_subj if swapped else sh.q_key_subj   # ?y is the keyed premise's subject
    hrow = g._out[h] if h < len(g._out) else {}   # asserted head facts: never replaced
    # the walked premise's other end is the head's subject when the walked premise drives
    w_is_x = sh.p_drives != swapped
    count = 0
    get = rec.get
    for s, row in rows.items():
        if deadline is not None and time.perf_counter() > deadline:
            raise _Deadline
        if scope is not None and not scope[s]:
            continue
        for o, cw in row.items():
            if scope is not None and not scope[o]:
                continue
            y, mine = (s, o) if w_subj else (o, s)
            other = keyed.get(y)
            if not other:
                continue
            yr = sym_rank[y]
            wkey = (s, rw, o)   # one tuple for all its derivations
            for t, ck in other.items():
                if scope is not None and not scope[t]:
                    continue
                count += 1
                score = (w * ck) * cw if swapped else (w * cw) * ck   # (w * c_p) * c_q
                x, z = (mine, t) if w_is_x else (t, mine)
                head = (x, h, z)
                cur = get(head)
                if cur is None:
                    a = hrow.get(x)
                    if a is not None and z in a and (scope is None or (scope[x] and scope[z])):
                        continue
                elif score < cur[0] or (score == cur[0] and (mine_rank, yr) > (
                        name_rank[cur[2]], sym_rank[cur[3][0][y_at[cur[2]]]])):
                    continue
                kkey = (y, rk, t) if k_subj else (t, rk, y)
                rec[head] = (score, 1, idx, (kkey, wkey) if swapped else (wkey, kkey))
    return count


