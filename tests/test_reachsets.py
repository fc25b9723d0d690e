"""engine/reachsets.py against networkx: every node's reach set, on generated graphs with cycles,
self-loops, isolated ids and layers small enough to be split into chunks."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, strategies as st

from thinkingdb.engine import reachsets
from thinkingdb.engine.reachsets import reach_sets


def oracle(edges: list[tuple[int, int]], n: int) -> list[list[int]]:
    """Per node, the nodes at the end of a walk of one or more edges (networkx descendants; a node
    reaches itself only through a cycle or a self-loop)."""
    g = nx.DiGraph(edges)
    out = []
    for u in range(n):
        if u not in g:
            out.append([])
            continue
        got = set(nx.descendants(g, u))
        if any(u in nx.descendants(g, v) or v == u for v in g.successors(u)):
            got.add(u)
        out.append(sorted(got))
    return out


graphs = st.integers(1, 30).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80)))


@given(graphs, st.sampled_from([1, 3, 1 << 22]))
def test_reach_sets_match_networkx(graph, chunk):
    n, edges = graph
    old = reachsets.CHUNK
    reachsets.CHUNK = chunk    # tiny chunks: every layer split into many sorts
    try:
        r = reach_sets(np.array([a for a, _ in edges], dtype=np.int64),
                       np.array([b for _, b in edges], dtype=np.int64), n)
    finally:
        reachsets.CHUNK = old
    want = oracle(edges, n)
    assert [r.reach(u).tolist() for u in range(n)] == want
    assert r.pairs == sum(map(len, want))
    assert r.complete


def test_hand_example_with_a_cycle_and_a_self_loop():
    # 0 -> 1 <-> 2 -> 3 -> 3, 4 isolated (no edge), 5 -> 0
    r = reach_sets(np.array([0, 1, 2, 2, 3, 5]), np.array([1, 2, 1, 3, 3, 0]), 6)
    assert [r.reach(u).tolist() for u in range(6)] == [[1, 2, 3], [1, 2, 3], [1, 2, 3], [3], [], [0, 1, 2, 3]]
    assert r.comp[4] == -1 and r.comp[1] == r.comp[2] and r.comp[0] != r.comp[1]


@pytest.mark.parametrize("budget", range(14))
def test_stop_leaves_unfinished_sets_empty(budget):
    # a chain 0 -> 1 -> 2 -> 3 plus a cycle 4 <-> 5: stopped after ``budget`` questions, every set is
    # exact or empty, and an incomplete run says so
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > budget

    src, dst = [0, 1, 2, 4, 5], [1, 2, 3, 5, 4]
    r = reach_sets(np.array(src), np.array(dst), 6, stop)
    want = oracle(list(zip(src, dst)), 6)
    got = [r.reach(u).tolist() for u in range(6)]
    assert all(g in (w, []) for g, w in zip(got, want))
    assert r.complete == (got == want)


@pytest.mark.parametrize("n", [1, 2000])
def test_long_chain(n):
    r = reach_sets(np.arange(n - 1), np.arange(1, n), n)
    assert r.pairs == n * (n - 1) // 2
    assert r.reach(0).tolist() == list(range(1, n))
