"""A graph file and its delta read as one graph: the ids, rows and counts of base + delta.

The delta (:mod:`thinkingdb.store.graphdelta`) names the facts that differ from the base: a triple
present with a new confidence, or gone. Its triples use *extended* ids: a base symbol keeps its base
id, a symbol the base lacks is ``n_base + j`` (``j`` its rank among the delta's new symbols); the same
for relations. The combined graph numbers its symbols in sorted key order again (an id is a rank, as
in a plain graph file): base symbols that no longer occur are left out and new ones slotted in where
they sort. The mapping between extended and combined ids is a pair of binary searches, so opening a
delta costs what the delta holds, and a row costs what it holds.

>>> import numpy as np
>>> ov = Overlay.__new__(Overlay)
>>> ov.nb, ov.new_keys, ov.ins = 4, ["b2"], np.array([2])          # base a, b, c, d; new b2 after b
>>> ov.removed = np.array([0])                                     # a is gone
>>> ov._prepare_ids()
>>> ov.n, ov.to_comb(np.array([1, 2, 3, 4])).tolist(), [ov.to_ext(c) for c in range(4)]
(4, [0, 2, 3, 1], [1, 4, 2, 3])
"""

from __future__ import annotations

import bisect
from typing import Iterator

import numpy as np

__all__ = ["Overlay"]


def _decode(off: np.ndarray, blob: np.ndarray) -> list[str]:
    o, text = off.tolist(), blob.tobytes()
    return [text[o[i]:o[i + 1]].decode("utf-8") for i in range(len(o) - 1)]


