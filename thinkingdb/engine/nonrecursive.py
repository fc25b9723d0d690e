"""Fast path for rule sets that finish in one round: two-premise joins over asserted facts only.

Applies when every rule has exactly two premises over variables only (no constants), the premises
share exactly one variable ``?y`` and each has one other variable of its own, the head relates
those two other variables (in either order), and no rule's premise uses a relation that any rule of
the set derives. Then every derivation has depth 1 and its premises are asserted facts, so the
whole closure is one join per rule: ``?x a ?y, ?y b ?z => ?x h ?z`` and every other argument
orientation (``?y a ?x``, ``?z b ?y``, head ``?z h ?x``, ...).

The join runs on numpy arrays: each premise's edges are oriented as (join key, other end,
confidence); the premise that provides the head's subject is the *driving* side, sorted by head
subject, the other side is sorted by join key; ``np.repeat`` / ``cumsum`` index arithmetic
enumerates the 2-paths in chunks of bounded size (at most ``CHUNK`` candidates, plus the reduced
rows of a subject split between chunks). Per head key the best derivation is kept exactly as the
semi-naive engine keeps it: highest score (``(w * c1) * c2``, the same float operations in the same
order), then the canonical order (rule name, then the premise keys' canonical ranks). Asserted head
facts are dropped. Results stay in numpy arrays (key, join symbol, rule, score: 22 bytes a fact);
proofs are built on request (:mod:`~thinkingdb.engine.nonrecursiveresult`).

Bounds: ``max_depth >= 1`` cannot cut anything (there is no second round); ``max_depth = 0`` falls
back. ``max_nodes`` and seeded scopes filter the edges (a rule without constants cannot bring in a
symbol). ``max_derived`` keeps the canonical prefix, as the semi-naive engine admits it.
``timeout_ms`` is checked between chunks; on timeout the unfinished round is dropped
(``truncated = "time"``, nothing derived), as in the semi-naive engine. ``alternatives`` falls back.
"""

from __future__ import annotations

import time

import numpy as np

from ..model import Limits
from .graph import relation_arrays
from .oneround import _Shape
from .nonrecursiveresult import Heads, OneRoundResult

CHUNK = 1 << 15   # 2-path candidates materialised at once (about 100 bytes each, transiently; 1 << 17 was
                  # no faster at 100k and 1M edges and held 8 MB more)


class _Ranks:
    """Canonical symbol ranks as a numpy array, built on first use (only ties and ``max_derived``
    need them)."""

    def __init__(self, g) -> None:
        self.g, self.arr = g, None

    def __getitem__(self, idx):
        if self.arr is None:
            ranks, _ = self.g.ranks()
            self.arr = np.asarray(ranks, dtype=np.int64) if ranks else np.zeros(0, np.int64)
        return self.arr[idx]


class _Deadline(Exception):
    pass


def run_one_round(g, ids, rules, shapes: list[_Shape], scope, limits: Limits, deadline):
    """Derive every head fact; returns a :class:`OneRoundResult` (``stats`` left for the caller)."""
    n_syms = max(ids.n_syms, 1)
    scope_np = None if scope is None else np.frombuffer(bytes(scope), dtype=np.uint8).astype(bool)
    sr = _Ranks(g)
    names = sorted(s.name for s in shapes)
    name_rank = np.array([names.index(rules[i].name) for i in range(len(rules))], dtype=np.int64)
    weights = np.array([r.weight for r in rules], dtype=np.float64)
    edge_cache: dict[int, tuple] = {}

    def check() -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise _Deadline

    def edges(rel: str):
        r = ids.rel(rel)
        if r not in edge_cache:
            edge_cache[r] = relation_arrays(g, r, scope_np)
            check()
        return edge_cache[r]

    by_head: dict[int, list[_Shape]] = {}
    for sh in shapes:
        by_head.setdefault(ids.rel(sh.head), []).append(sh)
    pieces: dict[int, list] = {}
    firings = 0
    try:
        for h, group in sorted(by_head.items()):
            outs, n = _join_head(g, h, group, edges, n_syms, sr, name_rank, weights, scope_np, check)
            firings += n
            pieces[h] = outs
    except _Deadline:
        return OneRoundResult(g, ids, rules, {}, n_syms, "time", firings)
    edge_cache.clear()
    heads: dict[int, Heads] = {}
    for h in list(pieces):
        outs = pieces.pop(h)
        if outs:
            heads[h] = outs[0] if len(outs) == 1 else Heads.concat(outs, consume=True)
            del outs
    truncated = None
    total = sum(len(v.key) for v in heads.values())
    if limits.max_derived is not None and total > limits.max_derived:
        _cap(heads, limits.max_derived, n_syms, sr, ids)
        truncated = "derived"
    return OneRoundResult(g, ids, rules, heads, n_syms, truncated, firings)


