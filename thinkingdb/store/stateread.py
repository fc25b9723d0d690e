"""What a knowledge base reads about its units on first use, not when it opens (issue 20).

A question on a store with units needs little of them: the access columns of every unit (to know
which units its caller may see), and, for a caller who may not see some units, the facts only those
units assert. Reading every unit's text and every provenance row up front (the eager
:class:`~thinkingdb.store.access.FactAccess`) cost ~30 s on a store of 100,000 units and 1,000,000
facts before a question that then took milliseconds. Here each part is read when it is first used:

* :class:`StoreUnits` — the units, a sequence read whole on first iteration (the lexical lanes need
  their text; a question never does); its length is known at once;
* :func:`read_access` — the access columns only (id, acl, region, validity dates), one indexed pass;
* :class:`LazyFactAccess` — who asserted what, one fact or one unit at a time (indexed reads), with the
  eager class's interface (``unit_facts``, ``fact_units``, ``public``: mappings with ``get``); iterating
  one reads everything, as the eager class does.

Every read goes through a :class:`StateReader`: inside one read transaction it first checks that the
store is still at the stamp the knowledge base's state was read at (:func:`~thinkingdb.store.graphfile.store_stamp`:
generation, write token, largest fact id), so a lazy part can never mix another write's units or
provenance into an older state; when it is not, :class:`StaleRead` is raised and the caller reads the
state again (``KnowledgeBase.view`` and ``search`` do so). A pinned snapshot (serve) never sees it.
"""

from __future__ import annotations

from ..errors import StoreError
from ..model import Triple

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, TypeVar

    T = TypeVar("T")

__all__ = ["StaleRead", "StateReader", "StoreUnits", "LazyFactAccess", "LazyMapping", "read_access",
           "read_changed_access", "read_changed_topics"]


class StaleRead(StoreError):
    """The store was written after the state being completed was read: read the state again."""


class StateReader:
    """Reads of one store state: ``read(fn)`` runs ``fn(conn)`` in a read transaction at ``stamp``.

    ``stamp`` None: the connection is pinned at the state (a serve snapshot), nothing to check.
    """

    def __init__(self, store, stamp) -> None:
        self.store = store
        self.stamp = stamp

    def read(self, fn: Callable[[Any], T]) -> T:
        store = self.store
        with store.reading():
            if self.stamp is not None:
                from .graphfile import store_stamp
                if store_stamp(store) != self.stamp:
                    raise StaleRead(f"{store.path}: the store was written while this call read it; ask again")
            return fn(store.conn)


class StoreUnits:
    """The units of one store state in id order, read whole on first use (``len`` and truth are known
    without reading them).

    >>> units = StoreUnits(None, 0)
    >>> len(units), bool(units), list(units)
    (0, False, [])
    """

    def __init__(self, reader: StateReader | None, count: int) -> None:
        self._reader = reader
        self._count = count
        self._list: list | None = None if count else []

    @property
    def loaded(self) -> bool:
        return self._list is not None

    def _all(self) -> list:
        if self._list is None:
            got = self._reader.read(lambda conn: list(self._reader.store.units()))
            self._list = got
        return self._list

    def __len__(self) -> int:
        return self._count if self._list is None else len(self._list)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator:
        return iter(self._all())

    def __getitem__(self, i):
        return self._all()[i]


def read_access(conn, ids: list[str] | None = None) -> list[tuple[str, tuple[str, ...], str, str, str]]:
    """``(id, acl, region, effective_from, effective_to)`` of every unit (or of those of ``ids`` that
    exist), in id order (the order of ``Store.units``): what :class:`~thinkingdb.store.access.AccessTable`
    needs, without the units' text. Read whole (no ``ids``), an
    :class:`~thinkingdb.store.access.AccessRows` whose ``dangling`` are the unit ids provenance
    records name and no unit holds (one pass over the provenance index: ~0.15 s at 1M records)."""
    import json   # (a store with units only: a question on one without does not load json here)
    acls: dict[str | None, tuple[str, ...]] = {}
    out = []
    sql, args = "SELECT id, acl, region, effective_from, effective_to FROM units ORDER BY id", ()
    if ids is not None:
        sql, args = ("SELECT id, acl, region, effective_from, effective_to FROM units WHERE id IN "
                     "(SELECT value FROM json_each(?)) ORDER BY id"), (json.dumps(ids),)
    for uid, acl, region, start, end in conn.execute(sql, args):
        tags = acls.get(acl)
        if tags is None:
            tags = acls[acl] = tuple(json.loads(acl or "[]"))
        out.append((uid, tags, region or "", start or "", end or ""))
    if ids is not None:
        return out
    from .access import AccessRows
    rows = AccessRows(out)
    held = {r[0] for r in out}
    rows.dangling = tuple(u for (u,) in conn.execute(
        "SELECT DISTINCT unit_id FROM provenance WHERE unit_id IS NOT NULL ORDER BY unit_id") if u not in held)
    return rows


