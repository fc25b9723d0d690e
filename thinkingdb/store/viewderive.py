"""A caller's view file derived from a view file of this or an earlier store state and the change log.

After a small write the first question of a caller who may not see some units used to recompute the
view's differences whole (one SQL statement over every hidden unit's provenance, then composing
~318,000 entries: ~2.9 s on the store of ``benchmarks/serve.py``); so did a caller whose view no file
held yet (another caller, or the same one on another day). :func:`derive` instead takes a view file
beside the store and recomputes only the triples that can differ between it and the view wanted:

1. a view file over the current base graph file (stamp and data checksum), written at this or an
   earlier store state ``S0``, with its mask over the units of ``S0`` (whose fingerprint it names);
2. the change log covers every write from ``S0`` to now (:func:`~thinkingdb.store.changelog.chain`);
3. the units that can be seen differently are those the writes changed and the unchanged ones whose
   bit differs between the file's mask (each placed where it is now) and the mask wanted; the file
   with the fewest of them, at most :data:`MAX_UNITS`, is used;
4. every triple the writes touched, or that one of those units asserts now, gets its confidence in
   the view now, read from the store (the rule of :func:`~thinkingdb.store.viewfile.hidden_changes`);
   any other triple has the same provenance and facts row as at ``S0``, asserted by units seen alike
   in both masks, so the same confidence, which the file holds;
5. those confidences are composed over the file's delta (:func:`~thinkingdb.store.graphdelta.compose`).

Anything else — no such file, a gap in the log, a file over another base, a mask that does not fit,
a file failing its checks (:func:`~thinkingdb.store.viewfile.open_view`) — returns None: the caller
recomputes.

A view file names the base graph file it lies over, and a write whose delta grows past
:func:`~thinkingdb.store.graphdelta.merge_limit` writes a new base. So that the files stay usable, the
merging writer carries them over (:func:`~thinkingdb.store.viewcarry.carry`): each view file over the old base ``B0`` is written
again as the same view, at the same store state, over the new base ``B1 = B0 + D`` — the differences
between them are the triples of the view's delta and of ``D``, re-composed over ``B1`` (numpy and one
:func:`~thinkingdb.store.graphdelta.compose`, no SQL). The next question derives from it through the
log as after any write.
"""

from __future__ import annotations

import json

from .graphfile import VIEW_FILES, Stamp, graph_path, map_container

__all__ = ["MAX_UNITS", "derive", "view_confidences"]


ROW_TABLE_TRIPLES = 4096   # triples from which view_confidences decodes every unit id into a table
MAX_UNITS = 1024    # units seen differently from a file's mask, at most, to derive from it (each costs ~0.3 ms: 13,000 took 3.5 s where recomputing the view takes 2 s)


