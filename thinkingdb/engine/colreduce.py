"""The end of a round of :mod:`thinkingdb.engine.columnar`: its candidates reduced to one winner per
head and the winners applied as facts.

* reduce: per head key the highest score, then the canonical tie-break — rule name, then the premise
  keys' canonical ranks, which for one rule and one head is the order of its extra variables' ranks
  (first occurrence order) — exactly the reference engine's choice; while a round accumulates
  candidates, new in-scope heads beyond the ``max_derived`` room are pruned, canonically last first;
* apply: heads outside the scope are dropped (``max_nodes``), new facts are admitted in canonical order
  up to ``max_derived``, get ids and a new sorted block per index; improved facts keep their old row in
  ``history``; the new and improved facts are the next round's delta.

:class:`ReduceApply` holds these steps as methods of the engine's run (``columnar._Run`` inherits
them): they read its indexes, fact columns, scope, limits and canonical ranks.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ReduceApply"]


class ReduceApply:
    """A columnar run's reduce and apply steps, and the extra variables recorded per derivation."""

    def _reduce(self, parts: list, prune=False, h=None):
        """Per head key the winning candidate (see the module docstring) among the candidate
        ``parts`` (lists ``[key, score, rule, ext]``, emptied here so that their memory goes as soon
        as it is copied), sorted by key. ``prune``: also drop new in-scope heads beyond the
        ``max_derived`` room, canonically last first."""
        key, score, rule, ext = _concat(parts)
        order = np.argsort(key, kind="stable")
        ks = key[order]
        start = np.empty(len(ks), dtype=bool)
        start[:1] = True
        np.not_equal(ks[1:], ks[:-1], out=start[1:])
        first = np.flatnonzero(start)
        if len(first) == len(ks):
            win = order
        else:
            sc = score[order]
            gid = np.cumsum(start, dtype=np.int32 if len(ks) < 2**31 else np.int64) - 1
            del start
            top = sc == np.maximum.reduceat(sc, first)[gid]
            del sc
            single = (np.bincount(gid[top], minlength=len(first)) == 1)[gid]   # one top candidate
            del gid
            rows = np.flatnonzero(top & single)
            contested = np.flatnonzero(top & ~single)
            del top, single
            if len(contested):
                rk = self.ranks()
                sub = order[contested]
                cols = [np.where(ext[sub, i] >= 0, rk[np.maximum(ext[sub, i], 0)], -1)
                        for i in range(ext.shape[1] - 1, -1, -1)]
                o2 = np.lexsort(cols + [self.name_rank[rule[sub]], ks[contested]])
                kc = ks[contested][o2]
                firsts = np.ones(len(kc), dtype=bool)
                firsts[1:] = kc[1:] != kc[:-1]
                rows = np.concatenate([rows, contested[o2[firsts]]])
                rows.sort()
            win = order[rows]
            del rows
        del order, ks, first
        key, score, rule, ext = key[win], score[win], rule[win], ext[win]
        room = None if self.limits.max_derived is None else self.limits.max_derived - self.n_derived
        if prune and room is not None and not self.probing:
            new = self.so[h].lookup(key) < 0
            if self.scope is not None:
                new &= self.scope[key // self.n] & self.scope[key % self.n]
            idx = np.flatnonzero(new)
            if len(idx) > room:
                rk = self.ranks()
                o2 = np.lexsort((rk[key[idx] % self.n], rk[key[idx] // self.n]))
                keep = np.ones(len(key), dtype=bool)
                keep[idx[o2[room:]]] = False
                last = key[idx[o2[room - 1]]] if room > 0 else None
                self.cutoff[h] = (-1, -1) if last is None else (int(rk[last // self.n]), int(rk[last % self.n]))
                key, score, rule, ext = key[keep], score[keep], rule[keep], ext[keep]
                self.pruned = True
        return key, score, rule, ext

    def apply(self, cands: dict, round_no: int):
        """Admit one round's winners; returns ``(delta, truncated)``."""
        n, truncated = self.n, None
        staged = []
        for h in sorted(cands):
            key, score, rule, ext = cands[h]
            known = self.so[h].lookup(key)
            new = known < 0
            if self.scope is not None:
                out = new & ~(self.scope[key // n] & self.scope[key % n])
                if out.any():
                    truncated = "nodes"
                    keep = ~out
                    key, score, rule, ext, known, new = (a[keep] for a in (key, score, rule, ext, known, new))
            staged.append([h, key, score, rule, ext, known, new])
        total_new = sum(int(st[6].sum()) for st in staged)
        limit = self.limits.max_derived
        if self.pruned:
            truncated = truncated or "derived"
        if limit is not None and self.n_derived + total_new > limit:
            room = limit - self.n_derived
            rk = self.ranks()
            parts = [(rk[st[1][st[6]] // n], np.full(int(st[6].sum()), self.ids.rel_rank(st[0])),
                      rk[st[1][st[6]] % n], np.full(int(st[6].sum()), i), np.flatnonzero(st[6]))
                     for i, st in enumerate(staged)]
            cols = [np.concatenate([p[c] for p in parts]) for c in range(5)]
            o2 = np.lexsort((cols[2], cols[1], cols[0]))[room:]
            for i, st in enumerate(staged):
                drop = cols[4][o2][cols[3][o2] == i]
                keep = np.ones(len(st[1]), dtype=bool)
                keep[drop] = False
                st[1:] = [a[keep] for a in st[1:]]
            truncated = truncated or "derived"
        delta = {}
        for h, key, score, rule, ext, known, new in staged:
            if not len(key):
                continue
            aux = self._aux(rule, ext)
            imp = ~new
            if imp.any():
                self.facts.improve(known[imp], score[imp], round_no, rule[imp], aux[imp])
            fids = known.copy()
            if new.any():
                fids[new] = self.facts.append(score[new], round_no, rule[new], aux[new])
                self.so[h].add(key[new], fids[new].astype(np.int32))
                if h in self.os:
                    fk = (key[new] % n) * n + key[new] // n
                    o3 = np.argsort(fk)
                    self.os[h].add(fk[o3], fids[new][o3].astype(np.int32))
                self.n_derived += int(new.sum())
            delta[h] = (key, fids)
        return delta, truncated

    def _aux(self, rule, ext) -> np.ndarray:
        aux = np.full(len(rule), -1, dtype=np.int64)
        for ri in np.flatnonzero(np.bincount(rule, minlength=len(self.n_extras))).tolist():
            e = self.n_extras[ri]
            if not e:
                continue
            sel = np.flatnonzero(rule == ri)
            if e == 1:
                aux[sel] = ext[sel, 0]
            else:
                start = self.ext_tables[ri].extend(ext[sel, :e].reshape(-1)) // e
                aux[sel] = np.arange(start, start + len(sel))
        return aux

    def extras(self, rule_idx: int, aux: int) -> list[int]:
        """The extra variables' values recorded for one derivation."""
        e = self.n_extras[rule_idx]
        if e == 0:
            return []
        if e == 1:
            return [aux]
        return self.ext_tables[rule_idx].a[aux * e:(aux + 1) * e].tolist()


def _concat(parts: list) -> tuple:
    """The four columns of candidate ``parts`` (lists ``[key, score, rule, ext]``), each part's
    column released once it is copied; ``parts`` ends empty."""
    if len(parts) == 1:
        return tuple(parts.pop())
    cols = []
    for i in range(4):
        cols.append(np.concatenate([p[i] for p in parts]))
        for p in parts:
            p[i] = None
    parts.clear()
    return tuple(cols)
