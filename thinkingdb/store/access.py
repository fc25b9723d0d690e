"""Access control and validity: who may see which units and facts, on which date (SPEC §7).

The rules, applied before any lane or the closure sees anything:

* a **unit** is visible to a caller on a date iff

  - its ``acl`` tags intersect the caller's tags — a unit with **no acl tags is public**;
  - its ``region`` is empty (every region) or equals the caller's region;
  - ``effective_from <= date <= effective_to`` (both inclusive; an empty bound is open);

  tags and regions are compared after trimming and case-folding (``Support:EU`` = ``support:eu``);
* a **fact** is visible iff at least one of its provenance records is visible: a visible unit, or a
  source outside any unit (a ``.tdb`` or ``.tsv`` file) — **facts asserted outside units are public**.
  A fact stated only by hidden units is hidden, even if a visible unit could be asked about it.
* a provenance record naming a unit the store does not hold (a *dangling* unit id: left by the
  low-level ``Store`` API — ``add_facts`` with an id no unit has, a unit row deleted under its facts;
  ingest never makes one) is **not visible to anyone**: an unknown unit is not a visible one, so
  access fails closed. A fact whose only records are dangling is hidden from every caller, even one
  who sees every unit; with a visible unit's record or a record outside units too it is visible at
  the best of *those*; once a unit of that id is ingested, the record follows that unit's visibility.

A caller that names nothing (``Caller()``) sees public units only. There is no "see everything" caller.

>>> luna = Caller(tags=("support:eu",), region="EU")
>>> from thinkingdb.store.sqlite import Unit
>>> rule = Unit("rpl-14", acl=("support:eu",), region="EU", effective_from="2026-04-01")
>>> old = Unit("rpl-14-v1", acl=("support:eu",), region="EU", effective_to="2026-03-31")
>>> vip = Unit("vip-rpl-1", acl=("merchant:vip-ops",), region="EU")
>>> [u.id for u in (rule, old, vip) if unit_visible(u, luna, parse_date("2026-05-27"))]
['rpl-14']
"""

from __future__ import annotations

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # (datetime is imported where a date is made: a store without units needs none, ~1.5 ms cold)
    import datetime as _dt
    from typing import Any, Callable, Iterable

from ..errors import ValidationError
from ..model import Triple
from ..values import Value
from .accesstable import _EMPTY_FINGERPRINT, AccessRows, AccessTable, View, _fingerprint, _norm  # noqa: F401 (re-exported)

__all__ = ["Caller", "parse_date", "unit_visible", "AccessTable", "AccessRows", "View", "CallerView", "FactAccess",
           "public_view"]


class Caller(Value):
    """Who is searching: acl tags and a region (``""``: no region, sees only region-free units).

    >>> Caller(tags=["Support:EU ", "support:eu"]).tags
    ('support:eu',)
    >>> Caller(tags="support:eu")
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: caller tags must be a list of strings, not one string
    """

    _fields = _compare = ("tags", "region")

    def __init__(self, tags: Iterable[str] = (), region: str = "") -> None:
        if isinstance(tags, str):
            raise ValidationError("caller tags must be a list of strings, not one string")
        try:
            normal = tuple(sorted({_norm(t) for t in tags if _norm(t)}))
        except (TypeError, AttributeError):
            raise ValidationError(f"caller tags must be strings, got {tags!r}") from None
        if not isinstance(region, str):
            raise ValidationError(f"caller region must be a string, got {region!r}")
        object.__setattr__(self, "tags", normal)
        object.__setattr__(self, "region", _norm(region))

    def to_json(self) -> dict:
        return {"tags": list(self.tags), "region": self.region}

    @classmethod
    def from_json(cls, data: object) -> "Caller":
        """A caller from ``{"tags": [...], "region": "..."}`` (``acl``/``acl_tags`` accepted for tags).

        >>> Caller.from_json({"acl_tags": ["a"], "region": "EU"})
        Caller(tags=('a',), region='eu')
        """
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValidationError(f"a caller must be an object with tags and region, got {data!r}")
        unknown = set(data) - {"tags", "acl", "acl_tags", "region", "id", "name"}
        if unknown:
            raise ValidationError(f"unknown caller field(s): {', '.join(sorted(unknown))}")
        tags = data.get("tags", data.get("acl", data.get("acl_tags", [])))
        if tags is None:
            tags = []
        if not isinstance(tags, (list, tuple)):
            raise ValidationError("caller tags must be a list of strings")
        return cls(tags=tuple(tags), region=data.get("region") or "")


def parse_date(value: str | _dt.date | None) -> _dt.date:
    """An as-of date from ``YYYY-MM-DD`` (``None``: today).

    >>> parse_date("2026-05-27")
    datetime.date(2026, 5, 27)
    >>> parse_date("27/05/2026")
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: as-of date must be YYYY-MM-DD, got '27/05/2026'
    """
    import datetime as _dt
    if value is None:
        return _dt.date.today()
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise ValidationError(f"as-of date must be YYYY-MM-DD, got {value!r}") from None


def unit_visible(unit, caller: Caller, on: _dt.date) -> bool:
    """The visibility rule for one unit (the reference the vectorized :class:`AccessTable` follows)."""
    acl = {_norm(t) for t in unit.acl if _norm(t)}
    if acl and not acl & set(caller.tags):
        return False
    region = _norm(unit.region)
    if region and region != caller.region:
        return False
    day = on.isoformat()
    if unit.effective_from and day < unit.effective_from:
        return False
    if unit.effective_to and day > unit.effective_to:
        return False
    return True


