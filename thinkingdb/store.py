"""The embedded store: one SQLite file (WAL mode) holding units, facts, provenance, rules,
declarations, aliases, labels and saved lane indexes.

The file is stamped with an application id and a schema version; a foreign or newer file is refused,
never overwritten. Writes happen inside :meth:`Store.transaction`, so an ingest that fails or is killed
leaves the previous state intact.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from .errors import StoreError
from .model import Atom, Declaration, Fact, Rule, Term, Triple, Var
from .normalize import Vocabulary

APPLICATION_ID = 0x54444231  # "TDB1"
SCHEMA_VERSION = 1
DEFAULT_PATH = "./thinkingdb.sqlite"

_SCHEMA = """
CREATE TABLE symbols (key TEXT PRIMARY KEY, label TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE facts (
    subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL,
    confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    PRIMARY KEY (subject, relation, object)) WITHOUT ROWID;
CREATE TABLE provenance (
    subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL,
    confidence REAL NOT NULL, source TEXT NOT NULL, line INTEGER NOT NULL DEFAULT 0, unit_id TEXT);
CREATE INDEX provenance_fact ON provenance (subject, relation, object);
CREATE INDEX provenance_source ON provenance (source);
CREATE INDEX provenance_unit ON provenance (unit_id);
CREATE TABLE units (
    id TEXT PRIMARY KEY, role TEXT, topic TEXT, claim TEXT, condition TEXT, procedure TEXT,
    utility_acts TEXT, utility_note TEXT, source TEXT, chunk TEXT, acl TEXT, region TEXT,
    effective_from TEXT, effective_to TEXT, extra TEXT, line INTEGER NOT NULL DEFAULT 0);
CREATE INDEX units_source ON units (source);
CREATE TABLE rules (name TEXT PRIMARY KEY, body TEXT NOT NULL, source TEXT NOT NULL, line INTEGER NOT NULL);
CREATE TABLE declarations (relation TEXT NOT NULL, kind TEXT NOT NULL, other TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (relation, kind, other));
CREATE TABLE aliases (phrase TEXT PRIMARY KEY, relation TEXT NOT NULL, source TEXT NOT NULL, line INTEGER NOT NULL);
CREATE TABLE sources (source TEXT PRIMARY KEY, kind TEXT NOT NULL, ingested_at TEXT NOT NULL,
    records INTEGER NOT NULL);
CREATE TABLE lane_indexes (name TEXT PRIMARY KEY, params TEXT NOT NULL, data BLOB NOT NULL,
    built_at TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

UNIT_FIELDS = ("role", "topic", "claim", "condition", "procedure", "utility_acts", "utility_note",
               "source", "chunk", "acl", "region", "effective_from", "effective_to")


@dataclass(frozen=True)
class Unit:
    """A knowledge unit: the seed fields, provenance, access control and validity dates."""

    id: str
    role: str = ""
    topic: str = ""
    claim: str = ""
    condition: str = ""
    procedure: str = ""
    utility_acts: tuple[str, ...] = ()
    utility_note: str = ""
    source: str = ""
    chunk: str = ""
    acl: tuple[str, ...] = ()
    region: str = ""
    effective_from: str = ""
    effective_to: str = ""
    extra: str = "{}"

    def text_fields(self) -> dict[str, str]:
        """The searchable fields (utility_acts joined by spaces, as DS009 indexes them)."""
        out = {"role": self.role, "topic": self.topic, "claim": self.claim, "condition": self.condition,
               "procedure": self.procedure, "utility_acts": " ".join(self.utility_acts),
               "utility_note": self.utility_note}
        return {k: v for k, v in out.items() if v}


def _encode_term(t: Term) -> Any:
    return {"var": t.name} if isinstance(t, Var) else t


def _decode_term(t: Any) -> Term:
    return Var(t["var"]) if isinstance(t, dict) else t


def rule_to_json(rule: Rule) -> str:
    atoms = [[_encode_term(a.subject), a.relation, _encode_term(a.object)] for a in rule.premises]
    h = rule.head
    return json.dumps({"weight": rule.weight, "premises": atoms,
                       "head": [_encode_term(h.subject), h.relation, _encode_term(h.object)]})


def rule_from_json(name: str, body: str) -> Rule:
    d = json.loads(body)
    atom = lambda a: Atom(_decode_term(a[0]), a[1], _decode_term(a[2]))  # noqa: E731
    return Rule(name, tuple(atom(a) for a in d["premises"]), atom(d["head"]), d["weight"])


def _check_file(path: str) -> bool:
    """True when ``path`` exists and is non-empty; raise if it is not an SQLite file."""
    if not os.path.exists(path):
        return False
    if os.path.isdir(path):
        raise StoreError(f"{path}: is a directory, not a ThinkingDB store")
    if os.path.getsize(path) == 0:
        return False
    with open(path, "rb") as fh:
        header = fh.read(16)
    if header != b"SQLite format 3\x00":
        raise StoreError(f"{path}: not a ThinkingDB store (not an SQLite file); refusing to overwrite it")
    return True


class Store:
    """An open ThinkingDB SQLite file.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
    >>> with Store(path) as st:
    ...     with st.transaction():
    ...         n = st.add_facts([(Fact("a", "r", "b", 0.5), "doc.tdb", 1, None)])
    ...     [str(f.triple) for f in st.facts()]
    ['a r b']
    """

    def __init__(self, path: str = DEFAULT_PATH, *, create: bool = True, readonly: bool = False):
        self.path = str(path)
        existed = _check_file(self.path)
        if not existed and (readonly or not create):
            raise StoreError(f"{self.path}: no such store; run `thinkingdb ingest` first")
        try:
            uri = f"file:{os.path.abspath(self.path)}?mode={'ro' if readonly else 'rwc'}"
            self.conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self._init(existed, readonly)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open store: {exc}") from exc
        self.generation = self._generation()

    def _init(self, existed: bool, readonly: bool) -> None:
        c = self.conn
        c.execute("PRAGMA busy_timeout = 5000")
        app = c.execute("PRAGMA application_id").fetchone()[0]
        version = c.execute("PRAGMA user_version").fetchone()[0]
        tables = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app == 0 and tables == 0:
            if readonly:
                raise StoreError(f"{self.path}: empty store")
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            c.execute("INSERT INTO meta VALUES ('generation', '0')")
            c.execute("COMMIT")
            return
        if app != APPLICATION_ID:
            raise StoreError(f"{self.path}: a foreign SQLite database (application id {app:#x}), not a "
                             "ThinkingDB store; refusing to touch it")
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer ThinkingDB (schema {version}, this one reads "
                             f"{SCHEMA_VERSION}); upgrade thinkingdb")
        if version < SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema {version} is older than {SCHEMA_VERSION} and has no migration")
        if not readonly:
            c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing writes; bumps the store generation so cached graphs know to reload."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.path}: cannot write: {exc}") from exc
        try:
            yield
            self.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.generation = self._generation()

    def _generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def current_generation(self) -> int:
        """The generation as stored now (another process may have written)."""
        return self._generation()

    # -- writing -----------------------------------------------------------------------------------
    def add_labels(self, labels: dict[str, str]) -> None:
        self.conn.executemany("INSERT OR IGNORE INTO symbols VALUES (?, ?)", labels.items())

    def add_facts(self, rows: Iterable[tuple[Fact, str, int, str | None]]) -> int:
        """Insert facts with provenance; a duplicate triple keeps the highest confidence."""
        c = self.conn
        prov = [(f.subject, f.relation, f.object, f.confidence, src, line, unit) for f, src, line, unit in rows]
        c.executemany("INSERT INTO provenance VALUES (?, ?, ?, ?, ?, ?, ?)", prov)
        c.executemany("INSERT INTO facts VALUES (?, ?, ?, ?) ON CONFLICT (subject, relation, object) "
                      "DO UPDATE SET confidence = max(confidence, excluded.confidence)",
                      [p[:4] for p in prov])
        return len(prov)

    def add_rules(self, rules: Iterable[tuple[Rule, str, int]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO rules VALUES (?, ?, ?, ?)",
                              [(r.name, rule_to_json(r), src, line) for r, src, line in rules])

    def add_declarations(self, decls: Iterable[tuple[Declaration, str, int]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO declarations VALUES (?, ?, ?, ?, ?)",
                              [(d.relation, d.kind, d.other or "", src, line) for d, src, line in decls])

    def add_aliases(self, aliases: Iterable[tuple[str, str, str, int]]) -> None:
        from .normalize import relation_key
        self.conn.executemany("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?, ?)",
                              [(relation_key(p), r, src, line) for p, r, src, line in aliases])

    def add_units(self, units: Iterable[tuple[Unit, int]]) -> None:
        rows = []
        for u, line in units:
            rows.append((u.id, u.role, u.topic, u.claim, u.condition, u.procedure, json.dumps(list(u.utility_acts)),
                         u.utility_note, u.source, u.chunk, json.dumps(list(u.acl)), u.region, u.effective_from,
                         u.effective_to, u.extra, line))
        self.conn.executemany("INSERT OR REPLACE INTO units VALUES (" + ",".join("?" * 16) + ")", rows)

    def record_source(self, source: str, kind: str, records: int) -> None:
        self.conn.execute("INSERT OR REPLACE INTO sources VALUES (?, ?, datetime('now'), ?)", (source, kind, records))

    def retract_source(self, source: str) -> dict[str, int]:
        """Remove everything a source contributed (call inside a transaction)."""
        c = self.conn
        unit_ids = [r[0] for r in c.execute("SELECT id FROM units WHERE source = ?", (source,))]
        c.execute("CREATE TEMP TABLE IF NOT EXISTS touched (subject TEXT, relation TEXT, object TEXT)")
        c.execute("DELETE FROM touched")
        c.execute("INSERT INTO touched SELECT DISTINCT subject, relation, object FROM provenance WHERE source = ?",
                  (source,))
        removed = c.execute("DELETE FROM provenance WHERE source = ?", (source,)).rowcount
        c.execute("DELETE FROM facts WHERE (subject, relation, object) IN (SELECT * FROM touched) AND NOT EXISTS "
                  "(SELECT 1 FROM provenance p WHERE p.subject = facts.subject AND p.relation = facts.relation "
                  "AND p.object = facts.object)")
        c.execute("UPDATE facts SET confidence = (SELECT max(p.confidence) FROM provenance p WHERE "
                  "p.subject = facts.subject AND p.relation = facts.relation AND p.object = facts.object) "
                  "WHERE (subject, relation, object) IN (SELECT * FROM touched)")
        units = c.execute("DELETE FROM units WHERE source = ?", (source,)).rowcount
        for table in ("rules", "declarations", "aliases", "sources"):
            c.execute(f"DELETE FROM {table} WHERE source = ?", (source,))
        c.execute("DELETE FROM symbols WHERE key NOT IN (SELECT subject FROM facts UNION SELECT object FROM facts)")
        return {"facts": removed, "units": units, "unit_ids": len(unit_ids)}

    def save_index(self, name: str, params: dict, data: bytes) -> None:
        self.conn.execute("INSERT OR REPLACE INTO lane_indexes VALUES (?, ?, ?, datetime('now'), ?)",
                          (name, json.dumps(params, sort_keys=True), data, self.current_generation()))

    def load_index(self, name: str) -> tuple[dict, bytes, int] | None:
        row = self.conn.execute("SELECT params, data, generation FROM lane_indexes WHERE name = ?", (name,)).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], row[2])

    # -- reading -----------------------------------------------------------------------------------
    def facts(self) -> Iterator[Fact]:
        for s, r, o, c in self.conn.execute("SELECT subject, relation, object, confidence FROM facts"):
            yield Fact(s, r, o, c)

    def fact_rows(self) -> list[tuple[str, str, str, float]]:
        return self.conn.execute("SELECT subject, relation, object, confidence FROM facts").fetchall()

    def provenance(self, t: Triple) -> list[dict]:
        rows = self.conn.execute("SELECT confidence, source, line, unit_id FROM provenance WHERE subject = ? "
                                 "AND relation = ? AND object = ? ORDER BY source, line", (t.subject, t.relation, t.object))
        return [{"confidence": c, "source": s, "line": ln, "unit_id": u} for c, s, ln, u in rows]

    def fact_confidence(self, t: Triple) -> float | None:
        row = self.conn.execute("SELECT confidence FROM facts WHERE subject = ? AND relation = ? AND object = ?",
                                (t.subject, t.relation, t.object)).fetchone()
        return None if row is None else row[0]

    def labels(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, label FROM symbols"))

    def rules(self) -> list[Rule]:
        return [rule_from_json(n, b) for n, b in self.conn.execute("SELECT name, body FROM rules ORDER BY name")]

    def declarations(self) -> list[Declaration]:
        return [Declaration(r, k, o or None) for r, k, o in
                self.conn.execute("SELECT relation, kind, other FROM declarations ORDER BY relation, kind, other")]

    def vocabulary(self) -> Vocabulary:
        v = Vocabulary()
        for phrase, rel in self.conn.execute("SELECT phrase, relation FROM aliases ORDER BY phrase"):
            v.aliases[phrase] = rel
        for d in self.declarations():
            if d.kind == "inverse" and d.other:
                v.inverses[d.other] = d.relation
        return v

    def units(self) -> Iterator[Unit]:
        for row in self.conn.execute("SELECT * FROM units ORDER BY id"):
            yield _unit(row)

    def unit(self, unit_id: str) -> Unit | None:
        row = self.conn.execute("SELECT * FROM units WHERE id = ?", (unit_id,)).fetchone()
        return None if row is None else _unit(row)

    def unit_facts(self) -> dict[str, list[Triple]]:
        out: dict[str, list[Triple]] = {}
        for s, r, o, u in self.conn.execute("SELECT subject, relation, object, unit_id FROM provenance "
                                            "WHERE unit_id IS NOT NULL ORDER BY unit_id, subject, relation, object"):
            out.setdefault(u, []).append(Triple(s, r, o))
        return out

    def sources(self) -> list[dict]:
        return [{"source": s, "kind": k, "ingested_at": t, "records": n}
                for s, k, t, n in self.conn.execute("SELECT * FROM sources ORDER BY source")]

    def stats(self) -> dict[str, int]:
        q = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        return {"facts": q("SELECT count(*) FROM facts"), "provenance": q("SELECT count(*) FROM provenance"),
                "symbols": q("SELECT count(*) FROM symbols"),
                "relations": q("SELECT count(DISTINCT relation) FROM facts"), "units": q("SELECT count(*) FROM units"),
                "rules": q("SELECT count(*) FROM rules"), "declarations": q("SELECT count(*) FROM declarations"),
                "aliases": q("SELECT count(*) FROM aliases"), "sources": q("SELECT count(*) FROM sources"),
                "schema_version": SCHEMA_VERSION}


def _unit(row) -> Unit:
    (uid, role, topic, claim, condition, procedure, acts, note, source, chunk, acl, region, eff_from, eff_to,
     extra, _line) = row
    return Unit(uid, role or "", topic or "", claim or "", condition or "", procedure or "",
                tuple(json.loads(acts or "[]")), note or "", source or "", chunk or "", tuple(json.loads(acl or "[]")),
                region or "", eff_from or "", eff_to or "", extra or "{}")
