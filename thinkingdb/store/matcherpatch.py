"""The arrays of a matcher file (:mod:`thinkingdb.store.matcherfile`) with a few keys changed, spliced
in place of being made again from every key.

After a write the keys whose label can have changed are few; the others keep their rows. Each packed
table of the file (the keys, their forms, the stem sequences and their key lists) is cut around the
changed rows and joined again with the new ones (:func:`splice`: ``numpy.concatenate`` of the
unchanged runs), the stem sequences' key numbers renumbered for the keys inserted and removed before
them. ~0.1 s on the store of ``benchmarks/serve.py``, where decoding and sorting every key took ~1.7 s.

>>> import numpy as np
>>> off, data = splice(np.array([0, 1, 3, 6]), np.frombuffer(b"abbccc", np.uint8), [1], [(1, b"XY"), (3, b"Z")])
>>> off.tolist(), data.tobytes()
([0, 1, 3, 6, 7], b'aXYcccZ')
"""

from __future__ import annotations

import bisect

__all__ = ["splice", "patch"]


def splice(off, data, remove: list[int], insert: list[tuple[int, object]]):
    """``(offsets, data)`` of a packed table (item ``i`` is ``data[off[i]:off[i + 1]]``) without the
    items ``remove`` (sorted) and with ``insert``'s items (``(p, bytes or array)``, sorted by ``p``)
    each placed before old item ``p`` (``p`` = the old count: at the end)."""
    import numpy as np
    n = len(off) - 1
    gone = set(remove)
    at: dict[int, list] = {}
    for p, item in insert:
        at.setdefault(p, []).append(np.frombuffer(item, np.uint8) if isinstance(item, bytes) else
                                    np.asarray(item, dtype=data.dtype))
    cuts = sorted({0, n} | set(at) | gone | {r + 1 for r in gone})
    pieces, lens = [], []
    for a, b in zip(cuts, cuts[1:] + [None]):
        for item in at.get(a, ()):
            pieces.append(item)
            lens.append(np.array([len(item)], dtype=np.int64))
        if b is None or a in gone:
            continue
        pieces.append(data[off[a]:off[b]])
        lens.append(np.diff(off[a:b + 1]))
    new_off = np.zeros(sum(len(x) for x in lens) + 1, dtype=np.int64)
    if len(new_off) > 1:
        np.cumsum(np.concatenate(lens), out=new_off[1:])
    return new_off, (np.concatenate(pieces) if pieces else data[:0]).astype(data.dtype, copy=False)


def patch(table, changed: dict[bytes, tuple[int, list[tuple[bytes, bytes]]] | None]) -> dict:
    """The arrays of ``table`` (a :class:`~thinkingdb.store.matcherfile.MatcherTable`) with each key
    of ``changed`` replaced by its record (:func:`~thinkingdb.store.matcherfile.encode`'s bytes) or
    removed (None)."""
    import numpy as np
    a = table.arrays
    ko, fp = a["key_off"], a["form_ptr"]
    n = len(ko) - 1
    key_at = table.key_bytes
    removed: list[int] = []
    added: list[tuple[int, bytes, tuple]] = []   # (old position, key, record)
    old_stems: set[bytes] = set()
    for key in sorted(changed):
        p = bisect.bisect_left(range(n), key, key=key_at)
        if p < n and key_at(p) == key:
            removed.append(p)
            old_stems.update(table.stem_bytes(f) for f in range(int(fp[p]), int(fp[p + 1])))
        if changed[key] is not None:
            added.append((p, key, changed[key]))
    # old key number -> new: less the removed before it, plus the added before it
    olds = np.arange(n + 1)
    renum = olds - np.searchsorted(np.array(removed, dtype=np.int64), olds, side="left") + \
        np.searchsorted(np.array([p for p, _, _ in added], dtype=np.int64), olds, side="right")
    new_of = {k: p - bisect.bisect_left(removed, p) + i for i, (p, k, _) in enumerate(added)}
    out = dict(zip(("key_off", "key_blob"), splice(ko, a["key_blob"], removed, [(p, k) for p, k, _ in added])))
    kept_org = np.delete(a["key_origin"], removed)
    counts = np.delete(np.diff(fp), removed)
    shift = [p - bisect.bisect_left(removed, p) for p, _, _ in added]
    out["key_origin"] = np.insert(kept_org, shift, [r[0] for _, _, r in added]).astype(np.int64)
    counts = np.insert(counts, shift, [len(r[1]) for _, _, r in added]).astype(np.int64)
    out["form_ptr"] = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out["form_ptr"][1:])
    form_rm = [f for p in removed for f in range(int(fp[p]), int(fp[p + 1]))]
    for name, j in (("form", 0), ("stem", 1)):
        out[f"{name}_off"], out[f"{name}_blob"] = splice(
            a[f"{name}_off"], a[f"{name}_blob"], form_rm, [(int(fp[p]), f[j]) for p, _, r in added for f in r[1]])
    # the stem sequences the changed keys were or are matched on get their key lists anew
    lists: dict[bytes, set[int]] = {s: set() for s in old_stems}
    for _, k, r in added:
        for _, s in r[1]:
            lists.setdefault(s, set()).add(new_of[k])
    eo, ep = a["ent_off"], a["ent_ptr"]
    ne = len(eo) - 1
    old_ek = np.asarray(a["ent_key"], dtype=np.int64)
    ek = renum[old_ek]
    gone = set(removed)
    ent_rm, ent_add = [], []
    for s in sorted(lists):
        j = bisect.bisect_left(range(ne), s, key=table.entry_bytes)
        keys = set(lists[s])
        if j < ne and table.entry_bytes(j) == s:
            ent_rm.append(j)
            keys |= {int(renum[o]) for o in old_ek[int(ep[j]):int(ep[j + 1])].tolist() if o not in gone}
        if keys:
            ent_add.append((j, s, sorted(keys)))
    out["ent_off"], out["ent_blob"] = splice(eo, a["ent_blob"], ent_rm, [(j, s) for j, s, _ in ent_add])
    out["ent_ptr"], out["ent_key"] = splice(ep, ek, ent_rm, [(j, np.array(k, dtype=np.int64)) for j, _, k in ent_add])
    return out
