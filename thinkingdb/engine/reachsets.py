"""Reach sets of a directed graph in numpy: what each node reaches by one or more edges.

The transitive fast path (:mod:`thinkingdb.engine.transitive`) stores its closure this way. Steps:

1. **Cycles.** Nodes are peeled layer by layer from the sources (in-degree 0) and, separately, from
   the sinks (out-degree 0), as whole arrays; a node on a cycle is never peeled. Only the nodes both
   peelings leave (typically few) go through Tarjan's algorithm; every other node is a component of
   its own. A component is *cyclic* when it has two members or a self-loop: it reaches itself.
2. **Heights.** On the condensation (one node per component), sinks have height 0 and a component
   one more than its highest successor, again by layers of whole arrays.
3. **Propagation.** Height by height, a component's reach is the union of its successors' members
   and reach sets (plus its own members when cyclic): gathered with ``repeat``/``cumsum`` and made
   sorted and distinct by one sort per layer (in chunks of :data:`CHUNK` gathered values).

The result is ``comp`` (each node's component, -1 for a node on no edge) and, per component, a
sorted slice ``buf[start[c]:start[c] + length[c]]`` of node ids. Exact: the same sets as a
breadth-first search from every node (tested against networkx in ``tests/test_reachsets.py``).

>>> import numpy as np
>>> r = reach_sets(np.array([0, 1, 2, 3]), np.array([1, 2, 1, 3]), 5)
>>> [r.reach(u).tolist() for u in range(5)]
[[1, 2], [1, 2], [1, 2], [3], []]
>>> r.pairs   # 2 + 2 + 2 + 1
7
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["ReachSets", "reach_sets", "CHUNK"]

CHUNK = 1 << 22     # gathered values per sort (bounds the temporary memory of a layer)
_I64 = np.int64


@dataclass(frozen=True, slots=True, eq=False)
class ReachSets:
    """Per node its component; per component its sorted reach slice of ``buf``."""

    comp: np.ndarray     # int32, one per node id, -1: on no edge
    start: np.ndarray    # int64, one per component
    length: np.ndarray   # int64, one per component
    size: np.ndarray     # int64, members per component
    buf: np.ndarray      # int32 node ids
    complete: bool       # False when ``stop`` cut the propagation (unreached components are empty)

    def reach(self, u: int) -> np.ndarray:
        """The nodes ``u`` reaches, sorted (empty for an unknown node)."""
        if u < 0 or u >= len(self.comp) or self.comp[u] < 0:
            return self.buf[:0]
        c = self.comp[u]
        s = self.start[c]
        return self.buf[s:s + self.length[c]]

    @property
    def pairs(self) -> int:
        """How many ``(u, v)`` pairs with ``u`` reaching ``v``."""
        return int(np.dot(self.size, self.length))


def _gather(base: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``base[starts[0]:starts[0]+lens[0]] + base[starts[1]:...] + ...`` as one array."""
    total = int(lens.sum())
    if not total:
        return base[:0]
    ends = np.cumsum(lens)
    return base[np.repeat(starts - (ends - lens), lens) + np.arange(total, dtype=_I64)]


