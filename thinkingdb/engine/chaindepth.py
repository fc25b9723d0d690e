"""The chain engine's node-bound search under a depth bound (:mod:`thinkingdb.engine.chain`).

With ``max_depth = d`` the closure runs ``d`` rounds, so a node's fact is its best derivation of
depth at most ``d``. Through the chain ``S = c₀ → c₁ → … → c_k`` (``c_k`` asserting the goal) the
fact of ``S`` has depth ``max_j (j + depth of step j's version)``, the version of step ``j`` being
the step fact as it stood after round ``d − j``. So the best such chain comes from a *layered*
search: ``P_j(c)``, the best product of ``j`` steps from ``S`` to ``c`` (rule weight times step
score), step ``j`` taken at its version of depth at most ``d − j``, for ``j ≤ d``
(:func:`layers`; ``DELTA`` is :data:`~thinkingdb.engine.chainresult.DELTA`, read from the result).
A state ``(c, j)`` whose product is below ``(1 − DELTA)`` times that of an earlier layer
``(c, i < j)`` is dropped: whatever follows it follows ``(c, i)`` at least as well,
with more depth left, so no chain through it is within ``DELTA`` of a best one.

For a goal (:func:`solve`), the end states within ``DELTA`` of the best ``P_j(a) · conf`` and the
steps within ``DELTA`` leading back to them (``P_{j−1}(u) · w · step ≥ P_j(v) · (1 − DELTA)``) give
the nodes and steps the goal is replayed over, for ``d`` rounds
(:meth:`~thinkingdb.engine.chainresult.ChainResult._simulate` with ``cap``); a version within
``DELTA`` of the node's best within the bound comes from such chains only, as without the bound.
The replay is accepted when its value is within ``DELTA / 10`` of the bound, else the search runs
again with the goal's asserting nodes as ends (a chain stops at the first one), as without the bound.
"""

from __future__ import annotations

__all__ = ["layers", "solve", "steps_at"]


def steps_at(res, u: int, limit: int) -> dict[int, float]:
    """``{next node: score}`` of the steps out of ``u`` as they stood after round ``limit`` (the
    last version of depth at most ``limit``; steps not derived by then left out)."""
    memo = res._at_memo
    got = memo.get((u, limit))
    if got is None:
        got = {}
        for c, e in res._steps(u).items():
            if e <= 0:
                raise ValueError("zero score")
            v = next((x for x in reversed(res.versions(res.ekey(u, c))) if x[0] <= limit), None)
            if v is not None:
                got[c] = v[1]
        memo[(u, limit)] = got
    return got


def layers(res, start: int, budget: int, blocked=frozenset()) -> list[dict[int, float]]:
    """``[{node: P_j}]`` for ``j = 0 … budget`` (module docstring); nodes in ``blocked`` are
    reached but not left. Stops at the first empty layer."""
    w = res.w
    out = [{start: 1.0}]
    best = {start: 1.0}
    for j in range(1, budget + 1):
        cur: dict[int, float] = {}
        for u, p in out[-1].items():
            if u in blocked and u != start:
                continue
            for c, e in steps_at(res, u, budget - j).items():
                res._tick()
                q = p * (w * e)
                if q > cur.get(c, -1.0):
                    cur[c] = q
        nxt = {}
        for c, q in cur.items():
            b = best.get(c)
            if b is None or q > b * (1 - res.delta):
                nxt[c] = q
                if b is None or q > b:
                    best[c] = q
        if not nxt:
            break
        out.append(nxt)
    return out


def solve(res, start: int, goal: int, ends: dict[int, float], budget: int, lay) -> dict[int, list]:
    """``{node: versions}`` of the replay of ``goal`` for ``budget`` rounds over the near-best
    chains from ``start`` (``lay``: :func:`layers` from it), searched again with the goal's
    asserting nodes blocked when the replay falls short; ``{}`` when no chain ends within the bound.
    ``start`` does not assert the goal. Raises ValueError when even that search falls short."""
    vers = _one(res, start, goal, ends, budget, lay, frozenset())
    if vers is None:
        blocked = frozenset(ends)
        res.rechecked += 1
        vers = _one(res, start, goal, ends, budget, layers(res, start, budget, blocked), blocked)
    if vers is None:
        raise ValueError("no solution within the bound")
    return vers


def _one(res, start, goal, ends, budget, lay, blocked):
    w, delta = res.w, res.delta
    found = [(a, j, lay[j][a] * conf) for j in range(1, len(lay)) for a, conf in ends.items() if a in lay[j]]
    if not found:
        return {}
    top = max(v for _, _, v in found)
    stack = [(a, j) for a, j, v in found if v >= top * (1 - delta)]
    nodes: set[int] = set()
    edges: dict[int, set[int]] = {}
    seen: set[tuple[int, int]] = set()
    while stack:
        v, j = stack.pop()
        if (v, j) in seen:
            continue
        seen.add((v, j))
        nodes.add(v)
        if j == 0:
            continue
        pv, prev = lay[j][v], lay[j - 1]
        for u in res.back_steps(v):
            res._tick()
            pu = prev.get(u)
            if pu is None or (u in blocked and u != start):
                continue
            e = steps_at(res, u, budget - j).get(v)
            if e is not None and pu * (w * e) >= pv * (1 - delta):
                edges.setdefault(v, set()).add(u)
                stack.append((u, j - 1))
    terms = {a: c for a, c in ends.items() if a in nodes}
    vers = res._simulate(goal, terms, lambda c: [(u, None) for u in edges.get(c, ())], cap=budget)
    if start not in vers or vers[start][-1][0] < top * (1 - delta / 10):
        return None
    return vers