class CallerView(Value):
    """What one caller may use on one date: the visible units, fact graph and rules (docs/access.md)."""

    _fields = ("view", "graph", "rules", "visible", "_labels")
    _compare = ("view", "graph", "rules", "visible")
    _hidden = ("_labels",)

    def __init__(self, view: View, graph: Any, rules: tuple, visible: Callable[[str], bool],
                 _labels: Callable[[], dict]) -> None:
        object.__setattr__(self, "view", view)
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "visible", visible)
        object.__setattr__(self, "_labels", _labels)

    @property
    def labels(self) -> dict[str, str]:
        """Display labels of the symbols of the visible graph."""
        return self._labels()

    def fact_rows(self) -> list[tuple[str, str, str, float]]:
        """The visible asserted facts as sorted ``(subject, relation, object, confidence)`` rows."""
        return sorted((f.subject, f.relation, f.object, f.confidence) for f in self.graph.facts())


def visible_labels(all_labels: dict[str, str], graph) -> dict[str, str]:
    """The labels of ``all_labels`` whose symbols ``graph`` knows."""
    known = graph.known_symbols(all_labels)
    return {k: v for k, v in all_labels.items() if k in known}


def public_view(state, store) -> CallerView:
    """The view of every caller of a knowledge base without units (``state.units`` empty): every fact
    and public rule, no unit visible — what :meth:`~thinkingdb.retrieval.lanes.Lanes.caller_view`
    gives there, without loading the lanes (a plain question, issue 20). Labels are read on first use."""
    got: list = []
    graph = _without_dangling(state, store)

    def labels() -> dict[str, str]:
        if not got:
            got.append(visible_labels(store.labels(), graph))
        return got[0]
    table = AccessTable(())
    table.dangling = () if graph is state.graph else ("?",)
    return CallerView(table.view(Caller(), None), graph, state.rules_for(_nothing), _nothing, labels)


def _without_dangling(state, store):
    """``state.graph`` less what only provenance records of unknown units assert (in a store without
    units every record naming a unit is one: visible to no one), at the best confidence of the others;
    the graph itself when no record names a unit (one index probe)."""
    if getattr(state, "plain", False):   # (read from the state file: store/statefile.py)
        return state.graph
    reader = getattr(state, "reader", None)

    def read(fn):
        return reader.read(fn) if reader is not None and reader.stamp is not None else fn(store.conn)
    if not read(lambda conn: conn.execute("SELECT 1 FROM provenance WHERE unit_id IS NOT NULL LIMIT 1").fetchone()):
        return state.graph
    from .deltacompose import restricted
    from .viewsql import hidden_changes
    changes = read(lambda conn: hidden_changes(conn, []))
    if not changes:
        return state.graph
    got = restricted(state.graph, changes)
    if got is not None:
        return got
    from ..engine.graph import FactGraph
    from ..model import Fact
    drop = {Triple(s, r, o): c for s, r, o, c in changes}
    g = FactGraph()
    g.add_many(f if f.triple not in drop else Fact(f.subject, f.relation, f.object, drop[f.triple])
               for f in state.graph.facts() if drop.get(f.triple, f.confidence) is not None)
    return g


def _nothing(unit_id: str) -> bool:
    return False


class FactAccess:
    """Which units assert each fact, with what confidence, and the best confidence from outside units."""

    def __init__(self, store) -> None:
        self.unit_facts: dict[str, list[tuple[Triple, float]]] = {}
        self.fact_units: dict[Triple, dict[str, float]] = {}
        # One SQL pass over provenance (the Store API has unit_facts() without confidences).
        for s, r, o, uid, c in store.conn.execute(
                "SELECT f.subject, f.relation, f.object, p.unit_id, p.confidence FROM provenance p "
                "JOIN facts f ON f.id = p.fact WHERE p.unit_id IS NOT NULL"):
            t = Triple(s, r, o)
            units = self.fact_units.setdefault(t, {})
            if uid not in units:
                self.unit_facts.setdefault(uid, []).append((t, c))
            units[uid] = max(c, units.get(uid, 0.0))
        self.public: dict[Triple, float] = {
            Triple(s, r, o): c for s, r, o, c in store.conn.execute(
                "SELECT f.subject, f.relation, f.object, max(p.confidence) FROM provenance p "
                "JOIN facts f ON f.id = p.fact WHERE p.unit_id IS NULL AND p.fact IN "
                "(SELECT fact FROM provenance WHERE unit_id IS NOT NULL) GROUP BY p.fact")}

    def dangling(self, table: AccessTable) -> tuple[str, ...]:
        """The unit ids these provenance rows name that ``table`` does not hold, sorted: visible to no
        one (module docstring) — :attr:`AccessTable.dangling` for a table made from the units alone."""
        return tuple(sorted(u for u in self.unit_facts if table.find(u) < 0))

    def visible_confidence(self, t: Triple, visible) -> float | None:
        """Max confidence over the assertions ``visible(unit_id)`` accepts and those outside units."""
        best = self.public.get(t)
        for uid, c in self.fact_units.get(t, {}).items():
            if visible(uid) and (best is None or c > best):
                best = c
        return best
