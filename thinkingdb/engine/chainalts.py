"""The chain engine's alternatives (:mod:`thinkingdb.engine.chain`): noisy-or with ``k > 1`` and
``why``'s other proofs.

With alternatives the reference engine keeps, for each fact, every distinct derivation it fired,
with its best score and the round that first reached it. A derivation of ``n T g`` is one step
``n → c`` with ``c T g``; it fires in the round after its step fact or ``c``'s fact got a version,
so its best is the step's and ``c``'s versions combined, first reached in the round after the later
of the versions giving that float (:func:`_fired`; under a depth bound only rounds up to it count).
With the goal bound every node's versions come from the replay (:func:`keep_alternatives`). With
the node bound each successor ``c`` of the start is searched and replayed like the start
(:func:`from_successors`): its versions within ``DELTA`` of its best, the only ones a best
combination can use, are the full closure's. The successors a search surely reads (the first
``alternatives + 2`` by upper bound, but the best derivation's own and the asserting ones) are
replayed together, once per goal, over the union of their regions (:func:`_solve_many`); a node
with many successors paid one replay per successor per goal before.
"""

from __future__ import annotations

from .chaindepth import solve

__all__ = ["from_successors", "keep_alternatives"]


def from_successors(res, start, goal, ends, got) -> None:
    """The alternatives of ``start``'s fact for ``goal``: each step ``start → c`` with ``c``'s
    fact for the goal, ``c``'s versions from its own search (exact within ``DELTA`` of its best,
    the only versions a best combination can use). Successors are searched in the order of an
    upper bound (``w · step · max P_c(a) · conf``, blocking ignored) until the bound falls
    below the ``alternatives + 1``-th derivation found."""
    w, want = res.w, res._k + 1
    cands = []
    for c, e in res._steps(start).items():
        if c in ends:
            ub = ends[c]
        else:
            got_c = res._searched.get(c)
            if got_c is None:
                P = res._forward(c)
                got_c = res._searched[c] = (P, res._slack(P))
            P = got_c[0]
            ub = max((P[a] * conf for a, conf in ends.items() if a in P), default=None)
            if ub is None:
                continue
        cands.append((-(w * e) * ub, res.ids.sym_rank(c), c))
    cands.sort()
    found: dict[int, dict] = {}
    if got is not None and res.depth is None:
        found[start] = got

    def versions_of(c):
        if c in ends:
            return [(ends[c], 0, None)]
        if c not in found:
            if res.depth is None:
                found[c] = res._solve(c, goal, ends)
            else:   # the derivation fires by round depth: c's fact within depth - 1
                found[c] = solve(res, c, goal, ends, res.depth - 1, res._layers(c, res.depth - 1))
        return found[c].get(c)

    order = [c for _, _, c in cands]
    bound = {c: -nub for nub, _, c in cands}
    if res.depth is None:   # the successors a search surely reads: one replay for all of them
        cur = res.rec.get(res.tkey(start, goal))
        skip = set(ends) | {start} | ({cur[-1][2]} if cur is not None else set())   # (the best's own: left out)
        batch = [c for c in order[:want + 1] if c not in skip]
        if len(batch) > 1:
            found.update(_solve_many(res, batch, goal, ends))
    keep_alternatives(res, start, goal, versions_of, lambda c, d: _path(res, goal, c, d, found.get(c)),
                      order, bound, want)


def _solve_many(res, cs, goal, ends) -> dict:
    """``{c: versions}`` for those of the nodes ``cs`` one replay settles: the goal replayed once
    over the union of their regions (the nodes each one's slack steps lead through to the ends
    within ``DELTA`` of its best, :meth:`~thinkingdb.engine.chainresult.ChainResult._region`). More
    of the real steps than one node's region, so a node's versions within ``DELTA`` of its best are
    the full closure's as in its own replay; one whose value falls short (a better chain ran
    through another asserting node) is left to its own search (``_solve``)."""
    region: set[int] = set()
    edges: dict[int, set[int]] = {}
    tops = {}
    for c in cs:
        got = res._searched.get(c)
        if got is None:
            P = res._forward(c)
            got = res._searched[c] = (P, res._slack(P))
        P, parents = got
        if not any(a in P for a in ends):
            continue
        tops[c], sub = res._region(ends, P, parents)
        region |= sub
        for v in sub:
            edges.setdefault(v, set()).update(u for u, _ in parents.get(v, ()) if u in sub)
    if not tops:
        return {}
    terms = {a: conf for a, conf in ends.items() if a in region}
    vers = res._simulate(goal, terms, lambda v: [(u, None) for u in edges.get(v, ())])
    return {c: vers for c, top in tops.items() if c in vers and vers[c][-1][0] >= top * (1 - res.delta / 10)}


def _path(res, goal, c, depth, vers) -> dict:
    """``{T key: versions}`` of the facts the proof of ``c``'s fact at ``depth - 1`` goes through."""
    table, n, limit = {}, c, depth - 1
    while vers is not None and n in vers:
        v = next(x for x in reversed(vers[n]) if x[1] <= limit)
        if v[2] is None:
            break
        table[res.tkey(n, goal)] = vers[n]
        n, limit = v[2], v[1] - 1
    return table


def keep_alternatives(res, n, goal, versions_of, path_of, order=None, bound=None, want=None) -> None:
    """Keep ``n``'s best other derivations for ``goal`` (``res.alts``): for each step ``n → c``
    with a fact ``c T goal`` (``versions_of(c)``: its versions), the derivation's score is its
    best over the rounds that fire it — when the step fact or ``c``'s fact got a version the
    round before — and its depth that of the first round reaching it (the reference engine
    keeps a derivation's first best). The derivation of ``n``'s fact itself is left out."""
    want = res._k + 1 if want is None else want
    key = res.tkey(n, goal)
    if res.asserted(key) is None:
        cur = res.rec.get(key)
        if cur is None:
            return
        best_next = cur[-1][2]
    else:
        best_next = None
    rank = res.ids.key_rank
    if order is None:
        order = sorted(res.steps(n), key=res.ids.sym_rank)
    out: list = []
    for c in order:
        res._tick()
        if bound is not None and len(out) >= want and bound[c] * (1 + res.delta) < out[want - 1][0]:
            break
        if c == best_next:
            continue
        vc = versions_of(c)
        if not vc:
            continue
        got = _fired(res, n, c, vc)
        if got is None:
            continue
        score, depth = got
        canon = tuple(rank(k) for k in res.premises(n, c, goal))
        out.append((score, depth, canon, c))
        out.sort(key=lambda t: (-t[0], t[1], t[2]))
        del out[want:]
    if out:
        res.alts[key] = [(sc, d, c, path_of(c, d)) for sc, d, _, c in out]


def _fired(res, n, c, vc) -> tuple | None:
    """``(score, depth)`` of the derivation of ``n``'s fact through ``c`` (``vc``: ``c``'s versions
    ``[(score, depth, next)]``): its best score over the rounds that fire it, first reached."""
    ev = res.versions(res.ekey(n, c))
    rounds = sorted({d + 1 for d, _ in ev} | {v[1] + 1 for v in vc})
    if res.depth is not None:
        rounds = [r for r in rounds if r <= res.depth]
    best = None
    for r in rounds:
        e = next((x for x in reversed(ev) if x[0] <= r - 1), None)
        v = next((x for x in reversed(vc) if x[1] <= r - 1), None)
        if e is None or v is None:
            continue
        s = res.combine(e[1], v[0])
        if best is None or s > best[0]:
            best = (s, r)
    return best
