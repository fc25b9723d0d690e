"""The symbols a full or seeded closure run may touch (:func:`thinkingdb.engine.closure.closure`).

Full mode: every symbol, or the first ``max_nodes`` in canonical order. Seeded mode: the seeds, then
the rules' constants, then the symbols nearest to them — breadth first over asserted facts in both
directions (along the ``via`` relations only, when given), layer by layer in canonical order — up to
``max_nodes``. A goal-directed run's scope is its demand's instead (:mod:`thinkingdb.engine.demand`),
so a question never loads this module.
"""

from __future__ import annotations

from .graph import FactGraph
from .results import Ids

__all__ = ["scope_of"]


def scope_of(g: FactGraph, ids: Ids, seeds, constants, max_nodes, via):
    """The symbols the run may touch, as a bytearray flag per id (None: everything): the seeds, then
    the rules' constants, then breadth-first layers in canonical order, up to ``max_nodes``; layers
    follow both directions of the ``via`` relations."""
    n_ids = ids.n_syms
    sym_rank, rel_rank = g.ranks()
    if seeds is None:
        if max_nodes is None or max_nodes >= n_ids:
            return None, None, None
        order = sorted(range(n_ids), key=ids.sym_rank)[:max_nodes]
        scope = bytearray(n_ids)
        for s in order:
            scope[s] = 1
        return scope, order, "nodes"
    seed_ids = sorted({ids.sym(s) for s in seeds}, key=ids.sym_rank)
    seed_ids += [c for c in constants if c not in set(seed_ids)]
    n_ids = ids.n_syms
    scope = bytearray(n_ids)
    truncated = None
    if max_nodes is not None and len(seed_ids) > max_nodes:
        seed_ids, truncated = seed_ids[:max_nodes], "nodes"
    for s in seed_ids:
        scope[s] = 1
    members = list(seed_ids)
    rels = range(len(g._out)) if via is None else [r for r in (g.relation_id(v) for v in via) if r is not None]
    outs, ins = [g._out[r] for r in rels], [g._in[r] for r in rels]
    layer = [s for s in seed_ids if s < len(g._syms)]
    while layer and truncated is None:
        nxt: set[int] = set()
        for s in layer:
            for index in outs:
                row = index.get(s)
                if row:
                    nxt.update(o for o in row if not scope[o])
            for index in ins:
                col = index.get(s)
                if col:
                    nxt.update(x for x in col if not scope[x])
        layer = sorted(nxt, key=sym_rank.__getitem__)
        if max_nodes is not None and len(members) + len(layer) > max_nodes:
            layer, truncated = layer[:max_nodes - len(members)], "nodes"
        for s in layer:
            scope[s] = 1
        members.extend(layer)
    return scope, members, truncated