class Overlay:
    """Base graph arrays (a :class:`~thinkingdb.store.graphfile.GraphArrays`) plus delta arrays.

    Delta arrays: ``new_sym_off``/``new_sym_blob`` (the new symbols, sorted), ``new_sym_ins`` (each
    one's insertion point among the base symbols), ``removed_syms`` (base ids that no longer occur,
    ascending), and one entry per changed triple: ``e_s``, ``e_r``, ``e_o`` (extended ids), ``e_conf``
    (NaN: the triple is gone) and ``e_inbase`` (1 when the base holds the triple). The header lists
    ``new_relations`` (sorted) and ``removed_relations`` (base relation ids).
    """

    def __init__(self, base, header: dict, arrays: dict[str, np.ndarray], orders: dict | None = None) -> None:
        self.base = base
        self.nb = base.n_symbols
        self.new_keys = _decode(arrays["new_sym_off"], arrays["new_sym_blob"])
        self.ins = np.asarray(arrays["new_sym_ins"], dtype=np.int64)
        self.removed = np.asarray(arrays["removed_syms"], dtype=np.int64)
        self._prepare_ids()
        nbr = len(base.relations)
        self.ext_relations = list(base.relations) + list(header["new_relations"])
        gone = set(header["removed_relations"])
        kept = [e for e in range(len(self.ext_relations)) if e not in gone]
        kept.sort(key=self.ext_relations.__getitem__)
        self.rel_ext = kept                                   # combined relation id -> extended id
        self.relations = tuple(self.ext_relations[e] for e in kept)
        s, r, o = (np.asarray(arrays[k], dtype=np.int64) for k in ("e_s", "e_r", "e_o"))
        conf, inbase = np.asarray(arrays["e_conf"], dtype=np.float64), np.asarray(arrays["e_inbase"], dtype=bool)
        self.n_entries = len(s)
        self.nbx = self.nb + len(self.new_keys)               # size of the extended symbol space
        gone_e = np.isnan(conf)
        net = (np.bincount(r[~gone_e & ~inbase], minlength=len(self.ext_relations))
               - np.bincount(r[gone_e], minlength=len(self.ext_relations)))
        base_sizes = np.zeros(len(self.ext_relations), dtype=np.int64)
        base_sizes[:nbr] = base.arrays["rel_sizes"]
        self.ext_sizes = base_sizes + net
        self.rel_sizes = [int(self.ext_sizes[e]) for e in kept]
        self.n_facts = int(sum(self.rel_sizes))
        self._dirs = {}
        self.orders = {}     # per direction, the entries' order by (relation, lead, other): persisted with a
        for d, (lead, other) in (("out", (s, o)), ("in", (o, s))):   # view's delta (store/viewfile.py)
            code = r * self.nbx + lead
            order = self.orders[d] = np.lexsort((other, code)) if orders is None else orders[d]
            self._dirs[d] = (code[order], other[order], conf[order], inbase[order])

    # -- ids ---------------------------------------------------------------------------------------
    def _prepare_ids(self) -> None:
        k = len(self.new_keys)
        self.n = self.nb - len(self.removed) + k
        self.new_pos = self.ins - np.searchsorted(self.removed, self.ins, "left") + np.arange(k)
        self._q = self.removed - np.arange(len(self.removed))
        self.identity = k == 0 and len(self.removed) == 0

    def to_comb(self, ext: np.ndarray) -> np.ndarray:
        """Combined ids of extended ids (none of them a removed base symbol)."""
        ext = np.asarray(ext, dtype=np.int64)
        if self.identity:
            return ext
        out = np.empty(len(ext), dtype=np.int64)
        isbase = ext < self.nb
        b = ext[isbase]
        out[isbase] = b - np.searchsorted(self.removed, b, "left") + np.searchsorted(self.ins, b, "right")
        out[~isbase] = self.new_pos[ext[~isbase] - self.nb]
        return out

    def to_ext(self, c: int) -> int:
        """The extended id of combined id ``c``."""
        if self.identity:
            return c
        i = int(np.searchsorted(self.new_pos, c, "left"))
        if i < len(self.new_pos) and self.new_pos[i] == c:
            return self.nb + i
        c -= i
        return c + int(np.searchsorted(self._q, c, "right"))

    def ext_key(self, e: int) -> str:
        return self.base_key(e) if e < self.nb else self.new_keys[e - self.nb]

    def base_key(self, b: int) -> str:
        off = self.base.arrays["sym_off"]
        return self.base.arrays["sym_blob"][int(off[b]):int(off[b + 1])].tobytes().decode("utf-8")

    def base_insertion_point(self, key: str) -> int:
        want = key.encode("utf-8", "surrogatepass")
        off, blob = self.base.arrays["sym_off"], self.base.arrays["sym_blob"]
        lo, hi = 0, self.nb
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[int(off[mid]):int(off[mid + 1])].tobytes() < want:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def ext_of_key(self, key: str) -> int | None:
        """The extended id of a symbol key, or None when the base and the delta both lack it (a base
        symbol that no longer occurs counts as absent)."""
        p = self.base_insertion_point(key)
        if p < self.nb and self.base_key(p) == key:
            i = int(np.searchsorted(self.removed, p))
            return None if i < len(self.removed) and self.removed[i] == p else p
        j = bisect.bisect_left(self.new_keys, key)
        return self.nb + j if j < len(self.new_keys) and self.new_keys[j] == key else None

    def insertion_point(self, key: str) -> int:
        """How many combined symbols sort before ``key``."""
        p = self.base_insertion_point(key)
        return p - int(np.searchsorted(self.removed, p, "left")) + bisect.bisect_left(self.new_keys, key)

    def all_keys(self) -> list[str]:
        """Every combined symbol key in id order."""
        keys = np.array(_decode(self.base.arrays["sym_off"], self.base.arrays["sym_blob"]), dtype=object)
        keys = np.delete(keys, self.removed)
        at = self.ins - np.searchsorted(self.removed, self.ins, "left")
        return np.insert(keys, at, np.array(self.new_keys, dtype=object)).tolist() if self.new_keys else keys.tolist()

    # -- rows --------------------------------------------------------------------------------------
    def _base_segment(self, d: str, e: int):
        a = self.base.arrays
        if e >= len(self.base.relations):
            return np.zeros(0, np.int32), np.zeros(1, np.int64)
        rel = a[f"{d}_rel"]
        lo, hi = int(rel[e]), int(rel[e + 1])
        return a[f"{d}_keys"][lo:hi], a[f"{d}_ptr"][lo:hi + 1]

    def _entries(self, d: str, e: int, x: int | None = None):
        code, other, conf, inbase = self._dirs[d]
        lo_c = e * self.nbx + (0 if x is None else x)
        hi_c = (e + 1) * self.nbx if x is None else lo_c + 1
        lo, hi = int(np.searchsorted(code, lo_c, "left")), int(np.searchsorted(code, hi_c, "left"))
        return code[lo:hi] - e * self.nbx, other[lo:hi], conf[lo:hi], inbase[lo:hi]

    def touches(self, d: str, e: int) -> bool:
        return len(self._entries(d, e)[0]) > 0

    def row(self, d: str, e: int, x: int) -> tuple[np.ndarray, np.ndarray]:
        """``(other ends, confidences)`` of extended relation ``e``, extended key ``x``: combined
        ids, ascending."""
        a = self.base.arrays
        vals, conf = np.zeros(0, np.int64), np.zeros(0, np.float64)
        if x < self.nb:
            keys, ptr = self._base_segment(d, e)
            i = int(np.searchsorted(keys, keys.dtype.type(x)))   # same dtype: no copy of the keys
            if i < len(keys) and keys[i] == x:
                lo, hi = int(ptr[i]), int(ptr[i + 1])
                vals = np.asarray(a[f"{d}_vals"][lo:hi], dtype=np.int64)
                c = a.get(f"{d}_conf")
                conf = np.ones(hi - lo) if c is None else np.asarray(c[lo:hi], dtype=np.float64)
        _, ov, oc, _ = self._entries(d, e, x)
        if len(ov):
            keep = ~np.isin(vals, ov)
            add = ~np.isnan(oc)
            vals, conf = np.concatenate([vals[keep], ov[add]]), np.concatenate([conf[keep], oc[add]])
        comb = self.to_comb(vals)
        order = np.argsort(comb, kind="stable")
        return comb[order], conf[order]

    def edges(self, d: str, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ``(bound end, other end, confidence)`` of extended relation ``e`` in combined ids,
        sorted by bound end then other end."""
        a = self.base.arrays
        keys, ptr = self._base_segment(d, e)
        ptr = np.asarray(ptr, dtype=np.int64)
        lo, hi = (int(ptr[0]), int(ptr[-1])) if len(ptr) else (0, 0)
        lead = np.repeat(np.asarray(keys, dtype=np.int64), np.diff(ptr))
        vals = np.asarray(a[f"{d}_vals"][lo:hi], dtype=np.int64)
        c = a.get(f"{d}_conf")
        conf = np.ones(hi - lo) if c is None else np.asarray(c[lo:hi], dtype=np.float64)
        ex, ov, oc, _ = self._entries(d, e)
        if len(ex):
            keep = ~np.isin(lead * self.nbx + vals, ex * self.nbx + ov)
            add = ~np.isnan(oc)
            lead = np.concatenate([lead[keep], ex[add]])
            vals = np.concatenate([vals[keep], ov[add]])
            conf = np.concatenate([conf[keep], oc[add]])
        if self.identity and not len(ex):
            return lead, vals, conf
        lead, vals = self.to_comb(lead), self.to_comb(vals)
        order = np.lexsort((vals, lead))
        return lead[order], vals[order], conf[order]

    def key_sizes(self, d: str, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(extended keys, final row sizes, held by the base)`` of the rows of extended relation
        ``e`` in direction ``d`` that the delta touches."""
        ex, _, oc, inbase = self._entries(d, e)
        xs, idx = np.unique(ex, return_inverse=True)
        gone = np.bincount(idx[np.isnan(oc)], minlength=len(xs))
        new = np.bincount(idx[~np.isnan(oc) & ~inbase], minlength=len(xs))
        keys, ptr = self._base_segment(d, e)
        if not len(keys):
            return xs, new - gone, np.zeros(len(xs), dtype=bool)
        ptr = np.asarray(ptr, dtype=np.int64)
        i = np.minimum(np.searchsorted(keys, xs.astype(keys.dtype)), len(keys) - 1)
        found = np.asarray(keys)[i] == xs
        base_size = np.where(found, ptr[i + 1] - ptr[i], 0)
        return xs, base_size - gone + new, found

    def keys(self, d: str, e: int) -> np.ndarray:
        """The combined bound ends of extended relation ``e`` in direction ``d`` with a row, ascending."""
        keys, _ = self._base_segment(d, e)
        keys = np.asarray(keys, dtype=np.int64)
        xs, size, found = self.key_sizes(d, e)
        if len(xs):
            keys = np.concatenate([keys[~np.isin(keys, xs[found & (size == 0)])], xs[~found & (size > 0)]])
        return np.sort(self.to_comb(keys))

    def n_keys(self, d: str, e: int) -> int:
        keys, _ = self._base_segment(d, e)
        xs, size, found = self.key_sizes(d, e)
        return len(keys) - int(np.sum(found & (size == 0))) + int(np.sum(~found & (size > 0)))

    def all_ones(self, d: str, e: int) -> bool:
        _, ptr = self._base_segment(d, e)
        c = self.base.arrays.get(f"{d}_conf")
        base = c is None or not len(ptr) or bool(np.all(c[int(ptr[0]):int(ptr[-1])] == 1.0))
        _, _, oc, _ = self._entries(d, e)
        return base and bool(np.all(oc[~np.isnan(oc)] == 1.0))

    def iter_rows(self, d: str, e: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        lead, vals, conf = self.edges(d, e)
        starts = np.flatnonzero(np.r_[True, lead[1:] != lead[:-1]]) if len(lead) else np.zeros(0, np.int64)
        bounds = np.append(starts, len(lead))
        for i in range(len(starts)):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            yield int(lead[lo]), vals[lo:hi], conf[lo:hi]
