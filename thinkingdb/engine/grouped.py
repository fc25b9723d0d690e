"""The one-round join over whole relations, grouped by walked subject (:func:`_fill_grouped`), and
what it shares with :mod:`thinkingdb.engine.oneround`'s general loop: which premise is walked
(:func:`_sides`), the candidates counted (:func:`_candidates`), the derived facts by object built when
read (:class:`_ByObject`).

The common case of :func:`thinkingdb.engine.oneround.run_small`: over whole relations (no scope), one
rule per head relation, each walking a premise whose subject is a head variable (composition ``?x r ?y,
?y s ?z`` is one). A walked subject's candidates are then all those of its heads, so its best ``?y`` per
head is found in one small dict -- with one ``dict.fromkeys`` per ``?y`` when each premise relation holds
a single confidence (then every candidate scores the same) -- and scores and proofs are rebuilt from the
graph when read (:class:`_Best`), with the same float operations as the general loop (``(w * c_p) *
c_q`` in premise order; ties to the lowest ``?y`` rank).

>>> _uniform({0: {1: 1.0}, 2: {1: 1.0}}, {1: {3: 0.5}})
True
>>> _uniform({0: {1: 1.0}, 2: {1: 0.5}}, {1: {3: 0.5}})
False
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from itertools import chain


class _Deadline(Exception):
    """The deadline passed during a join."""


def _sides(g, sh):
    """``(walked, keyed, swapped)`` of a rule's shape ``sh`` (:class:`thinkingdb.engine.oneround._Shape`):
    the premise walked over its by-subject rows (its relation's row index or None, whether ``?y`` is
    its subject) and the other premise's index keyed by ``?y``;
    ``swapped`` when the walked premise is the rule's second. A by-object index is read only when
    neither premise has ``?y`` as its subject."""
    rp, rq = g.relation_id(sh.rel_p), g.relation_id(sh.rel_q)
    if sh.q_key_subj:
        walked, keyed, swapped = (rp, sh.p_key_subj), (rq, g._out), False
    elif sh.p_key_subj:
        walked, keyed, swapped = (rq, sh.q_key_subj), (rp, g._out), True
    else:
        walked, keyed, swapped = (rp, False), (rq, g._in), False
    rows = None if walked[0] is None else g._out[walked[0]]
    return (rows, walked[1]), ({} if keyed[0] is None else keyed[1][keyed[0]]), swapped


def _candidates(rows: dict, w_subj: bool, keyed: dict) -> int:
    """The candidate 2-paths of one rule over whole relations: per walked fact, the keyed facts on its
    ``?y`` (its subject when ``w_subj``, else its object)."""
    if w_subj:
        return sum(len(row) * len(keyed[s]) for s, row in rows.items() if s in keyed)
    return sum(map(len, filter(None, map(keyed.get, chain.from_iterable(rows.values())))))


class _ByObject(dict):
    """The derived facts by object (``relation -> object -> subjects``), built per relation from
    ``d_out`` when first read: the result of a whole-relation closure is mostly read by subject, and the
    index would cost a set per object (readers call ``get``, as :class:`~thinkingdb.engine.joins.FactStore`
    and :class:`~thinkingdb.engine.results.ClosureResult` do)."""

    __slots__ = ("_out",)

    def __init__(self, out: dict) -> None:
        super().__init__()
        self._out = out

    def get(self, r, default=None):
        if r in self._out and not dict.__contains__(self, r):
            ins: dict[int, set] = {}
            for x, zs in self._out[r].items():
                for z in zs:
                    col = ins.get(z)
                    if col is None:
                        col = ins[z] = set()
                    col.add(x)
            self[r] = ins
        return dict.get(self, r, default)


def _fill_grouped(g, ids, shapes, sym_rank, deadline, store) -> tuple[int, str | None]:
    """:func:`_fill` when the run is over whole relations (no scope), no two rules share a head
    relation and each rule's walked premise has a head variable as its subject: every candidate of a
    head then comes from one walked subject, so each subject's best derivations are found in a dict of
    its own, keyed by the other head end and holding the winning ``?y`` only. Those dicts are the
    result (``relation -> head subject -> {head object: ?y}``); scores and premise keys are recomputed
    from the graph when read (:class:`_Best`), with the same float operations."""
    tables, infos, firings = {}, {}, 0
    for sh in shapes:
        h = ids.rel(sh.head)
        info = infos[h] = _info(g, ids, sh)
        try:
            tables[h] = _grouped(info, g._out[h] if h < len(g._out) else {}, sym_rank, deadline)
        except _Deadline:
            return firings, "time"
        rows, keyed = info[2], info[3]
        firings += _candidates(rows, False, keyed) if sh.candidates is None else sh.candidates
    store.rec = _Best(tables, infos)
    store.d_out = tables
    store.d_in = _ByObject(tables)
    return firings, None


def _info(g, ids, sh) -> tuple:
    """What rebuilds a derivation from its head key and ``?y``: ``(rule index, weight, walked rows,
    keyed index, swapped, head subject from the walked premise, walked relation id, keyed relation
    id, ?y is the keyed premise's subject)``."""
    (rows, _), keyed, swapped = _sides(g, sh)
    rw, rk = (ids.rel(sh.rel_q), ids.rel(sh.rel_p)) if swapped else (ids.rel(sh.rel_p), ids.rel(sh.rel_q))
    return (sh.idx, sh.weight, rows or {}, keyed, swapped, sh.p_drives != swapped, rw, rk,
            sh.p_key_subj if swapped else sh.q_key_subj)


def _uniform(rows: dict, keyed: dict) -> bool:
    """Whether each of the two indexes (``subject -> {object: confidence}``) holds one confidence."""
    return all(len(set(chain.from_iterable(map(dict.values, ix.values())))) <= 1
               for ix in ((rows,) if keyed is rows else (rows, keyed)))


def _grouped(info, h_asserted: dict, sym_rank, deadline) -> dict:
    """One rule's best derivations, ``head subject -> {head object: ?y}``, asserted head facts
    (``h_asserted``, by subject) left out. Per walked subject ``s`` the candidates are its facts' ``?y``
    times ``?y``'s keyed facts; the best per other end has the highest score ``(w * c_p) * c_q``, then
    the lowest ``?y`` rank. When each premise relation holds one confidence, every candidate scores
    the same and the rank alone decides: a dict filled from each ``?y``'s facts in descending rank keeps
    the lowest (one ``dict.fromkeys`` per ``?y``, no work per candidate)."""
    _, w, rows, keyed, swapped, w_is_x, _, _, _ = info
    rank, get, fromkeys = sym_rank.__getitem__, keyed.get, dict.fromkeys
    uniform = _uniform(rows, keyed)
    table: dict = {}
    n = 0
    for s, row in rows.items():
        if deadline is not None and not n & 255 and time.perf_counter() > deadline:   # every 256 subjects
            raise _Deadline
        n += 1
        if len(row) == 1:
            for y in row:
                other = get(y)
            if not other:
                continue
            best = fromkeys(other, y)
        elif uniform:
            if len(row) == 2:   # (the common case, without a sort)
                a, b = row
                if rank(a) > rank(b):
                    a, b = b, a
                other = get(b)
                best = fromkeys(other, b) if other else {}
                other = get(a)
                if other:
                    best.update(fromkeys(other, a))
            else:
                best = {}
                for y in sorted(row, key=rank, reverse=True):
                    other = get(y)
                    if other:
                        best.update(fromkeys(other, y))
        else:
            best, top = {}, {}
            for y in sorted(row, key=rank):   # ascending rank: a tie keeps the first
                other = get(y)
                if not other:
                    continue
                cw = row[y]
                wc = w * cw
                for t, ck in other.items():
                    score = (w * ck) * cw if swapped else wc * ck
                    cur = top.get(t)
                    if cur is None or score > cur:
                        top[t] = score
                        best[t] = y
        if not best:
            continue
        if w_is_x:
            a = h_asserted.get(s)
            if a:
                for z in a:
                    best.pop(z, None)
                if not best:
                    continue
            table[s] = best
        else:
            for t, y in best.items():
                a = h_asserted.get(t)
                if a is not None and s in a:
                    continue
                col = table.get(t)
                if col is None:
                    col = table[t] = {}
                col[s] = y
    return table


class _Best(Mapping):
    """The grouped join's derived facts as the reference engine's ``rec`` reads them: head key ->
    ``(score, 1, rule index, premise keys)``, built when read from ``relation -> head subject -> {head
    object: ?y}`` and each rule's :func:`_info`."""

    __slots__ = ("_infos", "_n", "_tables")

    def __init__(self, tables: dict, infos: dict) -> None:
        self._tables, self._infos, self._n = tables, infos, None

    def __len__(self) -> int:
        if self._n is None:
            self._n = sum(sum(map(len, t.values())) for t in self._tables.values())
        return self._n

    def __iter__(self):
        for h, table in self._tables.items():
            for x, row in table.items():
                for z in row:
                    yield x, h, z

    def __contains__(self, key) -> bool:
        table = self._tables.get(key[1])
        row = None if table is None else table.get(key[0])
        return row is not None and key[2] in row

    def get(self, key, default=None):
        x, h, z = key
        table = self._tables.get(h)
        row = None if table is None else table.get(x)
        y = None if row is None else row.get(z)
        if y is None:
            return default
        idx, w, rows, keyed, swapped, w_is_x, rw, rk, k_subj = self._infos[h]
        s, t = (x, z) if w_is_x else (z, x)
        cw, ck = rows[s][y], keyed[y][t]
        wkey, kkey = (s, rw, y), ((y, rk, t) if k_subj else (t, rk, y))
        if swapped:
            return (w * ck) * cw, 1, idx, (kkey, wkey)
        return (w * cw) * ck, 1, idx, (wkey, kkey)

    def __getitem__(self, key):
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v