def _cap(heads, room: int, n_syms: int, sr, ids) -> None:
    """Keep the first ``room`` derived facts in canonical order (subject, relation, object ranks)."""
    parts = []
    for h, v in heads.items():
        x, z = v.key // n_syms, v.key % n_syms
        parts.append((sr[x], np.full(len(x), ids.rel_rank(h)), sr[z], np.full(len(x), h), np.arange(len(x))))
    cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    order = np.lexsort((cols[2], cols[1], cols[0]))[:room]
    for h in list(heads):
        sel = np.sort(cols[4][order][cols[3][order] == h])
        heads[h] = heads[h].take(sel)


def _join_head(g, h, group, edges, n_syms, sr, name_rank, weights, scope_np, check):
    """All best derivations of head relation ``h`` from the rules in ``group``."""
    # driving side per rule: (head subject, join key, confidence, rule, first match, matches), kept
    # as views of the edge arrays where possible; the other side sorted by join key
    d_x, d_y, d_c, d_rule, d_lo, d_cnt = [], [], [], [], [], []
    b_other, b_conf = [], []
    base = 0
    for sh in group:
        ps, po, pc = edges(sh.rel_p)
        qs, qo, qc = edges(sh.rel_q)
        p_key, p_oth = (ps, po) if sh.p_key_subj else (po, ps)
        q_key, q_oth = (qs, qo) if sh.q_key_subj else (qo, qs)
        if sh.p_drives:
            a_key, a_oth, a_c, b_key, b_oth, b_c = p_key, p_oth, pc, q_key, q_oth, qc
        else:
            a_key, a_oth, a_c, b_key, b_oth, b_c = q_key, q_oth, qc, p_key, p_oth, pc
        order = np.argsort(b_key, kind="stable")
        bk = b_key[order]
        b_other.append(b_oth[order])
        b_conf.append(b_c[order])
        del order
        lo = np.searchsorted(bk, a_key, "left")
        cnt = (np.searchsorted(bk, a_key, "right") - lo).astype(np.int32)
        lo = (lo + base).astype(np.int64 if base + len(bk) >= 2**31 else np.int32)
        del bk
        d_x.append(a_oth)
        d_y.append(a_key)
        d_c.append(a_c)
        d_rule.append(np.full(len(a_key), sh.idx, dtype=np.int32))
        d_lo.append(lo)
        d_cnt.append(cnt)
        base += len(b_key)

    def cat(parts):
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    x, y, c, rule, lo, cnt = cat(d_x), cat(d_y), cat(d_c), cat(d_rule), cat(d_lo), cat(d_cnt)
    b_other, b_conf = cat(b_other), cat(b_conf)
    del d_x, d_y, d_c, d_rule, d_lo, d_cnt
    if not len(x):
        return [], 0
    by_x = np.argsort(x, kind="stable").astype(np.int32 if len(x) < 2**31 else np.int64)
    cnt_x = cnt[by_x]
    del cnt
    cum = np.cumsum(cnt_x, dtype=np.int64)
    p_drives = np.zeros(len(weights), dtype=bool)
    p_key_subj = np.zeros(len(weights), dtype=bool)
    q_key_subj = np.zeros(len(weights), dtype=bool)
    for sh in group:
        p_drives[sh.idx], p_key_subj[sh.idx], q_key_subj[sh.idx] = sh.p_drives, sh.p_key_subj, sh.q_key_subj
    asserted = _asserted_keys(g, h, n_syms, scope_np)

    total = int(cum[-1])
    outs: list[Heads] = []
    carry = None
    i0, m = 0, len(x)
    while i0 < m:
        check()
        before = int(cum[i0] - cnt_x[i0])
        i1 = max(int(np.searchsorted(cum, before + CHUNK, "right")), i0 + 1)
        counts = cnt_x[i0:i1]
        rep = np.repeat(by_x[i0:i1], counts)             # driving edges, once per match
        starts = np.cumsum(counts, dtype=np.int64) - counts
        bidx = lo[rep] + (np.arange(len(rep)) - np.repeat(starts, counts))
        del starts
        ks = x[rep].astype(np.int64)
        kz = b_other[bidx]
        ky = y[rep]
        kr = rule[rep]
        ca, cb = c[rep], b_conf[bidx]
        del rep, bidx
        pd = p_drives[kr]
        score = weights[kr] * np.where(pd, ca, cb) * np.where(pd, cb, ca)   # (w * c_p) * c_q
        del ca, cb
        key = ks * n_syms + kz
        cand = Heads(key, ky, kr, score)
        del ks, kz, ky, kr, score, key, pd
        if carry is not None:
            cand = Heads.concat([carry, cand])
        best = _best(cand, n_syms, sr, name_rank, p_drives, p_key_subj, q_key_subj)
        del cand
        carry = None
        nxt = int(x[by_x[i1]]) if i1 < m else -1
        if nxt == int(x[by_x[i1 - 1]]):   # a subject split between chunks: finish it with the next
            cut = int(np.searchsorted(best.key, nxt * n_syms, "left"))
            carry = best.take(np.arange(cut, len(best.key)))
            best = best.take(np.arange(cut))
        if asserted is not None and len(best.key):
            pos = np.searchsorted(asserted, best.key)
            pos[pos == len(asserted)] = 0
            best = best.take(np.flatnonzero(asserted[pos] != best.key))
        outs.append(best)
        i0 = i1
    return outs, total