def _distinct(a: np.ndarray) -> np.ndarray:
    """``a``'s distinct values, ascending (sorting in place; faster than ``np.unique``'s hashing)."""
    a.sort()
    if len(a) < 2:
        return a
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _counted(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a``'s distinct values, ascending, and how often each occurs."""
    a = np.sort(a)
    if not len(a):
        return a, a
    first = np.concatenate([[0], np.nonzero(a[1:] != a[:-1])[0] + 1])
    return a[first], np.diff(np.append(first, len(a)))


def _csr(keys: np.ndarray, vals: np.ndarray, n: int):
    """``vals`` grouped by ``keys`` (each in ``range(n)``): ``(vals sorted by key, start, count)``."""
    order = np.argsort(keys, kind="stable")
    count = np.bincount(keys, minlength=n).astype(_I64)
    return vals[order], np.cumsum(count) - count, count


def _peel(src: np.ndarray, dst: np.ndarray, n: int, stop) -> np.ndarray:
    """Nodes removed by repeatedly deleting nodes with no incoming edge (as a bool mask)."""
    succ, st, cnt = _csr(src, dst, n)
    deg = np.bincount(dst, minlength=n)
    gone = np.zeros(n, bool)
    front = np.nonzero(deg == 0)[0]
    while len(front):
        if stop():
            break
        gone[front] = True
        hit, k = _counted(_gather(succ, st[front], cnt[front]))
        deg[hit] -= k
        front = hit[deg[hit] == 0]
    return gone


def _tarjan(nodes: np.ndarray, src: np.ndarray, dst: np.ndarray, stop) -> list[list[int]] | None:
    """Strongly connected components of the subgraph (iterative Tarjan), successors first; None
    when ``stop()`` said so."""
    adj: dict[int, list[int]] = {}
    for u, v in zip(src.tolist(), dst.tolist()):
        adj.setdefault(u, []).append(v)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    comps: list[list[int]] = []
    for i, root in enumerate(nodes.tolist()):
        if root in index:
            continue
        if not i & 255 and stop():
            return None
        work = [(root, iter(adj.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            u, it = work[-1]
            pushed = False
            for v in it:
                if v not in index:
                    index[v] = low[v] = len(index)
                    stack.append(v)
                    on.add(v)
                    work.append((v, iter(adj.get(v, ()))))
                    pushed = True
                    break
                if v in on and index[v] < low[u]:
                    low[u] = index[v]
            if pushed:
                continue
            work.pop()
            if work and low[u] < low[work[-1][0]]:
                low[work[-1][0]] = low[u]
            if low[u] == index[u]:
                members = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    members.append(x)
                    if x == u:
                        break
                comps.append(members)
    return comps


def _components(src, dst, looped, n, stop):
    """``(comp per node, component count, cyclic flag per component)``, None when stopped; self-loops
    removed from ``src``/``dst`` and flagged in ``looped``."""
    present = looped.copy()
    present[src] = True
    present[dst] = True
    keep = ~(_peel(src, dst, n, stop) | _peel(dst, src, n, stop)) & present
    comp = np.full(n, -1, np.int32)
    single = np.nonzero(present & ~keep)[0]
    comp[single] = np.arange(len(single), dtype=np.int32)
    n_comp = len(single)
    cyclic = [np.zeros(len(single), bool)]
    if keep.any():
        inner = keep[src] & keep[dst]
        comps = _tarjan(np.nonzero(keep)[0], src[inner], dst[inner], stop)
        if comps is None:
            return None
        sizes = np.fromiter(map(len, comps), _I64, len(comps))
        comp[np.fromiter((u for m in comps for u in m), _I64, int(sizes.sum()))] = \
            np.repeat(np.arange(n_comp, n_comp + len(comps), dtype=np.int32), sizes)
        n_comp += len(comps)
        cyclic.append(sizes > 1)
    return comp, n_comp, np.concatenate(cyclic)


def reach_sets(src: np.ndarray, dst: np.ndarray, n: int,
               stop: Callable[[], bool] = lambda: False) -> ReachSets:
    """Reach sets of the graph with edges ``src[i] -> dst[i]`` over node ids ``range(n)``.

    ``stop()`` is asked between layers; once it returns True, the components not yet done keep
    empty reach sets and ``complete`` is False.

    >>> import numpy as np
    >>> r = reach_sets(np.array([0, 0, 1]), np.array([1, 2, 2]), 3)
    >>> [r.reach(u).tolist() for u in range(3)], r.complete
    ([[1, 2], [2], []], True)
    """
    src, dst = np.asarray(src, _I64), np.asarray(dst, _I64)
    loop = src == dst
    looped = np.zeros(n, bool)
    looped[src[loop]] = True
    src, dst = src[~loop], dst[~loop]
    found = _components(src, dst, looped, n, stop)
    if found is None:
        none = np.zeros(0, _I64)
        return ReachSets(np.full(n, -1, np.int32), none, none, none, np.zeros(0, np.int32), False)
    comp, n_comp, cyclic = found
    present = np.nonzero(comp >= 0)[0]
    members, mstart, size = _csr(comp[present].astype(_I64), present.astype(np.int32), n_comp)
    cyclic[comp[looped]] = True
    # the condensation: distinct edges between components, forward and reverse
    cu, cv = comp[src].astype(_I64), comp[dst].astype(_I64)
    cross = cu != cv
    ckey = _distinct(cu[cross] * max(n_comp, 1) + cv[cross])
    cu, cv = ckey // max(n_comp, 1), ckey % max(n_comp, 1)
    succ, sstart, scount = _csr(cu, cv, n_comp)
    pred, pstart, pcount = _csr(cv, cu, n_comp)
    outdeg = scount.copy()
    start = np.zeros(n_comp, _I64)
    length = np.zeros(n_comp, _I64)
    buf = np.zeros(max(1024, 2 * len(present)), np.int32)
    used = 0
    front = np.nonzero(outdeg == 0)[0]
    complete = True
    while len(front):
        if stop():
            complete = False
            break
        # per component of this layer: successors' members and reach, and its own members if cyclic
        owner = np.repeat(np.arange(len(front), dtype=_I64), scount[front])
        d = _gather(succ, sstart[front], scount[front])
        plain = ~cyclic[d]                  # a cyclic successor's reach already holds its members
        cost = np.bincount(owner, weights=length[d] + np.where(plain, size[d], 0), minlength=len(front))
        cost = cost.astype(_I64) + np.where(cyclic[front], size[front], 0)
        group = (np.cumsum(cost) - cost) // CHUNK      # consecutive components, about CHUNK values each
        bounds = np.concatenate([[0], np.nonzero(np.diff(group))[0] + 1, [len(front)]])
        eoff = np.concatenate([[0], np.cumsum(scount[front])])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            fr = front[a:b]
            own = owner[eoff[a]:eoff[b]] - a
            dd, pl = d[eoff[a]:eoff[b]], plain[eoff[a]:eoff[b]]
            cyc = np.nonzero(cyclic[fr])[0]
            vals = np.concatenate([_gather(buf, start[dd], length[dd]),
                                   _gather(members, mstart[dd[pl]], size[dd[pl]]),
                                   _gather(members, mstart[fr[cyc]], size[fr[cyc]])]).astype(_I64)
            rows = np.concatenate([np.repeat(own, length[dd]), np.repeat(own[pl], size[dd[pl]]),
                                   np.repeat(cyc.astype(_I64), size[fr[cyc]])])
            keys = _distinct(rows * n + vals)
            got = np.bincount(keys // n, minlength=b - a).astype(_I64)
            if used + len(keys) > len(buf):
                grown = np.zeros(max(used + len(keys), len(buf) + len(buf) // 2), np.int32)
                grown[:used] = buf[:used]
                buf = grown
            buf[used:used + len(keys)] = keys % n
            start[fr] = used + np.cumsum(got) - got
            length[fr] = got
            used += len(keys)
        hit, k = _counted(_gather(pred, pstart[front], pcount[front]))
        outdeg[hit] -= k
        front = hit[outdeg[hit] == 0]
    return ReachSets(comp, start, length, size, buf[:used], complete)