def read_changed_access(conn, old, new) -> tuple[list[str], list[tuple], list[str]] | None:
    """``(ids, rows, named)``: the units whose rows the writes from store state ``old`` to ``new``
    changed, the :func:`read_access` rows of those that exist at ``new`` (``conn`` sees ``new``), and
    the dangling ids the writes may have made — among those units and the units of the provenance
    records of the triples they touched, those some record names and no unit holds; None when the
    change log does not cover those writes (:func:`~thinkingdb.store.changelog.chain`)."""
    import json
    from .changelog import chain
    got = chain(conn, old, new)
    if got is None:
        return None
    ids = sorted(got.units)
    rows = read_access(conn, ids) if ids else []
    named: list[str] = []
    if ids or got.triples:
        named = [u for (u,) in conn.execute(
            "WITH t(s, r, o) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
            "json_extract(value, '$[2]') FROM json_each(?1)), "
            "c(id) AS (SELECT value FROM json_each(?2) UNION SELECT p.unit_id FROM t JOIN facts f ON f.subject = t.s "
            "  AND f.relation = t.r AND f.object = t.o JOIN provenance p ON p.fact = f.id WHERE p.unit_id IS NOT NULL) "
            "SELECT c.id FROM c WHERE c.id NOT IN (SELECT id FROM units) AND "
            "EXISTS (SELECT 1 FROM provenance p WHERE p.unit_id = c.id) ORDER BY c.id",
            (json.dumps(sorted(got.triples)), json.dumps(ids)))]
    return ids, rows, named


def read_changed_topics(conn, old, new) -> tuple[list[str], list[tuple]] | None:
    """``(ids, rows)``: the units whose rows the writes from ``old`` to ``new`` changed, and the
    ``(id, topic)`` of those that exist at ``new``; None for a gap in the change log."""
    import json
    from .changelog import chain
    got = chain(conn, old, new)
    if got is None:
        return None
    ids = sorted(got.units)
    rows = conn.execute("SELECT id, topic FROM units WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                        (json.dumps(ids),)).fetchall() if ids else []
    return ids, rows


_MISSING = object()


class LazyMapping:
    """A read-only mapping filled one key at a time by ``fetch(key)`` (None: no such key); iterating
    it, or asking its size, reads everything through ``load(True)`` (``load(False)``: the whole
    mapping if it was read already, else None).

    >>> m = LazyMapping(lambda k: k * 2 if k < 3 else None, lambda need: {0: 0, 1: 2, 2: 4} if need else None)
    >>> m.get(2), m.get(7), 7 in m, sorted(m)
    (4, None, False, [0, 1, 2])
    """

    def __init__(self, fetch: Callable[[Any], Any], load: Callable[[bool], dict | None]) -> None:
        self._fetch, self._load = fetch, load
        self._memo: dict = {}

    def get(self, key, default=None):
        full = self._load(False)
        if full is not None:
            return full.get(key, default)
        got = self._memo.get(key, _MISSING)
        if got is _MISSING:
            got = self._memo[key] = self._fetch(key)
        return default if got is None else got

    def __getitem__(self, key):
        got = self.get(key, _MISSING)
        if got is _MISSING:
            raise KeyError(key)
        return got

    def __contains__(self, key) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def keys(self):
        return self._load(True).keys()

    def items(self):
        return self._load(True).items()

    def values(self):
        return self._load(True).values()

    def __iter__(self):
        return iter(self._load(True))

    def __len__(self) -> int:
        return len(self._load(True))


class LazyFactAccess:
    """Which units assert each fact, with what confidence, and the best confidence from outside
    units — :class:`~thinkingdb.store.access.FactAccess`'s answers, read per fact and per unit."""

    lazy = True

    def __init__(self, reader: StateReader) -> None:
        self._reader = reader
        self._rows: dict[Triple, list] = {}
        self._full = None
        self.unit_facts = LazyMapping(self._unit_facts, lambda need: self._everything(need, 0))
        self.fact_units = LazyMapping(self._fact_units, lambda need: self._everything(need, 1))
        self.public = LazyMapping(self._public, lambda need: self._everything(need, 2))

    def _everything(self, need: bool, part: int):
        if self._full is None:
            if not need:
                return None
            from .access import FactAccess
            fa = self._reader.read(lambda conn: FactAccess(self._reader.store))
            self._full = (fa.unit_facts, fa.fact_units, fa.public)
        return self._full[part]

    def _triple_rows(self, t: Triple) -> list:
        rows = self._rows.get(t)
        if rows is None:
            rows = self._rows[t] = self._reader.read(lambda conn: conn.execute(
                "SELECT p.unit_id, p.confidence FROM facts f JOIN provenance p ON p.fact = f.id "
                "WHERE f.subject = ? AND f.relation = ? AND f.object = ? ORDER BY p.rowid",
                (t.subject, t.relation, t.object)).fetchall())
        return rows

    def _fact_units(self, t) -> dict[str, float] | None:
        if not isinstance(t, Triple):
            return None
        by_unit: dict[str, float] = {}
        for uid, c in self._triple_rows(t):
            if uid is not None:
                by_unit[uid] = max(c, by_unit.get(uid, 0.0))
        return by_unit or None

    def _public(self, t) -> float | None:
        if not isinstance(t, Triple):
            return None
        rows = self._triple_rows(t)
        if not any(uid is not None for uid, _ in rows):   # only facts some unit asserts are listed
            return None
        outside = [c for uid, c in rows if uid is None]
        return max(outside) if outside else None

    def _unit_facts(self, uid) -> list[tuple[Triple, float]] | None:
        if not isinstance(uid, str):
            return None
        seen: dict[Triple, float] = {}
        for s, r, o, c in self._reader.read(lambda conn: conn.execute(
                "SELECT f.subject, f.relation, f.object, p.confidence FROM provenance p JOIN facts f "
                "ON f.id = p.fact WHERE p.unit_id = ? ORDER BY p.rowid", (uid,)).fetchall()):
            seen.setdefault(Triple(s, r, o), c)
        return list(seen.items()) or None

    def visible_confidence(self, t: Triple, visible) -> float | None:
        """Max confidence over the assertions ``visible(unit_id)`` accepts and those outside units."""
        best = self.public.get(t)
        for uid, c in self.fact_units.get(t, {}).items():
            if visible(uid) and (best is None or c > best):
                best = c
        return best
