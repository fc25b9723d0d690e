"""Composing a graph delta: the entries that differ from a base graph file, after some changes.

:func:`compose` is the one place a delta's arrays (docs/storage.md, "Writes: the delta") are made —
for the write delta (:func:`~thinkingdb.store.graphdelta.advance`), a caller view's differences
(:mod:`thinkingdb.store.viewfile`, :mod:`thinkingdb.store.viewderive`) and a restricted graph
(:func:`restricted`): the old delta's entries with the changes, given as
triples of symbol keys, applied on top. :func:`compose_ids` takes the changes already in the base's
extended ids (a view carried over to a new base: :func:`~thinkingdb.store.viewderive.carry`).
:func:`entry_orders` sorts a delta's entries per direction; :func:`restricted` lays changes over a
graph read from a graph file.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

    from .graphfile import GraphArrays
    from .overlay import Overlay

__all__ = ["BULK_KEYS", "SEARCH_COST", "SAFE_KEY", "compose", "compose_ids", "entry_orders", "restricted"]

BULK_KEYS = 4096           # at least this many changes (or symbols) before whole-array lookups are used,
SEARCH_COST = 32           # and more than 1/SEARCH_COST of the base's symbols (or facts): one binary
                           # search costs about what decoding SEARCH_COST symbols does (~39 us against ~1 us)
Change = tuple  # (subject, relation, object, confidence or None when the triple is gone)


def compose(base: GraphArrays, old: Overlay | None, changes: list[Change]) -> tuple[dict, dict]:
    """The delta over ``base`` holding ``old``'s entries with ``changes`` applied on top."""
    import numpy as np
    from .overlay import Overlay
    nb, nbr = base.n_symbols, len(base.relations)
    old_new = old.new_keys if old is not None else []
    old_rels = old.ext_relations[nbr:] if old is not None else []
    probe = Overlay(base, {"new_relations": [], "removed_relations": []}, _empty())
    base_rel = {k: i for i, k in enumerate(base.relations)}

    def base_id(k: str) -> int | None:
        p = probe.base_insertion_point(k)
        return p if p < nb and probe.base_key(p) == k else None

    n = len(changes)
    S, R, O, C = zip(*changes) if n else ((), (), (), ())
    keys = set(S) | set(O)
    if len(keys) > max(BULK_KEYS, nb // SEARCH_COST):   # decode the base's keys once, not a search each
        every = {k: i for i, k in enumerate(base.symbols())}
        sym_ids = {k: every.get(k) for k in keys}
    else:
        sym_ids = {k: base_id(k) for k in keys}
    new_keys = sorted(set(old_new) | {k for k, b in sym_ids.items() if b is None})
    new_rels = sorted(set(old_rels) | {r for r in set(R) if r not in base_rel})
    new_at = {k: nb + i for i, k in enumerate(new_keys)}
    ext = {k: b if b is not None else new_at[k] for k, b in sym_ids.items()}
    rel_ids = {**base_rel, **{k: nbr + i for i, k in enumerate(new_rels)}}
    c_r = np.fromiter(map(rel_ids.__getitem__, R), np.int64, n)
    c_s = np.fromiter(map(ext.__getitem__, S), np.int64, n)
    c_o = np.fromiter(map(ext.__getitem__, O), np.int64, n)
    c_c = np.array([float("nan") if c is None else c for c in C], dtype=np.float64)
    return compose_ids(base, old, new_keys, new_rels, c_r, c_s, c_o, c_c)


def restricted(graph, changes: list[Change], base: GraphArrays | None = None):
    """``graph`` (read from a graph file: ``graph.file`` is set) with ``changes`` laid over it, as a new
    read-only graph over the same memory-mapped file; nothing is written. A caller who may not see some
    facts gets their graph this way, and a restricted graph takes a write's changes the same way: the
    cost follows the facts that differ, not the store. ``base``: the same file opened again (a newer
    snapshot's), read instead of ``graph.file``. None when ``graph`` does not read a file (the caller
    then patches or builds it in memory).

    >>> from thinkingdb.engine.graph import FactGraph
    >>> restricted(FactGraph(), []) is None
    True
    """
    base = base or getattr(graph, "file", None)
    if base is None or not graph.is_mapped:
        return None
    from .overlay import Overlay
    header, arrays = compose(base, graph.overlay, changes)
    return type(graph).mapped(base.arrays, base.relations, base.n_symbols, base.n_facts, base.path,
                              overlay=Overlay(base, header, arrays), file=base)


def compose_ids(base: GraphArrays, old: Overlay | None, new_keys: list[str], new_rels: list[str], c_r: np.ndarray,
                c_s: np.ndarray, c_o: np.ndarray, c_c: np.ndarray) -> tuple[dict, dict]:
    """:func:`compose` with the changes given in extended ids over ``base``: ``new_keys`` and
    ``new_rels`` are the symbols and relations the base lacks (sorted; ``old``'s new ones among them),
    numbered from the base's counts on; ``c_r``, ``c_s``, ``c_o`` the changes' ids and ``c_c`` their
    confidences (NaN: the triple is gone)."""
    import numpy as np
    from .overlay import Overlay
    nb, nbr = base.n_symbols, len(base.relations)
    old_new = old.new_keys if old is not None else []
    probe = Overlay(base, {"new_relations": [], "removed_relations": []}, _empty())
    nbx = nb + len(new_keys)
    rel_ids = {**{k: i for i, k in enumerate(base.relations)}, **{k: nbr + i for i, k in enumerate(new_rels)}}
    n = len(c_r)
    # old entries, renumbered into the new extended ids
    if old is not None and old.n_entries:
        code, oth, oc, oin = old._dirs["out"]
        oe, ox = np.divmod(code, old.nbx)
        sym_map = np.concatenate([np.arange(nb), nb + np.searchsorted(new_keys, old_new).astype(np.int64)])
        rel_map = np.array([e if e < nbr else rel_ids[old.ext_relations[e]] for e in range(len(old.ext_relations))])
        o_r, o_s, o_o = rel_map[oe].astype(np.int64), sym_map[ox], sym_map[oth]
        o_c, o_in = np.asarray(oc, dtype=np.float64), np.asarray(oin, dtype=bool)
    else:
        o_r = o_s = o_o = np.zeros(0, dtype=np.int64)
        o_c, o_in = np.zeros(0), np.zeros(0, dtype=bool)
    # A change's entry depends on its new confidence and the base's alone (an old entry of the same
    # triple was made against the same base): equal to the base's, or gone where the base lacks it,
    # it is no entry; else (confidence or NaN, in base). The last change of a triple wins, and it
    # replaces the old entry; old entries no change touches stay.
    bc = _base_confs(base, nb, nbr, c_r, c_s, c_o)
    c_in = ~np.isnan(bc)
    c_keep = ~np.where(c_in, ~np.isnan(c_c) & (c_c == bc), np.isnan(c_c))
    # The old entries are sorted by (relation, subject, object), and stay so renumbered (every map is
    # increasing): the changes (the last of each triple) are merged in, not the whole sorted again.
    m = len(o_r)
    if n:
        corder = np.lexsort((np.arange(n), c_o, c_s, c_r))
        last = np.ones(n, dtype=bool)
        last[:-1] = (c_r[corder][1:] != c_r[corder][:-1]) | (c_s[corder][1:] != c_s[corder][:-1]) | \
            (c_o[corder][1:] != c_o[corder][:-1])
        pick = corder[last]
    else:
        pick = np.zeros(0, dtype=np.int64)
    pos = _positions(o_r, o_s, o_o, c_r[pick], c_s[pick], c_o[pick], nbx, len(rel_ids))
    hit = pos < m
    hit[hit] = (o_r[pos[hit]] == c_r[pick][hit]) & (o_s[pos[hit]] == c_s[pick][hit]) & (o_o[pos[hit]] == c_o[pick][hit])
    dropped = pos[hit]                               # old entries a change replaces (ascending)
    at = pos - np.searchsorted(dropped, pos, "left")
    add = pick[c_keep[pick]]
    at = at[c_keep[pick]]

    def merged(old_col, new_col):
        return np.insert(np.delete(old_col, dropped), at, new_col[add])
    r_, s_, o_ = merged(o_r, c_r), merged(o_s, c_s), merged(o_o, c_o)
    conf = merged(o_c, c_c)
    inb = merged(o_in.astype(np.uint8), c_in.astype(np.uint8))
    # which symbols and relations occur now
    gone_e, added = np.isnan(conf), ~np.isnan(conf) & (inb == 0)
    occ = np.zeros(nbx, dtype=np.int64)
    for arr in (s_, o_):
        occ += np.bincount(arr[added], minlength=nbx) - np.bincount(arr[gone_e], minlength=nbx)
    # A base symbol is gone when no fact holds it: only the symbols of the changed triples can change
    # in that (old.removed was computed by this rule over the same base and the other entries).
    cand = np.unique(np.concatenate([c_s, c_o]))
    cand_base = cand[cand < nb]
    deg = np.zeros(len(cand_base), dtype=np.int64)
    for d in ("out", "in"):
        keys, ptr = base.arrays[f"{d}_keys"], base.arrays[f"{d}_ptr"]
        rel = base.arrays[f"{d}_rel"]
        for e in range(nbr):
            lo, hi = int(rel[e]), int(rel[e + 1])
            if hi > lo and len(cand_base):
                i = np.minimum(np.searchsorted(keys[lo:hi], cand_base.astype(keys.dtype)), hi - lo - 1)
                hit_b = keys[lo:hi][i] == cand_base
                deg += np.where(hit_b, ptr[lo + i + 1] - ptr[lo + i], 0)
    before = np.asarray(old.removed if old is not None else [], dtype=np.int64)
    removed = np.union1d(np.setdiff1d(before, cand_base), cand_base[deg + occ[cand_base] <= 0])
    live_new = [k for j, k in enumerate(new_keys) if occ[nb + j] > 0]
    if len(live_new) != len(new_keys):      # renumber the extended ids without the dead new symbols
        keep = np.array([occ[nb + j] > 0 for j in range(len(new_keys))], dtype=bool)
        remap = np.concatenate([np.arange(nb), nb + np.cumsum(keep) - 1])
        s_, o_ = remap[s_], remap[o_]
        new_keys = live_new
    sizes = np.zeros(nbr + len(new_rels), dtype=np.int64)
    sizes[:nbr] = base.arrays["rel_sizes"]
    sizes += np.bincount(r_[added], minlength=len(sizes)) - np.bincount(r_[gone_e], minlength=len(sizes))
    removed_rels = [e for e in range(nbr) if sizes[e] <= 0]
    live_rels = [k for i, k in enumerate(new_rels) if sizes[nbr + i] > 0]
    if len(live_rels) != len(new_rels):
        keep = np.array([sizes[nbr + i] > 0 for i in range(len(new_rels))], dtype=bool)
        r_ = np.concatenate([np.arange(nbr), nbr + np.cumsum(keep) - 1])[r_]
    enc = [k.encode("utf-8") for k in new_keys]
    off = np.zeros(len(enc) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(b) for b in enc]) if enc else []
    arrays = {"new_sym_off": off, "new_sym_blob": np.frombuffer(b"".join(enc), dtype=np.uint8),
              "new_sym_ins": np.array([probe.base_insertion_point(k) for k in new_keys], dtype=np.int64),
              "removed_syms": np.asarray(removed, dtype=np.int64),
              "e_s": s_, "e_r": r_, "e_o": o_, "e_conf": conf, "e_inbase": inb}
    return {"new_relations": live_rels, "removed_relations": removed_rels}, arrays


