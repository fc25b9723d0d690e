"""The access columns of every unit as arrays (:class:`AccessTable`), and a caller's view of them
(:class:`View`): the vectorized form of the rule of :mod:`thinkingdb.store.access` (which re-exports
these names), so a caller's view costs a few vector operations whatever the number of units.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from typing import Callable, Iterable, Sequence

    import numpy as np

from ..values import Value

__all__ = ["AccessTable", "AccessRows", "View"]


def _norm(tag: str) -> str:
    return tag.strip().casefold()


_FAR_PAST, _FAR_FUTURE = 0, 99_999_999


def _day(text: str, default: int) -> int:
    return int(text.replace("-", "")) if text else default


class View(Value):
    """The units one caller may see on one date: a boolean mask over :attr:`AccessTable.ids`.

    ``fingerprint`` identifies the visible set (equal sets, equal fingerprints), so indexes built
    for a view can be cached and shared by every caller who sees the same units.
    """

    _fields = _compare = ("mask", "fingerprint", "count", "everything")

    def __init__(self, mask: np.ndarray, fingerprint: str, count: int, everything: bool) -> None:
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "fingerprint", fingerprint)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "everything", everything)

    def visible_ids(self, ids: Sequence[str]) -> list[str]:
        import numpy as np
        return [ids[i] for i in np.flatnonzero(self.mask).tolist()]


class AccessRows(list):
    """The rows of :meth:`AccessTable.from_rows` and the ``dangling`` unit ids: named by provenance
    records, held by no unit (what :func:`~thinkingdb.store.stateread.read_access` returns)."""

    dangling: tuple = ()


def _fingerprint(packed_mask: bytes, n: int) -> str:
    import hashlib   # (its OpenSSL bindings cost a cold question ~2 ms; a store without units never needs them)
    digest = hashlib.blake2b(packed_mask, digest_size=12)
    digest.update(str(n).encode())
    return digest.hexdigest()


_EMPTY_FINGERPRINT = "14cebf65f2300ed87737d5fc"   # _fingerprint(b"", 0), checked by tests/test_access.py


class AccessTable:
    """The access columns of every unit as numpy arrays, so a caller's view costs a few vector ops.

    >>> from thinkingdb.store.sqlite import Unit
    >>> from thinkingdb.store.access import Caller, parse_date
    >>> t = AccessTable([Unit("a"), Unit("b", acl=("x",)), Unit("c", region="EU")])
    >>> t.view(Caller(tags=("x",)), parse_date("2026-01-01")).visible_ids(t.ids)
    ['a', 'b']
    """

    dangling: tuple = ()
    """Sorted unit ids that provenance records name and the table does not hold (module docstring:
    not visible to anyone). While any exists no view is ``everything``: a caller who sees every unit
    still must not see the facts only they assert. Exact when the table is read whole
    (:func:`~thinkingdb.store.stateread.read_access`); after :meth:`patched` it may keep an id whose
    records were all deleted since (that only costs such a caller a view file, never an answer). A table
    made from units alone (``AccessTable(units)``) knows none."""

    def __init__(self, units: Iterable) -> None:
        self._build((u.id, u.acl, u.region, u.effective_from, u.effective_to) for u in units)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple]) -> "AccessTable":
        """The table of ``(id, acl, region, effective_from, effective_to)`` rows in id order (what
        :func:`~thinkingdb.store.stateread.read_access` reads: the access columns, not the units' text).

        >>> from thinkingdb.store.access import Caller, parse_date
        >>> AccessTable.from_rows([("a", (), "", "", ""), ("b", ("x",), "", "", "")]).view(
        ...     Caller(), parse_date("2026-01-01")).visible_ids(["a", "b"])
        ['a']
        """
        t = cls.__new__(cls)
        t._build(rows)
        t.dangling = tuple(getattr(rows, "dangling", ()))
        return t

    def _build(self, rows: Iterable[tuple]) -> None:
        ids: list[str] = []
        combo_of: dict[tuple, int] = {}      # units share few (acl, region, dates) combinations
        combos: list[int] = []
        for uid, tags, region, start, end in rows:
            ids.append(uid)
            key = (tags, region, start, end)
            c = combo_of.get(key)
            if c is None:
                c = combo_of[key] = len(combo_of)
            combos.append(c)
        group_of: dict[frozenset[str], int] = {}
        region_of: dict[str, int] = {"": 0}
        table = []
        for tags, region, start, end in combo_of:
            acl = frozenset(_norm(t) for t in tags if _norm(t))
            table.append((group_of.setdefault(acl, len(group_of)), region_of.setdefault(_norm(region), len(region_of)),
                          _day(start, _FAR_PAST), _day(end, _FAR_FUTURE)))
        self._ids: list[str] | None = ids
        self.id_arrays: tuple | None = None      # (offsets, utf-8 blob) of the ids, when read from a file
        self._load_ids = None
        self._n = len(ids)
        self._row: dict[str, int] | None = None
        self._groups = list(group_of)          # acl tag set per group id
        self._region_of = region_of
        # per unit: its combination's group, region, from and to (numpy arrays on the first view)
        self._columns = tuple([table[c][k] for c in combos] for k in range(4))

    @classmethod
    def from_arrays(cls, ids: Callable[[], list[str]] | tuple, n: int, groups: list, regions: list[str],
                    group: np.ndarray, region: np.ndarray, start: np.ndarray, end: np.ndarray,
                    dangling: Iterable[str] = ()) -> "AccessTable":
        """The table from its columns as arrays (:meth:`columns`; read from a file by
        :func:`~thinkingdb.store.viewfile.load_access`); ``ids``: ``(offsets, utf-8 blob)`` of the unit
        ids, sorted, decoded when first needed (or a function giving them)."""
        t = cls.__new__(cls)
        t._ids, t._n, t._row = None, n, None
        t.id_arrays = ids if isinstance(ids, tuple) else None
        t._load_ids = ids if callable(ids) else None
        t._groups = [frozenset(g) for g in groups]
        t._region_of = {name: i for i, name in enumerate(regions)}
        t._group, t._region, t._from, t._to = group, region, start, end
        t._columns = None
        t.dangling = tuple(dangling)
        return t

    def _id_bytes(self, i: int) -> bytes:
        off, blob = self.id_arrays
        return blob[int(off[i]):int(off[i + 1])].tobytes()

    def position(self, uid: str) -> int:
        """Where ``uid`` sorts among the unit ids (a binary search: the ids need not be decoded)."""
        import bisect
        if self._ids is not None or self.id_arrays is None:
            return bisect.bisect_left(self.ids, uid)
        return bisect.bisect_left(range(self._n), uid.encode("utf-8", "surrogatepass"), key=self._id_bytes)

    def id_at(self, i: int) -> str:
        """The id of the unit at row ``i`` (decoded alone when the ids are not)."""
        if self._ids is not None or self.id_arrays is None:
            return self.ids[i]
        return self._id_bytes(i).decode("utf-8")

    def find(self, uid: str) -> int:
        """The row of unit ``uid``; -1 when the table has no such unit.

        >>> t = AccessTable.from_rows([("a", (), "", "", ""), ("c", (), "", "", "")])
        >>> t.find("c"), t.find("b")
        (1, -1)
        """
        i = self.position(uid)
        if i >= self._n:
            return -1
        if self._ids is not None or self.id_arrays is None:
            return i if self.ids[i] == uid else -1
        return i if self._id_bytes(i) == uid.encode("utf-8", "surrogatepass") else -1

    def patched(self, changed: Iterable[str], rows: Iterable[tuple], named: Iterable[str] = ()) -> "AccessTable":
        """The table with the units ``changed`` replaced by ``rows`` (the current
        ``(id, acl, region, effective_from, effective_to)`` of those that exist; :meth:`from_rows`'s),
        computed from the columns without reading the other units again. Each unit's columns are
        made as :meth:`from_rows` makes them, so every view's mask is the table read whole's.
        ``named``: ids that provenance records name now and no unit holds, among those the writes could
        have made dangling (:attr:`dangling` gains them and loses the ids ``rows`` holds).

        >>> from thinkingdb.store.access import Caller, parse_date
        >>> t = AccessTable.from_rows([("a", (), "", "", ""), ("b", ("x",), "", "", ""), ("c", (), "EU", "", "")])
        >>> p = t.patched(["a", "b", "bb"], [("b", (), "", "", ""), ("bb", ("y",), "", "", "2020-01-01")])
        >>> p.ids, p.view(Caller(), parse_date("2026-01-01")).visible_ids(p.ids)
        (['b', 'bb', 'c'], ['b'])
        """
        import numpy as np
        self._arrays()
        drop = np.array(sorted({i for u in set(changed) if (i := self.find(u)) >= 0}), dtype=np.int64)
        rows = sorted(rows)
        groups, region_of = list(self._groups), dict(self._region_of)
        group_of = {g: i for i, g in enumerate(groups)}
        cols: list[list[int]] = [[], [], [], []]
        for _, tags, region, start, end in rows:
            acl = frozenset(_norm(t) for t in tags if _norm(t))
            g = group_of.get(acl)
            if g is None:
                g = group_of[acl] = len(groups)
                groups.append(acl)
            for k, v in enumerate((g, region_of.setdefault(_norm(region), len(region_of)),
                                   _day(start, _FAR_PAST), _day(end, _FAR_FUTURE))):
                cols[k].append(v)
        # each new row's place among the rows kept: its place among the old ids less the dropped before it
        at = np.array([(p := self.position(r[0])) - int(np.searchsorted(drop, p)) for r in rows], dtype=np.int64)
        out = [np.insert(np.delete(a, drop), at, np.asarray(c, dtype=a.dtype))
               for a, c in zip((self._group, self._region, self._from, self._to), cols)]
        n = self._n - len(drop) + len(rows)
        held = {r[0] for r in rows}
        dangling = tuple(sorted({u for u in self.dangling if u not in held} | set(named)))
        if self._ids is None and self.id_arrays is not None:      # the ids stay bytes
            off, blob = self.id_arrays
            enc = [r[0].encode("utf-8") for r in rows]
            lengths = np.insert(np.delete(np.diff(off), drop), at, np.array([len(b) for b in enc], dtype=np.int64))
            keep = np.ones(self._n, dtype=bool)
            keep[drop] = False
            kept_bytes = np.repeat(keep, np.diff(off))
            old_part = np.asarray(blob)[kept_bytes]
            new_off = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths, out=new_off[1:])
            # the new ids' bytes go where their rows go: split the kept bytes at the rows they precede
            kept_off = np.zeros(self._n - len(drop) + 1, dtype=np.int64)
            np.cumsum(np.delete(np.diff(off), drop), out=kept_off[1:])
            pieces, last = [], 0
            for pos, b in zip(at.tolist(), enc):
                cut = int(kept_off[pos])
                pieces += [old_part[last:cut], np.frombuffer(b, dtype=np.uint8)]
                last = cut
            pieces.append(old_part[last:])
            ids: tuple | list = (new_off, np.concatenate(pieces).astype(np.uint8))
        else:
            import heapq
            gone = set(drop.tolist())
            ids = list(heapq.merge([u for i, u in enumerate(self.ids) if i not in gone], [r[0] for r in rows]))
        regions = sorted(region_of, key=region_of.__getitem__)
        if isinstance(ids, tuple):
            return AccessTable.from_arrays(ids, n, [sorted(g) for g in groups], regions, *out, dangling=dangling)
        t = AccessTable.__new__(AccessTable)
        t.dangling = dangling
        t._ids, t._n, t._row, t.id_arrays, t._load_ids = ids, n, None, None, None
        t._groups, t._region_of = groups, region_of
        t._group, t._region, t._from, t._to = out
        t._columns = None
        return t

    def columns(self) -> tuple[list, list[str], tuple]:
        """``(acl tag sets as sorted lists, region names by id, (group, region, from, to) arrays)``."""
        self._arrays()
        regions = sorted(self._region_of, key=self._region_of.__getitem__)
        return [sorted(g) for g in self._groups], regions, (self._group, self._region, self._from, self._to)

    @property
    def ids(self) -> list[str]:
        """The unit ids in row (= id) order."""
        if self._ids is None:
            if self._load_ids is None:
                o, text = self.id_arrays[0].tolist(), self.id_arrays[1].tobytes()
                self._ids = [text[o[i]:o[i + 1]].decode("utf-8") for i in range(self._n)]
            else:
                self._ids = self._load_ids()
        return self._ids

    @property
    def row(self) -> dict[str, int]:
        """Unit id -> its row (made on first use: a question whose caller's view is persisted never
        asks which row a unit is)."""
        if self._row is None:
            self._row = {u: i for i, u in enumerate(self.ids)}
        return self._row

    def __len__(self) -> int:
        return self._n

    def _arrays(self) -> None:
        if isinstance(self._columns, tuple):
            import numpy as np
            groups, regions, starts, ends = self._columns
            self._group, self._region = np.array(groups, dtype=np.int32), np.array(regions, dtype=np.int32)
            self._from, self._to = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
            self._columns = None

    def view(self, caller: Caller, on: _dt.date) -> View:
        """The mask of units ``caller`` may see on ``on``."""
        if not self._n:   # no units: nothing to mask (the fingerprint is that of an empty mask)
            return View((), _EMPTY_FINGERPRINT, 0, True)
        import numpy as np
        self._arrays()
        tags = set(caller.tags)
        ok_group = np.array([not g or bool(g & tags) for g in self._groups] or [False], dtype=bool)
        mask = ok_group[self._group]
        region = self._region_of.get(caller.region, -1) if caller.region else -1
        mask &= (self._region == 0) | (self._region == region)
        day = int(on.strftime("%Y%m%d"))
        mask &= (self._from <= day) & (day <= self._to)
        count = int(mask.sum())
        return View(mask, _fingerprint(np.packbits(mask).tobytes(), len(mask)), count,
                    count == self._n and not self.dangling)
