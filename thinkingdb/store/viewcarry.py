"""View files carried over to a new base graph file by the writer that merges its delta into it.

A view file names the base graph file it lies over; a write whose delta grows past
:func:`~thinkingdb.store.graphdelta.merge_limit` writes a new base ``B1 = B0 + D``. :func:`carry` writes
each view file over ``B0`` again as the same view, at the same store state, over ``B1``, so the next
question derives it through the change log (:mod:`thinkingdb.store.viewderive`) instead of computing it
whole (docs/storage.md, "A merge into a new base").
"""

from __future__ import annotations

from .graphfile import VIEW_FILES, Stamp, graph_path, map_container

__all__ = ["carry"]


def carry(store_path: str, old_base, header: dict, arrays: dict, new_base) -> int:
    """Write each view file over ``old_base`` again over ``new_base`` (``old_base`` with the delta
    ``header``/``arrays`` merged in: :func:`~thinkingdb.store.graphdelta.merge`), the same view at the same
    store state, so it can still be derived from (:func:`derive`). Call under the graph file's lock,
    after the merge. Returns how many files were carried; a file failing its checks is left (stale).

    The view's differences from ``new_base`` lie among the triples of its own delta (at the view's
    confidence) and of the merged delta (at ``old_base``'s, where the view's delta lacks them); both are
    renumbered into ``new_base``'s extended ids with numpy and composed
    (:func:`~thinkingdb.store.deltacompose.compose_ids`), no symbol decoded but those the new base lacks."""
    import numpy as np
    from . import viewfile
    from .deltacompose import _base_confs, compose_ids, entry_orders
    want_base = [old_base.stamp.generation, old_base.stamp.token, old_base.stamp.max_fact]
    g = graph_path(store_path)
    ids = merged = None
    done = 0
    for i in range(VIEW_FILES):
        got = map_container(f"{g}.view{i}", viewfile.VIEW_MAGIC)
        if got is None:
            continue
        head, arr, _ = got
        try:
            if head.get("view_format") != viewfile.VIEW_FORMAT or head.get("base") != want_base or \
                    head.get("base_crc") != old_base.header.get("data_crc") or "mask" not in arr:
                continue
            at, fingerprint, n = Stamp(*head["stamp"]), head["fingerprint"], int(head["units"])
        except (KeyError, TypeError, ValueError):
            continue
        mask = np.unpackbits(np.asarray(arr["mask"], dtype=np.uint8), count=n).astype(bool)
        view = viewfile.open_view(store_path, fingerprint, at, old_base)
        if view is None:
            continue
        if view is viewfile.SAME:    # the full graph at its state: the same over any base (derive's prior is the store now)
            done += viewfile.save_view(store_path, fingerprint, at, new_base, None, None, None, mask)
            continue
        if ids is None:
            ids = _Renumber(old_base, header, arrays, new_base)
            r, s, o = (np.asarray(arrays[k], dtype=np.int64) for k in ("e_r", "e_s", "e_o"))
            merged = (ids.delta(header, arrays), _base_confs(old_base, old_base.n_symbols, len(old_base.relations),
                                                              r, s, o))
        vh, va, _ = view
        parts = [merged[0], ids.delta(vh, va)]
        new_keys, new_rels, (c_r, c_s, c_o) = ids.finish(parts)
        c_c = np.concatenate([merged[1], np.asarray(va["e_conf"], dtype=np.float64)])
        # the view's entry of a triple comes last, so it replaces the merged delta's (compose: the last change wins)
        nh, na = compose_ids(new_base, None, new_keys, new_rels, c_r, c_s, c_o, c_c)
        done += viewfile.save_view(store_path, fingerprint, at, new_base, nh, na, entry_orders(new_base.n_symbols, na),
                                   mask)
    return done