SAFE_KEY = 1 << 62          # (relation, subject, object) packed in one int64 while below this


def entry_orders(n_symbols: int, arrays: dict) -> dict:
    """The entries' order per direction (``out``: by relation, subject, object; ``in``: by relation,
    object, subject) of delta ``arrays`` over a base of ``n_symbols`` symbols: what
    :class:`~thinkingdb.store.overlay.Overlay` computes when not given them, sorted by one packed key
    (the triples are distinct, so the order is the same; ~10x faster than its two-key sort).

    >>> import numpy as np
    >>> a = {"new_sym_ins": np.zeros(0), "e_r": np.array([0, 0, 1]), "e_s": np.array([2, 1, 0]),
    ...      "e_o": np.array([0, 1, 0])}
    >>> {d: o.tolist() for d, o in entry_orders(3, a).items()}
    {'out': [1, 0, 2], 'in': [0, 1, 2]}
    """
    import numpy as np
    nbx = n_symbols + len(arrays["new_sym_ins"])
    r, s, o = (np.asarray(arrays[k], dtype=np.int64) for k in ("e_r", "e_s", "e_o"))
    n_rel = int(r.max()) + 1 if len(r) else 0
    out = {}
    for d, lead, other in (("out", s, o), ("in", o, s)):
        if (n_rel + 1) * nbx * nbx < SAFE_KEY:
            out[d] = np.argsort((r * nbx + lead) * nbx + other)
        else:
            out[d] = np.lexsort((other, r * nbx + lead))
    return out


