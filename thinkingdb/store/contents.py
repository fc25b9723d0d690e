"""Whole-store reads of a :class:`~thinkingdb.store.sqlite.Store`: every fact, provenance, labels, units,
sources, saved lane indexes, the logical dump and the counts of ``stats``. A question reads the graph
file and a few rows instead (:mod:`thinkingdb.store.sqlite`), and does not load this module.

The functions here are ``Store`` methods (``store.stats()``), imported on first use.
"""

from __future__ import annotations

from ..model import Fact, Triple
from .sqlite import SCHEMA_VERSION
from .unit import _UNIT_COLUMNS, _unit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

    from .unit import Unit


def has_source(store, source: str) -> bool:
    return store.conn.execute("SELECT 1 FROM sources WHERE source = ?", (source,)).fetchone() is not None


def load_index(store, name: str) -> tuple[dict, bytes, int] | None:
    """``(params, data, generation)`` of a saved lane index, or None."""
    import json
    row = store.conn.execute("SELECT params, data, generation FROM lane_indexes WHERE name = ?", (name,)).fetchone()
    return None if row is None else (json.loads(row[0]), row[1], row[2])


def facts(store) -> Iterator[Fact]:
    for s, r, o, c in store.conn.execute("SELECT subject, relation, object, confidence FROM facts"):
        yield Fact(s, r, o, c)


def fact_rows(store) -> list[tuple[str, str, str, float]]:
    return store.conn.execute("SELECT subject, relation, object, confidence FROM facts").fetchall()


def provenance(store, t: Triple) -> list[dict]:
    """Every file, line and unit an asserted fact came from (extracted facts add their sentence)."""
    import json
    rows = store.conn.execute(
        "SELECT p.confidence, s.source, p.line, p.unit_id, p.detail FROM facts f "
        "JOIN provenance p ON p.fact = f.id JOIN sources s ON s.id = p.origin "
        "WHERE f.subject = ? AND f.relation = ? AND f.object = ? ORDER BY s.source, p.line, p.rowid",
        (t.subject, t.relation, t.object))
    out = []
    for c, s, ln, u, detail in rows:
        d = {"confidence": c, "source": s, "line": ln, "unit_id": u}
        if detail:
            d.update(json.loads(detail))
        out.append(d)
    return out


def fact_confidence(store, t: Triple) -> float | None:
    row = store.conn.execute("SELECT confidence FROM facts WHERE subject = ? AND relation = ? AND object = ?",
                            (t.subject, t.relation, t.object)).fetchone()
    return None if row is None else row[0]


def labels(store) -> dict[str, str]:
    """Display label per symbol key: the one given by the earliest source still present."""
    return {k: lab for k, lab, _ in
            store.conn.execute("SELECT key, label, min(origin) FROM symbols GROUP BY key")}


def units(store) -> Iterator[Unit]:
    for row in store.conn.execute(f"SELECT {_UNIT_COLUMNS} FROM units ORDER BY id"):
        yield _unit(row)


def unit(store, unit_id: str) -> Unit | None:
    row = store.conn.execute(f"SELECT {_UNIT_COLUMNS} FROM units WHERE id = ?", (unit_id,)).fetchone()
    return None if row is None else _unit(row)


def unit_facts(store) -> dict[str, list[Triple]]:
    out: dict[str, list[Triple]] = {}
    for s, r, o, u in store.conn.execute(
            "SELECT f.subject, f.relation, f.object, p.unit_id FROM provenance p JOIN facts f ON f.id = p.fact "
            "WHERE p.unit_id IS NOT NULL ORDER BY p.unit_id, f.subject, f.relation, f.object"):
        lst = out.setdefault(u, [])
        t = Triple(s, r, o)
        if not lst or lst[-1] != t:
            lst.append(t)
    return out


def sources(store) -> list[dict]:
    return [{"source": s, "kind": k, "ingested_at": t, "records": n}
            for s, k, t, n in store.conn.execute("SELECT source, kind, ingested_at, records FROM sources "
                                                "ORDER BY source")]


def dump(store) -> dict[str, list[tuple]]:
    """The logical content of every table, origin ids resolved to source names and sorted; two stores
    holding the same knowledge dump equal (used to check that retract is exact).

    >>> import tempfile, os
    >>> from thinkingdb.store.sqlite import Store
    >>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
    ...     sorted(st.dump())
    ['aliases', 'declarations', 'facts', 'lane_indexes', 'provenance', 'rules', 'sources', 'symbols', 'units']
    """
    q = lambda sql: sorted(store.conn.execute(sql).fetchall(), key=repr)  # noqa: E731
    src = "(SELECT source FROM sources WHERE id = origin)"
    return {
        "sources": q("SELECT source, kind, records FROM sources"),
        "symbols": q(f"SELECT key, label, {src} FROM symbols"),
        "facts": q("SELECT subject, relation, object, confidence FROM facts"),
        "provenance": q(f"SELECT f.subject, f.relation, f.object, {src}, line, unit_id, p.confidence, detail "
                        "FROM provenance p JOIN facts f ON f.id = p.fact"),
        "units": q(f"SELECT {_UNIT_COLUMNS}, line, {src} FROM units"),
        "rules": q(f"SELECT name, body, line, {src} FROM rules"),
        "declarations": q(f"SELECT relation, kind, other, line, {src} FROM declarations"),
        "aliases": q(f"SELECT phrase, relation, line, {src} FROM aliases"),
        "lane_indexes": q("SELECT name, params, data FROM lane_indexes"),
    }


def stats(store) -> dict[str, int]:
    q = lambda sql: store.conn.execute(sql).fetchone()[0]  # noqa: E731
    return {"facts": q("SELECT count(*) FROM facts"), "provenance": q("SELECT count(*) FROM provenance"),
            "symbols": q("SELECT count(DISTINCT key) FROM symbols"),
            "relations": q("SELECT count(DISTINCT relation) FROM facts"), "units": q("SELECT count(*) FROM units"),
            "rules": q("SELECT count(DISTINCT name) FROM rules"),
            "declarations": q("SELECT count(*) FROM (SELECT DISTINCT relation, kind, other FROM declarations)"),
            "aliases": q("SELECT count(DISTINCT phrase) FROM aliases"), "sources": q("SELECT count(*) FROM sources"),
            "schema_version": SCHEMA_VERSION}