def _asserted_keys(g, h, n_syms, scope_np):
    if h >= len(g._out) or not g._out[h]:
        return None
    s, o, _ = relation_arrays(g, h, scope_np)
    return np.sort(s.astype(np.int64) * n_syms + o) if len(s) else None


def _best(cand: Heads, n_syms, sr, name_rank, p_drives, p_key_subj, q_key_subj) -> Heads:
    """Per key, the highest score, then the canonical premise order; sorted by key."""
    if not len(cand.key):
        return cand
    order = np.lexsort((-cand.score, cand.key))
    cand = cand.take(order)
    key, score = cand.key, cand.score
    start = np.empty(len(key), dtype=bool)
    start[0] = True
    np.not_equal(key[1:], key[:-1], out=start[1:])
    gid = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    del start
    top = score[first][gid] == score
    n_top = np.bincount(gid[top], minlength=len(first))
    winners = first[n_top == 1]
    contested = np.flatnonzero(top & (n_top[gid] > 1))
    del gid, top
    if len(contested):
        sub = cand.take(contested)
        r = sub.rule.astype(np.intp)
        xs, zs = sub.key // n_syms, sub.key % n_syms
        pd = p_drives[r]
        p_other, q_other = np.where(pd, xs, zs), np.where(pd, zs, xs)
        y = sub.y.astype(np.int64)
        p_s = np.where(p_key_subj[r], y, p_other)
        p_o = np.where(p_key_subj[r], p_other, y)
        q_s = np.where(q_key_subj[r], y, q_other)
        q_o = np.where(q_key_subj[r], q_other, y)
        o2 = np.lexsort((sr[q_o], sr[q_s], sr[p_o], sr[p_s], name_rank[r], sub.key))
        ks = sub.key[o2]
        firsts = np.ones(len(ks), dtype=bool)
        firsts[1:] = ks[1:] != ks[:-1]
        winners = np.concatenate([winners, contested[o2[firsts]]])
        winners.sort()
    return cand.take(winners)
