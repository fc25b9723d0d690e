"""A caller view's fact graph, persisted: the facts it may not see, as a delta file beside the graph file.

A caller who may not see some units reasons over the graph file with the facts only those units assert
taken out, and the facts hidden units raised lowered to their best visible confidence
(:func:`~thinkingdb.store.graphdelta.restricted`). Computing those differences walks every hidden
unit's facts — on the store of ``benchmarks/serve.py`` (100,000 units, 1,000,000 facts) an anonymous
caller hides 31,794 units and 317,939 facts, ~15 s in every fresh process (docs/storage.md). So the differences, laid
out as a graph delta (the arrays of :func:`~thinkingdb.store.graphdelta.compose`), are written once per
store state and view to ``kb.sqlite.graph.viewN`` (``N`` = the view's fingerprint mod
:data:`VIEW_FILES`) and mapped by the next process in milliseconds.

A view file names what it was computed from: the view's fingerprint (the set of visible units), the
store's stamp (generation, write token, largest fact id — any committed write changes the token), and
the base graph file it lies over (its stamp and data checksum). :func:`open_view` refuses a file
unless all three match the question's state, and a torn, truncated or foreign file fails the
container's checks (:func:`~thinkingdb.store.graphfile.map_container`); a refused file is computed
again and rewritten (temporary file, rename), never trusted — or, after a small write, derived from the
file of the earlier state through the change log (:mod:`thinkingdb.store.viewderive`). Writing is best effort: a read-only
folder still answers, from the differences computed in memory.

The differences come from SQL (:func:`hidden_changes`, one statement over the hidden units' provenance)
or, in a process that already holds every provenance row (a server), from those rows; both follow the
rule of :mod:`thinkingdb.store.access`: a fact is visible iff some provenance record of it is — a
visible unit's, or one outside any unit — at the best confidence among those.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .graphfile import VIEW_FILES, Stamp, access_path, graph_path, map_container, write_container
from .viewsql import hidden_changes  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .graphfile import GraphArrays

__all__ = ["VIEW_FILES", "VIEW_MAGIC", "ACCESS_MAGIC", "view_path", "access_path", "open_view", "save_view",
           "hidden_changes", "load_access", "SAME"]

VIEW_MAGIC = b"TDBVIEW\x00"
ACCESS_MAGIC = b"TDBACCES"
VIEW_FORMAT = 2           # 2: the view's mask over the units is kept too (store/viewderive.py)
ACCESS_FORMAT = 2         # 2: the dangling unit ids are kept too (store/access.py: visible to no one)
SAME = "same"              # open_view's answer for a view that hides no fact of the graph


def view_path(store_path: str, fingerprint: str) -> str:
    """The file of a view's differences.

    >>> view_path("kb.sqlite", "00000000000000000000000b")
    'kb.sqlite.graph.view3'
    """
    return f"{graph_path(store_path)}.view{int(fingerprint, 16) % VIEW_FILES}"


def _key(fingerprint: str, stamp: Stamp, base: GraphArrays) -> dict:
    return {"view_format": VIEW_FORMAT, "fingerprint": fingerprint,
            "stamp": [stamp.generation, stamp.token, stamp.max_fact],
            "base": [base.stamp.generation, base.stamp.token, base.stamp.max_fact],
            "base_crc": base.header.get("data_crc")}


def open_view(store_path: str, fingerprint: str, stamp: Stamp, base: GraphArrays):
    """``(header, arrays, orders)`` of the differences of the view ``fingerprint`` over ``base`` at
    store state ``stamp`` (``orders``: the entries' order per direction, checked); :data:`SAME` when that view hides nothing of the graph; None when no current
    file holds them (missing, another view's, stale, torn or corrupt)."""
    got = map_container(view_path(store_path, fingerprint), VIEW_MAGIC)
    if got is None:
        return None
    header, arrays, _ = got
    want = json.loads(json.dumps(_key(fingerprint, stamp, base)))
    if any(header.get(k) != v for k, v in want.items()):
        return None
    if not _data_ok(header, arrays):
        return None
    if header.get("same") is True:
        return SAME
    try:
        import numpy as np
        out = {k: arrays[k] for k in _NAMES}
        n = len(out["e_s"])
        if any(len(out[k]) != n for k in ("e_r", "e_o", "e_conf", "e_inbase", "out_order", "in_order")) or \
                len(out["new_sym_ins"]) + 1 != len(out["new_sym_off"]):
            return None
        # the entries' orders by direction are checked, not trusted (a few vector passes, no sort)
        nbx = base.n_symbols + len(out["new_sym_ins"])
        r = np.asarray(out["e_r"], dtype=np.int64)
        orders = {}
        for d, lead, other in (("out", "e_s", "e_o"), ("in", "e_o", "e_s")):
            order = np.asarray(out[f"{d}_order"], dtype=np.int64)
            if n and (order.min() < 0 or order.max() >= n or np.bincount(order, minlength=n).max() != 1):
                return None
            code = (r * nbx + out[lead])[order]
            oth = np.asarray(out[other])[order]
            if n > 1 and not np.all((code[1:] > code[:-1]) | ((code[1:] == code[:-1]) & (oth[1:] > oth[:-1]))):
                return None
            orders[d] = order
        return {"new_relations": list(header["new_relations"]),
                "removed_relations": list(header["removed_relations"])}, out, orders
    except (KeyError, TypeError, ValueError):
        return None


def _data_ok(header: dict, arrays) -> bool:
    """The data checksum holds (a view file decides which facts a caller sees: every byte is checked,
    ~1 ms per MB, where the graph file's open checks only its structure)."""
    import zlib

    import numpy as np
    crc = 0
    try:
        for name in sorted(header["arrays"]):
            crc = zlib.crc32(arrays[name].view(np.uint8), crc)
    except (KeyError, TypeError, ValueError):
        return False
    return crc == header.get("data_crc")


_NAMES = ("new_sym_off", "new_sym_blob", "new_sym_ins", "removed_syms", "e_s", "e_r", "e_o", "e_conf", "e_inbase",
          "out_order", "in_order")


def save_view(store_path: str, fingerprint: str, stamp: Stamp, base: GraphArrays, header: dict | None,
              arrays: dict | None, orders: dict | None = None, mask=None) -> bool:
    """Write the differences of a view (``header`` None: it hides nothing) with the entries' order per
    direction (``Overlay.orders``) and the view's mask over the units (``mask``: a bool per unit, kept
    packed, so a later state's view of any caller may be derived from it: store/viewderive.py); False
    when the file cannot be written (the caller keeps them in memory)."""
    import numpy as np
    head = {"format": 1, **_key(fingerprint, stamp, base)}
    if header is None:
        head["same"], arrays = True, {"none": np.zeros(0, dtype=np.uint8)}
    else:
        arrays = {**arrays, "out_order": orders["out"], "in_order": orders["in"]}
    if mask is not None:
        arrays["mask"] = np.packbits(np.asarray(mask, dtype=bool))
        head["units"] = len(mask)
    if header is not None:
        head.update(same=False, new_relations=list(header["new_relations"]),
                    removed_relations=[int(e) for e in header["removed_relations"]])
    try:
        write_container(view_path(store_path, fingerprint), VIEW_MAGIC, head, dict(arrays))
    except OSError:
        return False
    return True


# -- the access table ------------------------------------------------------------------------------
def load_access(store_path: str, stamp: Stamp, read_rows, read_changes=None):
    """The :class:`~thinkingdb.store.access.AccessTable` of the store at ``stamp``: mapped from
    ``kb.sqlite.access`` when that file was written at ``stamp``; else, when it was written at an
    earlier state and ``read_changes(that stamp)`` gives ``(changed unit ids, their rows now)`` (the
    change log: :func:`~thinkingdb.store.changelog.chain`; None for a gap), that table with those units
    replaced (:meth:`~thinkingdb.store.access.AccessTable.patched`); else made from ``read_rows()``
    (rows of :func:`~thinkingdb.store.stateread.read_access`). A table not read from a current file is
    written there again (best effort), and the temporary files dead writers left beside the store
    removed (:func:`~thinkingdb.store.storefiles.remove_abandoned`)."""
    from .access import AccessTable
    want = [stamp.generation, stamp.token, stamp.max_fact]
    old = _read_access_file(store_path)
    table = None
    if old is not None:
        at, old_table = old
        if at == want:
            return old_table
        if read_changes is not None and isinstance(at, list) and len(at) == 3:
            try:
                got = read_changes(Stamp(*at))
            except (TypeError, ValueError):
                got = None
            if got is not None:
                try:
                    table = old_table.patched(*got)
                except (ValueError, UnicodeDecodeError):
                    table = None
    if table is None:
        table = AccessTable.from_rows(read_rows())
    if len(table):
        import numpy as np
        groups, regions, cols = table.columns()
        if table.id_arrays is not None:       # patched from the file: its ids were never decoded
            off, blob = table.id_arrays
        else:
            enc = [u.encode("utf-8") for u in table.ids]
            off = np.zeros(len(enc) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in enc], out=off[1:])
            blob = np.frombuffer(b"".join(enc), dtype=np.uint8)
        arrays = {"id_off": off, "id_blob": blob,
                  **dict(zip(("group", "region", "from", "to"), cols))}
        try:
            write_container(access_path(store_path), ACCESS_MAGIC,
                            {"format": 1, "access_format": ACCESS_FORMAT, "stamp": want, "units": len(table),
                             "groups": groups, "regions": regions, "dangling": list(table.dangling)}, arrays)
        except OSError:
            pass
        from .storefiles import remove_abandoned   # once per store state: what dead writers left
        remove_abandoned(store_path)
    return table


def _read_access_file(store_path: str):
    """``(stamp as a list, table)`` of the access file when it passes every check, else None."""
    from .access import AccessTable
    got = map_container(access_path(store_path), ACCESS_MAGIC)
    if got is None:
        return None
    header, arrays, _ = got
    try:
        if header.get("access_format") == ACCESS_FORMAT and _data_ok(header, arrays):
            n = int(header["units"])
            cols = [arrays[k] for k in ("group", "region", "from", "to")]
            off, blob = arrays["id_off"], arrays["id_blob"]
            if all(len(c) == n for c in cols) and len(off) == n + 1 and int(off[-1]) == len(blob) and \
                    len(header["groups"]) > int(cols[0].max(initial=-1)) and \
                    len(header["regions"]) > int(cols[1].max(initial=-1)) and header["regions"][:1] == [""]:
                dangling = header["dangling"]
                if not all(isinstance(u, str) for u in dangling):
                    return None
                return header.get("stamp"), AccessTable.from_arrays((off, blob), n, header["groups"], header["regions"],
                                                                    *cols, dangling=dangling)
    except (KeyError, TypeError, ValueError, UnicodeDecodeError):
        pass
    return None