class _Renumber:
    """Extended ids of a delta over ``old`` → extended ids over ``new`` = ``old`` + the merged delta
    ``(header, arrays)``: a base symbol the merge kept is its combined id
    (:meth:`~thinkingdb.store.overlay.Overlay.to_comb`), a symbol or relation ``new`` lacks is named by
    its key, to be numbered past ``new``'s once every part is known (:meth:`finish`)."""

    def __init__(self, old, header: dict, arrays: dict, new) -> None:
        import numpy as np
        from .overlay import Overlay, _decode
        self.old, self.nb = old, old.n_symbols
        ov = self.ov = Overlay.__new__(Overlay)       # the merged delta's ids only (no entries sorted)
        self.new_off, self.new_blob = arrays["new_sym_off"], arrays["new_sym_blob"]
        ov.nb, ov.new_keys = self.nb, _decode(self.new_off, self.new_blob)
        ov.ins = np.asarray(arrays["new_sym_ins"], dtype=np.int64)
        ov.removed = np.asarray(arrays["removed_syms"], dtype=np.int64)
        ov._prepare_ids()
        self.new = new
        self.new_rel = {k: i for i, k in enumerate(new.relations)}

    def delta(self, header: dict, arrays: dict) -> tuple:
        """``((r, relation keys), (s, o, symbol keys))`` of a delta's entries over ``old``: ids over
        ``new``, or ``-1 - j`` for the ``j``-th of the returned keys, a symbol or relation ``new`` lacks."""
        import numpy as np
        from .overlay import _decode
        off, blob = arrays["new_sym_off"], arrays["new_sym_blob"]
        same = np.array_equal(off, self.new_off) and np.array_equal(blob, self.new_blob)
        x_new = None if same else _decode(off, blob)
        keys: list[str] = []
        s, o = (self._symbols(np.asarray(arrays[k], dtype=np.int64), x_new, keys) for k in ("e_s", "e_o"))
        rels = list(self.old.relations) + list(header["new_relations"])
        r = np.asarray(arrays["e_r"], dtype=np.int64)
        ru = np.unique(r)
        rel_keys: list[str] = []
        rmap = []
        for e in ru.tolist():
            got = self.new_rel.get(rels[e])
            if got is None:
                got = -1 - len(rel_keys)
                rel_keys.append(rels[e])
            rmap.append(got)
        rmap = np.array(rmap, dtype=np.int64)
        return (rmap[np.searchsorted(ru, r)], rel_keys), (s, o, keys)

    def _symbols(self, x, x_new: list[str] | None, keys: list[str]):
        """The ids over ``new`` of extended ids ``x`` over ``old`` (with new symbols ``x_new``; None:
        those of the merged delta); a symbol
        ``new`` lacks becomes ``-1 - j``, its key appended to ``keys`` as the ``j``-th."""
        import numpy as np
        nb, ov = self.nb, self.ov
        out = np.empty(len(x), dtype=np.int64)
        base = x < nb
        b = x[base]
        at = np.searchsorted(ov.removed, b)
        gone = at < len(ov.removed)
        gone[gone] = ov.removed[at[gone]] == b[gone]
        mapped = np.empty(len(b), dtype=np.int64)
        mapped[~gone] = ov.to_comb(b[~gone])
        if gone.any():                   # symbols the merge removed: the new base lacks them
            u, inv = np.unique(b[gone], return_inverse=True)
            mapped[gone] = -1 - (len(keys) + inv)
            keys.extend(_key(self.old, g) for g in u.tolist())
        out[base] = mapped
        rest = x[~base]
        if not len(rest):
            return out
        if x_new is None:             # the merged delta itself, or a view with the same new symbols
            out[~base] = ov.to_comb(rest)
            return out
        u, inv = np.unique(rest - nb, return_inverse=True)
        want = np.array(x_new, dtype=object)[u]
        have = np.array(ov.new_keys, dtype=object)
        j = np.searchsorted(have, want) if len(have) else np.zeros(len(want), dtype=np.int64)
        found = j < len(have)
        found[found] = have[j[found]] == want[found]
        ids = np.empty(len(want), dtype=np.int64)
        ids[found] = ov.to_comb(nb + j[found])
        lack = np.flatnonzero(~found)        # symbols of the view the new base lacks
        ids[lack] = -1 - (len(keys) + np.arange(len(lack)))
        keys.extend(want[lack].tolist())
        out[~base] = ids[inv]
        return out

    def finish(self, parts: list) -> tuple[list[str], list[str], tuple]:
        """``(new keys, new relations, (r, s, o))`` of the parts' entries one after the other, in
        extended ids over ``new`` (the keys it lacks numbered past its own, in sorted order)."""
        import numpy as np
        new_keys = sorted({k for _, (_, _, keys) in parts for k in keys})
        new_rels = sorted({k for (_, rk), _ in parts for k in rk})
        sym_at = {k: self.new.n_symbols + i for i, k in enumerate(new_keys)}
        rel_at = {k: len(self.new.relations) + i for i, k in enumerate(new_rels)}
        rs, ss, os_ = [], [], []
        for (r, rk), (s, o, keys) in parts:
            fix = np.array([sym_at[k] for k in keys], dtype=np.int64)
            rfix = np.array([rel_at[k] for k in rk], dtype=np.int64)
            for arr, table, out in ((s, fix, ss), (o, fix, os_), (r, rfix, rs)):
                arr = arr.copy()
                neg = arr < 0
                arr[neg] = table[-1 - arr[neg]]
                out.append(arr)
        return new_keys, new_rels, (np.concatenate(rs), np.concatenate(ss), np.concatenate(os_))


def _key(graph, b: int) -> str:
    """The key of symbol ``b`` of a graph file."""
    return graph.symbol_bytes(b).decode("utf-8")