def derive(store_path: str, stamp: Stamp, base, current, access, mask, read, max_units: int | None = None):
    """``(header, arrays)`` of the differences, over ``base``, of the view ``mask`` (over
    ``access.ids``) at store state ``stamp``, derived from the view file — of any caller — of this or
    an earlier state that differs from it in the fewest units; None when none can be used.
    ``current``: the overlay of the store's write delta (None: the base is the store); ``read(fn)``:
    ``fn(conn)`` in a read transaction at ``stamp``."""
    import numpy as np
    from . import viewfile
    from .changelog import chain
    from .deltacompose import compose
    from .overlay import Overlay
    limit = MAX_UNITS if max_units is None else max_units
    mask = np.asarray(mask, dtype=bool)
    chains: dict = {}
    options = []
    for old, fingerprint, n_old, packed in _candidates(store_path, stamp, base):
        if old not in chains:
            chains[old] = read(lambda conn: chain(conn, old, stamp))
        changes = chains[old]
        if changes is None:
            continue
        differ = _differing(access, mask, changes.units, packed, n_old, fingerprint)
        if differ is not None and len(differ) <= limit:
            options.append((len(differ), -old.generation, fingerprint, old, changes, differ))
    options.sort(key=lambda o: o[:2])
    for _, _, fingerprint, old, changes, differ in options:
        got = viewfile.open_view(store_path, fingerprint, old, base)
        if got is None:
            continue
        # a view that hid nothing at S0 was the full graph then, which differs from the full graph now
        # only in triples the log names
        prior = current if got is viewfile.SAME else Overlay(base, *got)

        def confidences(conn, changes=changes, differ=differ):
            triples = set(changes.triples)
            if differ:
                triples.update(conn.execute(
                    "SELECT DISTINCT f.subject, f.relation, f.object FROM provenance p JOIN facts f ON f.id = p.fact "
                    "WHERE p.unit_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(differ)),)))
            return view_confidences(conn, sorted(triples), access, mask)
        return compose(base, prior, read(confidences))
    return None


def _candidates(store_path: str, stamp: Stamp, base) -> list[tuple]:
    """``(stamp, fingerprint, units, packed mask)`` of each view file over ``base`` written at this or
    an earlier store state (only its header and mask are read here; :func:`viewfile.open_view` checks
    the rest before it is used)."""
    import numpy as np
    from .viewfile import VIEW_FORMAT
    want_base = [base.stamp.generation, base.stamp.token, base.stamp.max_fact]
    out = []
    g = graph_path(store_path)
    for i in range(VIEW_FILES):
        got = map_container(f"{g}.view{i}", b"TDBVIEW\x00")
        if got is None:
            continue
        header, arrays, _ = got
        try:
            old = Stamp(*header["stamp"])
            if header.get("view_format") == VIEW_FORMAT and header.get("base") == want_base and \
                    header.get("base_crc") == base.header.get("data_crc") and old.generation <= stamp.generation and \
                    int(header["fingerprint"], 16) % VIEW_FILES == i and "mask" in arrays:
                out.append((old, header["fingerprint"], int(header["units"]), np.array(arrays["mask"], dtype=np.uint8)))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _differing(access, mask, units: dict, packed, n_old: int, fingerprint: str) -> set | None:
    """The units whose view may differ between a file's mask (``packed``, over the ``n_old`` units of
    its state) and ``mask`` (over ``access``'s units now): those the writes since changed (``units``:
    id -> earlier access columns, None: it did not exist) and those seen in one mask and not the
    other. None when the file's mask does not fit (its length, or its fingerprint)."""
    import numpy as np
    from .access import _fingerprint
    n = len(mask)
    if len(packed) != (n_old + 7) // 8 or _fingerprint(np.asarray(packed, dtype=np.uint8).tobytes(), n_old) != fingerprint:
        return None
    now = np.array(sorted(i for u in units if (i := access.find(u)) >= 0), dtype=np.int64)
    then = [u for u, cols in units.items() if cols is not None]
    here = np.sort(np.array([i for u in then if (i := access.find(u)) >= 0], dtype=np.int64))
    gone = np.sort(np.array([access.position(u) for u in then if access.find(u) < 0], dtype=np.int64))
    if n - len(now) + len(then) != n_old:
        return None
    keep = np.ones(n, dtype=bool)
    keep[now] = False
    kept = np.flatnonzero(keep)
    # a kept unit's place then: its place now, less the changed units before it now, plus those before it then
    old_at = kept - np.searchsorted(now, kept, "left") + np.searchsorted(here, kept, "left") + \
        np.searchsorted(gone, kept, "right")
    before = np.unpackbits(np.asarray(packed, dtype=np.uint8), count=n_old).astype(bool)
    differ = kept[before[old_at] != mask[kept]]
    return set(units) | {access.id_at(i) for i in differ.tolist()}


def view_confidences(conn, triples: list[tuple], access, mask) -> list[tuple]:
    """``(s, r, o, confidence or None)`` of each of ``triples`` in the view ``mask``: absent when no
    fact holds it; its ``facts`` confidence when no hidden or unknown unit asserts it; else its best
    assertion outside units or by a visible unit (None: none) — the rule of
    :func:`~thinkingdb.store.viewfile.hidden_changes`, one triple at a time."""
    if len(triples) > ROW_TABLE_TRIPLES:     # many rows: every id decoded once beats a search per unit
        rows = access.row

        def row(uid: str) -> int:
            return rows.get(uid, -1)
    else:
        seen: dict[str, int] = {}

        def row(uid: str) -> int:
            i = seen.get(uid)
            if i is None:
                i = seen[uid] = access.find(uid)
            return i
    facts: dict[tuple, list] = {}
    for s, r, o, fid, fc, uid, pc in conn.execute(
            "WITH t(s, r, o) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
            "json_extract(value, '$[2]') FROM json_each(?)) "
            "SELECT t.s, t.r, t.o, f.id, f.confidence, p.unit_id, p.confidence FROM t "
            "LEFT JOIN facts f ON f.subject = t.s AND f.relation = t.r AND f.object = t.o "
            "LEFT JOIN provenance p ON p.fact = f.id", (json.dumps(triples),)):
        got = facts.setdefault((s, r, o), [fc, False, None])
        if fid is None or pc is None:
            continue
        if uid is None:
            visible = True
        else:
            i = row(uid)
            visible = i >= 0 and bool(mask[i])   # a unit the store does not hold is visible to no one
            if not visible:
                got[1] = True
        if visible and (got[2] is None or pc > got[2]):
            got[2] = pc
    out = []
    for t in triples:
        fc, hidden, best = facts.get(tuple(t), (None, False, None))
        out.append((*t, (best if hidden else fc) if fc is not None else None))
    return out