def _positions(o_r, o_s, o_o, r, s, o, nbx: int, n_rel: int):
    """Where each triple ``(r[i], s[i], o[i])`` sorts among the sorted triples ``(o_r, o_s, o_o)``
    (the first not below it): one packed key per triple when it fits in an int64, else per triple."""
    import numpy as np
    if (n_rel + 1) * nbx * nbx < SAFE_KEY:
        return np.searchsorted((o_r * nbx + o_s) * nbx + o_o, (r * nbx + s) * nbx + o, "left")
    code = o_r * nbx + o_s
    want = r * nbx + s
    lo, hi = np.searchsorted(code, want, "left"), np.searchsorted(code, want, "right")
    return np.array([a + int(np.searchsorted(o_o[a:b], x, "left")) for a, b, x in zip(lo.tolist(), hi.tolist(),
                                                                                       o.tolist())], dtype=np.int64)


def _empty() -> dict:
    import numpy as np
    z = np.zeros(0, dtype=np.int64)
    return {"new_sym_off": np.zeros(1, np.int64), "new_sym_blob": np.zeros(0, np.uint8), "new_sym_ins": z,
            "removed_syms": z, "e_s": z, "e_r": z, "e_o": z, "e_conf": np.zeros(0), "e_inbase": np.zeros(0, np.uint8)}


