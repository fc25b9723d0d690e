"""Read-only views that let a :class:`~thinkingdb.engine.graph.FactGraph` run on a memory-mapped graph
file (:mod:`thinkingdb.store.graphfile`) without reading it whole.

They behave like the dicts and lists the in-memory graph keeps — ``symbol id -> key``, ``key -> id``,
and per relation ``bound end -> {other end: confidence}`` — so the engine's code is the same either
way; each decodes only what it is asked for and keeps it. A full scan of a relation (``items()``,
iteration) decodes that relation once and swaps a plain dict into the graph in its place.

The symbols of a graph file are stored sorted, so an id is its key's canonical rank and a key is
found by binary search over the UTF-8 bytes (which sort as the strings do). Lookups read the file's
arrays through :func:`column` (memoryviews of a mapped file: no numpy); the methods that work on a
whole relation (:meth:`RelationIndex.edges`, :meth:`RelationIndex.all_ones`) load numpy.

>>> import numpy as np
>>> blob = "abc".encode()
>>> arrays = {"sym_off": np.array([0, 1, 2, 3]), "sym_blob": np.frombuffer(blob, dtype=np.uint8)}
>>> table, index = SymbolTable(arrays, 3), SymbolIndex(arrays, 3)
>>> table[2], index.get("b"), index.get("bb"), index.insertion_point("bb")
('c', 1, None, 2)
"""

from __future__ import annotations

from _bisect import bisect_left   # = bisect's, without loading bisect.py
from _collections_abc import Mapping, Sequence   # = collections.abc (without the collections package)

from ..errors import StoreError

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterator
    import numpy as np

__all__ = ["SymbolTable", "SymbolIndex", "RelationIndex", "column"]

_MISSING = object()
FULL_AFTER = 2048   # rows of one relation read one by one through a delta before it is merged whole


def column(arrays: Mapping, name: str, default=None):
    """Array ``name`` of ``arrays`` for element reads: the memoryview of a mapped file
    (:meth:`thinkingdb.store.columns.MappedArrays.view`), else the array itself; ``default`` if absent."""
    if name not in arrays:
        return default
    view = getattr(arrays, "view", None)
    return arrays[name] if view is None else view(name)


class SymbolTable(Sequence):
    """``id -> key`` over the file's symbol blob; keys decoded on first use and kept."""

    __slots__ = ("_off", "_blob", "_n", "_cache", "_all")

    def __init__(self, arrays: Mapping[str, np.ndarray], n: int) -> None:
        self._off, self._blob, self._n = column(arrays, "sym_off"), column(arrays, "sym_blob"), n
        self._cache: dict[int, str] = {}
        self._all: list[str] | None = None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, sid):
        if self._all is not None:
            return self._all[sid]
        if isinstance(sid, slice):
            return self.all()[sid]
        key = self._cache.get(sid)
        if key is None:
            if sid < 0:
                sid += self._n
            if not 0 <= sid < self._n:
                raise IndexError(f"symbol id {sid} out of range")
            key = self._cache[sid] = self.raw(sid).decode("utf-8")
        return key

    def raw(self, sid: int) -> bytes:
        return self._blob[int(self._off[sid]):int(self._off[sid + 1])].tobytes()

    def all(self) -> list[str]:
        """Every key in id order (decodes the whole blob once)."""
        if self._all is None:
            off = self._off.tolist()
            text = self._blob.tobytes()
            self._all = [text[off[i]:off[i + 1]].decode("utf-8") for i in range(self._n)]
        return self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())


class SymbolIndex(Mapping):
    """``key -> id`` by binary search over the sorted keys; found ids kept."""

    __slots__ = ("_table", "_cache")

    def __init__(self, arrays: Mapping[str, np.ndarray], n: int, table: SymbolTable | None = None) -> None:
        self._table = table if table is not None else SymbolTable(arrays, n)
        self._cache: dict[str, int | None] = {}

    def insertion_point(self, key: str) -> int:
        """The number of symbols whose key sorts before ``key``."""
        want = key.encode("utf-8", "surrogatepass")
        raw, lo, hi = self._table.raw, 0, len(self._table)
        while lo < hi:
            mid = (lo + hi) // 2
            if raw(mid) < want:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def get(self, key, default=None):
        sid = self._cache.get(key, _MISSING)
        if sid is _MISSING:
            sid = None
            if isinstance(key, str):
                i = self.insertion_point(key)
                if i < len(self._table) and self._table[i] == key:
                    sid = i
            self._cache[key] = sid
        return default if sid is None else sid

    def __getitem__(self, key) -> int:
        sid = self.get(key)
        if sid is None:
            raise KeyError(key)
        return sid

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)


