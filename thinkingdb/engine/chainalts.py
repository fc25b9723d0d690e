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
combination can use, are the full closure's. A derived fact keeps ``alternatives`` other
derivations (none beats its best), an asserted one one more (noisy-or's ``k`` best proofs besides a
weaker assertion; :func:`_wanted`). The successors a search surely reads (one more than that by
upper bound, but the best derivation's own and the asserting ones) are replayed together, once per
goal, over the union of their regions (:func:`_solve_many`). When that union is a set of chains —
each node's region one path back from its best end, the paths agreeing where they meet, the usual
case — the replay is read off the chains, each node's versions from its one step's and its next
node's (:func:`replay_paths`), the start's own replay too.
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
    want = _wanted(res, start, goal)
    succ = res._succ
    if succ is None:   # [next node, w · step, its rank, P from its search (when first needed)]
        succ = res._succ = [[c, res.w * e, res.ids.sym_rank(c), None] for c, e in res._steps(start).items()]
    items = list(ends.items())
    cands = []
    for row in succ:
        c = row[0]
        if c in ends:
            ub = ends[c]
        else:
            P = row[3]
            if P is None:
                P = row[3] = res._search(c)[0]
            ub = None
            for a, conf in items:   # (max over the ends, as max() takes it)
                p = P.get(a)
                if p is not None and (ub is None or p * conf > ub):
                    ub = p * conf
            if ub is None:
                continue
        cands.append((-row[1] * ub, row[2], c))
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
    keep_alternatives(res, start, goal, versions_of, found.get, order, bound, want)


def _solve_many(res, cs, goal, ends) -> dict:
    """``{c: versions}`` for those of the nodes ``cs`` one replay settles: the goal replayed once
    over the union of their regions (the nodes each one's slack steps lead through to the ends
    within ``DELTA`` of its best, :meth:`~thinkingdb.engine.chainresult.ChainResult._region`). More
    of the real steps than one node's region, so a node's versions within ``DELTA`` of its best are
    the full closure's as in its own replay; one whose value falls short (a better chain ran
    through another asserting node) is left to its own search (``_solve``)."""
    searched = [(c,) + res._search(c) for c in cs]
    got = replay_paths(res, searched, goal, ends)
    if got is not None:
        return got
    region: set[int] = set()
    edges: dict[int, set[int]] = {}
    tops = {}
    for c, P, parents, _ in searched:
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


def replay_paths(res, searched, goal, ends) -> dict | None:
    """What :meth:`~thinkingdb.engine.chainresult.ChainResult._simulate` gives over the union of
    the regions of ``searched`` (``[(node, P, slack parents, links)]``, as :func:`_solve_many` takes
    them; ``links``: each node's one slack parent and the step's versions, filled here),
    computed along each node's one chain when the union is a set of chains: each node's region is
    one path back from its one best end (one slack parent per node, the start reached, no other
    asserting node on it) and the paths agree where they meet (one step out of each node). A node
    then fires only through its one step, in the round after the step fact or the next node got a
    version, so its versions follow from theirs (:func:`_through`) — the replay's, float for float,
    without its rounds. ``{node: versions}`` for the nodes within ``DELTA / 10`` of their bound
    (``{}``: none), or None when the union is not such chains (then the replay runs)."""
    delta, w, first, E, right = res.delta, res.w, res.shape.e_at == 0, res.E, res.shape.right
    evers, versions = res._evers, res.versions
    fwd: dict[int, int] = {}   # node -> its one step on
    vers: dict[int, list] = {}
    tops = {}
    for c, P, parents, links in searched:
        bound = [(P[a] * conf, a) for a, conf in ends.items() if a in P]
        if not bound:
            continue
        if c in parents:   # (a slack step into the start: its region goes on past it)
            return None
        top = max(b for b, _ in bound)
        near = [a for b, a in bound if b >= top * (1 - delta)]
        if len(near) != 1:
            return None
        v, left = near[0], len(P)
        tv = vers.get(v)
        if tv is None:
            if ends[v] <= 0:
                raise ValueError("zero score")
            tv = vers[v] = ((ends[v], 0, None),)
        while v != c:   # back from the end to c, each node's versions from the next one's
            link = links.get(v)
            if link is None:
                ps = parents.get(v)
                if ps is None or len(ps) != 1:
                    return None
                u = ps[0][0]
                key = (u, E, v) if right else (v, E, u)
                ev = evers.get(key) or versions(key)
                link = links[v] = (u, ev, ev[0][1] if len(ev) == 1 else None)
            u, ev, e = link
            left -= 1
            if u in ends or left < 0:
                return None
            f = fwd.get(u)
            if f is None:
                fwd[u] = v
                if e is not None and len(tv) == 1:   # (most steps: _through's first case, inline)
                    if e <= 0:
                        raise ValueError("zero score")
                    d = ev[0][0]
                    s, td, _ = tv[0]
                    tv = (((w * e) * s if first else (w * s) * e, 1 + (d if d > td else td), v),)
                else:
                    tv = _through(ev, tv, v, w, first)
                vers[u] = tv
            elif f != v:
                return None
            else:
                tv = vers[u]
            v = u
        tops[c] = top
    return {c: vers for c, top in tops.items() if vers[c][-1][0] >= top * (1 - delta / 10)}


def _through(ev, tv, v, w: float, first: bool) -> tuple:
    """The versions of a node whose one step goes to ``v`` (``ev``: the step fact's versions
    ``[(depth, score)]``, ``tv``: ``v``'s ``[(score, depth, next)]``; ``w``, ``first``: the rule's
    weight and whether the step is its first premise, for the engines' float order): round ``r``
    fires the step when either got a version in round ``r - 1`` and keeps what it derives when it
    beats the node's score, as :meth:`~thinkingdb.engine.chainresult.ChainResult._simulate` does."""
    out: list = []
    if len(ev) == 1:   # one step version, from round d + 1: v's last by then, then each later one
        d, e = ev[0]
        if e <= 0:
            raise ValueError("zero score")
        we, i, n = w * e, 0, len(tv)
        while i < n and tv[i][1] <= d:
            i += 1
        if i:
            s = tv[i - 1][0]
            out.append((we * s if first else (w * s) * e, d + 1, v))
        for t in tv[i:]:
            s = t[0]
            score = we * s if first else (w * s) * e
            if not out or score > out[-1][0]:
                out.append((score, t[1] + 1, v))
        return tuple(out)
    if any(e <= 0 for _, e in ev):
        raise ValueError("zero score")
    for r in sorted({d + 1 for d, _ in ev} | {t[1] + 1 for t in tv}):
        e = next((x for x in reversed(ev) if x[0] < r), None)
        t = next((x for x in reversed(tv) if x[1] < r), None)
        if e is None or t is None:
            continue
        score = (w * e[1]) * t[0] if first else (w * t[0]) * e[1]
        if not out or score > out[-1][0]:
            out.append((score, 1 + max(e[0], t[1]), v))
    return tuple(out)


def keep_alternatives(res, n, goal, versions_of, replay_of, order=None, bound=None, want=None) -> None:
    """Keep ``n``'s best other derivations for ``goal`` (``res.alts``): for each step ``n → c``
    with a fact ``c T goal`` (``versions_of(c)``: its versions), the derivation's score is its
    best over the rounds that fire it — when the step fact or ``c``'s fact got a version the
    round before — and its depth that of the first round reaching it (the reference engine
    keeps a derivation's first best). The derivation of ``n``'s fact itself is left out.
    ``replay_of(c)``: the replay (``{node: versions}``) ``c``'s proof is read from, kept with it."""
    want = _wanted(res, n, goal) if want is None else want
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
        res.alts[key] = tuple((sc, d, c, replay_of(c)) for sc, d, _, c in out)


def _wanted(res, n, goal) -> int:
    """How many other derivations ``n``'s fact for ``goal`` keeps: ``alternatives`` (``why``'s, and
    noisy-or's ``k - 1`` beside the best, which none beats), one more for an asserted fact (noisy-or
    reads its ``k`` best proofs besides the asserted one, which may be weaker)."""
    return res._k + (res.asserted(res.tkey(n, goal)) is not None)


def _fired(res, n, c, vc) -> tuple | None:
    """``(score, depth)`` of the derivation of ``n``'s fact through ``c`` (``vc``: ``c``'s versions
    ``[(score, depth, next)]``): its best score over the rounds that fire it, first reached."""
    ev = res.versions(res.ekey(n, c))
    if len(ev) == 1 and len(vc) == 1 and res.depth is None:   # (one round fires it)
        return res.combine(ev[0][1], vc[0][0]), 1 + max(ev[0][0], vc[0][1])
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