def _base_confs(base: GraphArrays, nb: int, nbr: int, r: np.ndarray, s: np.ndarray, o: np.ndarray) -> np.ndarray:
    """The base file's confidence of each triple ``(r[i], s[i], o[i])`` (extended ids), NaN where the
    base lacks it: one sorted code array per relation touched, searched for all its triples at once."""
    import numpy as np
    a = base.arrays
    out = np.full(len(r), np.nan)
    conf = a.get("out_conf")
    inb = (r < nbr) & (s < nb) & (o < nb)
    for e in np.unique(r[inb]).tolist():
        lo, hi = int(a["out_rel"][e]), int(a["out_rel"][e + 1])
        ptr = a["out_ptr"][lo:hi + 1]
        p0, p1 = int(ptr[0]), int(ptr[-1])
        code = np.repeat(a["out_keys"][lo:hi].astype(np.int64), np.diff(ptr)) * nb + a["out_vals"][p0:p1]
        sel = np.flatnonzero(inb & (r == e))
        want = s[sel] * nb + o[sel]
        pos = np.minimum(np.searchsorted(code, want), max(len(code) - 1, 0))
        hit = code[pos] == want if len(code) else np.zeros(len(sel), dtype=bool)
        out[sel[hit]] = 1.0 if conf is None else conf[p0 + pos[hit]]
    return out