class RelationIndex(Mapping):
    """One relation in one direction: ``bound end -> {other end: confidence}``, rows decoded on first
    use and kept. After a full scan the plain dict replaces this view in ``owner[slot]``."""

    __slots__ = ("_keys", "_ptr", "_vals", "_conf", "_rows", "_full", "_n_sym", "_path", "_owner", "_slot")

    def __init__(self, arrays: Mapping[str, np.ndarray], direction: str, rid: int, n_sym: int, path: str,
                 owner: list, slot: int) -> None:
        rel = column(arrays, f"{direction}_rel")
        lo, hi = int(rel[rid]), int(rel[rid + 1])
        self._keys = column(arrays, f"{direction}_keys")[lo:hi]
        self._ptr = column(arrays, f"{direction}_ptr")[lo:hi + 1]
        self._vals = column(arrays, f"{direction}_vals")
        self._conf = column(arrays, f"{direction}_conf")
        self._rows: dict[int, dict[int, float] | None] = {}
        self._full = False
        self._n_sym, self._path, self._owner, self._slot = n_sym, path, owner, slot

    def _corrupt(self, what: str) -> StoreError:
        return StoreError(f"{self._path}: graph file corrupt ({what}); delete it to have it rebuilt")

    def _load(self, key: int) -> dict[int, float] | None:
        row = None
        if isinstance(key, int) and 0 <= key < self._n_sym:
            keys = self._keys
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                lo, hi = int(self._ptr[i]), int(self._ptr[i + 1])
                if not 0 <= lo < hi <= len(self._vals):
                    raise self._corrupt("row pointers")
                vals = self._vals[lo:hi].tolist()
                if vals[0] < 0 or max(vals) >= self._n_sym:
                    raise self._corrupt("symbol id")
                row = dict.fromkeys(vals, 1.0) if self._conf is None else dict(zip(vals, self._conf[lo:hi].tolist()))
        self._rows[key] = row
        return row

    def get(self, key, default=None):
        row = self._rows.get(key, _MISSING)
        if row is _MISSING:
            if self._full:
                return default
            row = self._load(key)
        return default if row is None else row

    def __getitem__(self, key) -> dict[int, float]:
        row = self.get(key)
        if row is None:
            raise KeyError(key)
        return row

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self._keys)

    def __bool__(self) -> bool:
        return len(self._keys) > 0

    def full(self) -> dict[int, dict[int, float]]:
        """Every row, decoded once; the plain dict then stands in for this view in the graph."""
        if not self._full:
            keys = self._keys.tolist()
            ptr = self._ptr.tolist()
            lo, hi = (ptr[0], ptr[-1]) if ptr else (0, 0)
            vals = self._vals[lo:hi].tolist()
            if vals and (min(vals) < 0 or max(vals) >= self._n_sym):
                raise self._corrupt("symbol id")
            conf = None if self._conf is None else self._conf[lo:hi].tolist()
            rows: dict[int, dict[int, float]] = {}
            for i, k in enumerate(keys):
                a, b = ptr[i] - lo, ptr[i + 1] - lo
                rows[k] = dict.fromkeys(vals[a:b], 1.0) if conf is None else dict(zip(vals[a:b], conf[a:b]))
            self._rows, self._full = rows, True
            if self._owner[self._slot] is self:
                self._owner[self._slot] = rows
        return self._rows

    def __iter__(self) -> Iterator[int]:
        return iter(self.full())

    def iter_keys(self, chunk: int = 4096) -> Iterator[int]:
        """The bound ends in ascending order, read from the file a chunk at a time (no row decoded)."""
        if self._full:
            yield from self._rows
            return
        for i in range(0, len(self._keys), chunk):
            yield from self._keys[i:i + chunk].tolist()

    def keys(self):
        return self.full().keys()

    def items(self):
        return self.full().items()

    def values(self):
        return self.full().values()

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This relation's ``(keys, ptr, vals)`` as numpy arrays over the file's bytes (no copy): the
        bound ends, ``ptr[i]:ptr[i + 1]`` delimiting key ``i``'s run of ``vals`` (indexes into the
        whole ``vals``, which holds every relation)."""
        import numpy as np
        return np.asarray(self._keys), np.asarray(self._ptr), np.asarray(self._vals)

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ``(bound end, other end, confidence)`` as arrays read straight from the file, rows not
        decoded into dicts (the columnar engine loads relations this way)."""
        import numpy as np
        if not len(self._keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
        ptr = np.asarray(self._ptr, dtype=np.int64)
        lo, hi = int(ptr[0]), int(ptr[-1])
        if not 0 <= lo <= hi <= len(self._vals) or np.any(np.diff(ptr) <= 0):
            raise self._corrupt("row pointers")
        vals = np.asarray(self._vals[lo:hi], dtype=np.int64)
        if vals.min() < 0 or vals.max() >= self._n_sym:
            raise self._corrupt("symbol id")
        lead = np.repeat(np.asarray(self._keys, dtype=np.int64), np.diff(ptr))
        conf = np.ones(hi - lo) if self._conf is None else np.asarray(self._conf[lo:hi], dtype=np.float64)
        return lead, vals, conf

    def all_ones(self) -> bool:
        """Is every confidence of this relation 1 (without decoding a row when the file says so)?"""
        if self._conf is None:
            return True
        import numpy as np
        lo, hi = int(self._ptr[0]), int(self._ptr[-1])
        return bool(np.all(np.asarray(self._conf[lo:hi]) == 1.0))


# -- a graph file read together with its delta (thinkingdb.store.overlay.Overlay) --------------------
class OverlaySymbolTable(SymbolTable):
    """``combined id -> key`` over a graph file and its delta."""

    __slots__ = ("_ov",)

    def __init__(self, overlay) -> None:
        self._ov, self._n = overlay, overlay.n
        self._cache, self._all = {}, None

    def raw(self, sid: int) -> bytes:
        return self._ov.ext_key(self._ov.to_ext(sid)).encode("utf-8", "surrogatepass")

    def all(self) -> list[str]:
        if self._all is None:
            self._all = self._ov.all_keys()
        return self._all


class OverlaySymbolIndex(SymbolIndex):
    """``key -> combined id`` over a graph file and its delta."""

    __slots__ = ("_ov",)

    def __init__(self, overlay, table: OverlaySymbolTable) -> None:
        self._ov, self._table, self._cache = overlay, table, {}

    def insertion_point(self, key: str) -> int:
        return self._ov.insertion_point(key)

    def get(self, key, default=None):
        sid = self._cache.get(key, _MISSING)
        if sid is _MISSING:
            sid = None
            if isinstance(key, str):
                e = self._ov.ext_of_key(key)
                sid = None if e is None else int(self._ov.to_comb([e])[0])
            self._cache[key] = sid
        return default if sid is None else sid


class OverlayRelationIndex(RelationIndex):
    """One relation in one direction of a graph file read with its delta (rows merged when read)."""

    __slots__ = ("_ov", "_d", "_e", "_len", "_loads")

    def __init__(self, overlay, direction: str, ext_rid: int, owner: list, slot: int) -> None:
        self._ov, self._d, self._e = overlay, direction, ext_rid
        self._rows, self._full, self._len, self._loads = {}, False, None, 0
        self._n_sym, self._path, self._owner, self._slot = overlay.n, overlay.base.path, owner, slot

    def _load(self, key: int) -> dict[int, float] | None:
        # A merged row costs a dozen small numpy calls (~90 us); once a question has read many rows of
        # this relation, the whole relation is merged in one pass (whole-array work) and read as dicts.
        self._loads += 1
        if self._loads > max(FULL_AFTER, len(self) // 32):
            return self.full().get(key)
        row = None
        if isinstance(key, int) and 0 <= key < self._n_sym:
            vals, conf = self._ov.row(self._d, self._e, self._ov.to_ext(key))
            if len(vals):
                row = dict(zip(vals.tolist(), conf.tolist()))
        self._rows[key] = row
        return row

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self._rows) if self._full else self._ov.n_keys(self._d, self._e)
        return self._len

    def __bool__(self) -> bool:
        return len(self) > 0

    def full(self) -> dict[int, dict[int, float]]:
        if not self._full:
            rows: dict[int, dict[int, float]] = {}
            for k, vals, conf in self._ov.iter_rows(self._d, self._e):
                rows[k] = dict(zip(vals.tolist(), conf.tolist()))
            self._rows, self._full = rows, True
            if self._owner[self._slot] is self:
                self._owner[self._slot] = rows
        return self._rows

    def iter_keys(self, chunk: int = 4096) -> Iterator[int]:
        if self._full:
            yield from self._rows
            return
        keys = self._ov.keys(self._d, self._e)
        for i in range(0, len(keys), chunk):
            yield from keys[i:i + chunk].tolist()

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._ov.edges(self._d, self._e)

    def all_ones(self) -> bool:
        return self._ov.all_ones(self._d, self._e)
