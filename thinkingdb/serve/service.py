"""The server's operations, independent of HTTP or MCP: search, query, why, provenance, stats, units,
symbols and ingest, each for an authenticated :class:`Principal`, each returning the JSON of the
CLI's ``--json`` output for the same command.

Readers run on the current :class:`~thinkingdb.serve.snapshot.Snapshot`, concurrently. A write (one
at a time) commits through its own connection in one transaction; the service then opens and warms
a snapshot of the new generation and swaps it in (:mod:`~thinkingdb.serve.generations`), so a request
sees either the old state or the new one. Writes by other processes are noticed within
``poll_seconds`` and handled the same way. Who calls, and the errors of keys:
:mod:`~thinkingdb.serve.principal`.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); db = os.path.join(d, "kb.sqlite")
>>> _ = open(os.path.join(d, "deps.tdb"), "w").write("nginx depends_on openssl. openssl depends_on libc.")
>>> from thinkingdb.api import open_kb
>>> with open_kb(db) as kb: _ = kb.ingest([os.path.join(d, "deps.tdb")])
>>> svc = Service(db)
>>> [a["bindings"]["x"] for a in svc.query(ANONYMOUS, {"query": "nginx depends_on+ ?x"})["answers"]]
['libc', 'openssl']
>>> svc.close()
"""

from __future__ import annotations

import os
import re
import threading

from ..api import DEFAULT_LIMITS, KnowledgeBase
from ..errors import QueryError, StoreError, ThinkingDBError, ValidationError
from ..language import parse_fact
from ..model import Limits
from ..store.access import Caller, parse_date

from .generations import HOT_VIEWS, Generations
from .principal import ANONYMOUS, Forbidden, NotFound, Principal, Unauthorized
from .schemas import check

__all__ = ["Service", "Principal", "ANONYMOUS", "Unauthorized", "Forbidden", "NotFound", "HOT_VIEWS",
           "NEIGHBOURS"]

NEIGHBOURS = 500       # facts per direction on a symbol page (the answer says when it was cut)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class Service(Generations):
    """Warm, concurrent read operations and atomic writes over one store file."""

    def __init__(self, path: str, *, default_rules: bool = True, max_limits: Limits = DEFAULT_LIMITS,
                 poll_seconds: float = 0.5, warm: tuple[str, ...] = ()) -> None:
        if not os.path.isfile(path):
            raise StoreError(f"{path}: no such store; run `thinkingdb ingest` first")
        self.max_limits = max_limits
        self._write_lock = threading.Lock()     # one writer at a time
        self._writer: KnowledgeBase | None = None
        super().__init__(path, default_rules, poll_seconds)
        if warm:
            from ..store.keys import list_keys
            with self._probe_lock:
                keyed = [k.caller for k in list_keys(self._probe) if k.active]
            for caller in dict.fromkeys([Caller(), *keyed]):   # anonymous first, each key's caller once
                for name in warm:
                    self.warm(caller, name)

    # -- lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection (idempotent); in-flight readers finish on their snapshot first."""
        if self.closed:
            return
        self.closed = True
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
        with self._lock:
            self._current.retired = True
            if self._current.users == 0:
                self._current.close()
        with self._probe_lock:
            self._probe.close()

    def authenticate(self, token: str | None) -> Principal:
        """The principal of an API key (see :mod:`thinkingdb.store.keys`); :class:`Unauthorized` if none."""
        from ..store.keys import verify_key
        with self._probe_lock:
            info = verify_key(self._probe, token)
        if info is None:
            raise Unauthorized("a valid API key is required (Authorization: Bearer tdb_...)")
        return Principal(info.id, info.name, info.caller, info.writer)

    def warm(self, caller: Caller, profile: str = "kb-thinkingdb", as_of=None) -> None:
        """Build now what searches of ``caller`` through ``profile`` need (and keep it warm)."""
        from ..retrieval.profiles import get_profile
        with self.reading() as snap:
            self._use(snap, caller, parse_date(as_of), get_profile(profile).lanes)

    # -- a request's limits ---------------------------------------------------------------------------
    def _limits(self, body: dict) -> Limits:
        values = {}
        for name in ("max_depth", "max_nodes", "max_derived", "timeout_ms", "max_rows"):
            cap = getattr(self.max_limits, name)
            value = getattr(DEFAULT_LIMITS, name)
            if cap is not None and (value is None or value > cap):
                value = cap       # a server that allows less than the CLI's default answers with its cap
            value = body.get(name, value)
            if cap is not None and (value is None or value > cap):
                raise ValidationError(f"field {name!r}: at most {cap:,} on this server")
            values[name] = value
        return Limits(**values)

    # -- reading ------------------------------------------------------------------------------------
    def whoami(self, who: Principal, body: dict | None = None) -> dict:
        """``GET /whoami``: the key's name and the caller it searches as (never the key itself)."""
        check("stats", body or {})
        return {"key": who.key_id, "name": who.name, "tags": list(who.caller.tags), "region": who.caller.region,
                "writer": who.writer}

    def search(self, who: Principal, body: dict) -> dict:
        """``POST /search``: the JSON of ``thinkingdb search --json``."""
        from ..retrieval.pipeline import fold_result, search
        from ..retrieval.profiles import get_profile
        check("search", body)
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        profile = get_profile(body.get("profile", "kb-balanced"))
        features = body.get("features")
        with self.reading() as snap:
            self._use(snap, caller, day, profile.lanes)
            res = search(snap.kb, body["text"], profile=profile, caller=caller, as_of=day,
                         decompose=True if body.get("decompose") else None,
                         alignment=True if body.get("align") or features else None, features=features)
            if body.get("budget_tokens") is not None:
                res = fold_result(snap.kb, res, body["budget_tokens"],
                                  diversity_bias=body.get("diversity_bias", 0.3))
            out = res.to_json()
            if body.get("labels"):
                out["labels"] = snap.labels_for(_proof_symbols(r.proof for r in res.results))
            return out

    def query(self, who: Principal, body: dict) -> dict:
        """``POST /query``: the JSON of ``thinkingdb query --json``, over the facts the caller may see."""
        from ..engine.query import evaluate
        check("query", body)
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        limits = self._limits(body)
        with self.reading() as snap:
            view = self._use(snap, caller, day, ("closure",))
            q = snap.kb.parse_query(body["query"])
            try:
                res = evaluate(q, snap.graph(view), snap.lanes.rules(view), limits=limits,
                               aggregate=body.get("aggregate", "best"), k=body.get("k", 5),
                               max_answers=body.get("limit"))
            except ThinkingDBError:
                raise
            except (ValueError, KeyError) as exc:
                raise QueryError(str(exc)) from exc
            labels = snap.labels()   # each answer's display labels beside its keys, as kb.query gives them
            answers = [a.replace(labels={v: labels.get(k, k) for v, k in a.bindings.items()}).to_json()
                       for a in res.answers]
            out = {"answers": answers, "truncated": res.truncated, "more": bool(res.more),
                   "variables": [v.name for v in q.variables()]}
            if body.get("labels"):
                out["labels"] = snap.labels_for(_proof_symbols(a.proof for a in res.answers))
            return out

    def why(self, who: Principal, body: dict) -> dict:
        """``POST /why``: the JSON of ``thinkingdb why --json`` (proof and provenance of its leaves)."""
        from ..engine.query import why
        check("why", body)
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        limits = self._limits(body)
        with self.reading() as snap:
            view = self._use(snap, caller, day, ("closure",))
            t = parse_fact(body["fact"], snap.kb.store.vocabulary())
            proof = why(t, snap.graph(view), snap.lanes.rules(view), limits=limits, alternatives=body.get("alternatives", 0))
            if proof is None:
                return {"proof": None}
            out = {"proof": proof.to_json(), "provenance": {str(f): snap.provenance(f, view) for f in proof.leaves()}}
            if body.get("labels"):
                out["labels"] = snap.labels_for(_proof_symbols([proof]))
            return out

    def provenance(self, who: Principal, body: dict) -> dict:
        """``POST /provenance``: the visible sources, lines and units of each fact (for proof leaves)."""
        check("provenance", body)
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        with self.reading() as snap:
            view = self._use(snap, caller, day, ("closure",))
            vocab = snap.kb.store.vocabulary()
            facts = [parse_fact(text, vocab) for text in body["facts"]]
            return {"provenance": {str(t): snap.provenance(t, view) for t in facts}}

    def stats(self, who: Principal, body: dict | None = None) -> dict:
        """``GET /stats``: the keys of ``thinkingdb stats --json``, counted over what the caller may see."""
        body = check("stats", body or {})
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        with self.reading() as snap:
            return snap.stats(self._use(snap, caller, day, ("closure",)))

    def unit(self, who: Principal, unit_id: str, body: dict | None = None) -> dict:
        """``GET /units/{id}``: a visible unit's fields and the facts it asserts; hidden ones are not found."""
        body = check("stats", body or {})
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        with self.reading() as snap:
            view = self._use(snap, caller, day, ("closure",))
            lanes = snap.lanes
            u = lanes.by_id.get(unit_id)
            if u is None or not snap.visible_unit(view)(unit_id):
                raise NotFound(f"no unit {unit_id!r} that this caller may see")
            facts = [{"subject": t.subject, "relation": t.relation, "object": t.object, "confidence": c}
                     for t, c in lanes.facts.unit_facts.get(unit_id, ())]
            return {"unit": _unit_json(u), "facts": facts,
                    "labels": snap.labels_for([f["subject"] for f in facts] + [f["object"] for f in facts])}

    def symbol(self, who: Principal, key: str, body: dict | None = None) -> dict:
        """``GET /symbols/{key}``: the facts around a symbol that the caller may see, with the visible
        units asserting each (at most :data:`NEIGHBOURS` per direction; ``truncated`` says so)."""
        from ..model import Triple
        body = check("stats", body or {})
        caller, day = who.narrow(body.get("caller")), parse_date(body.get("as_of"))
        with self.reading() as snap:
            view = self._use(snap, caller, day, ("closure",))
            g, fa, visible = snap.graph(view), snap.lanes.facts, snap.visible_unit(view)
            if g.symbol_id(key) is None:
                raise NotFound(f"no symbol {key!r} in the facts this caller may see")
            out, inn, truncated = [], [], False
            for r in g.relations():
                for o, c in sorted(g.objects(key, r).items()):
                    out.append((Triple(key, r, o), c))
                for s, c in sorted(g.subjects(r, key).items()):
                    inn.append((Triple(s, r, key), c))
            if len(out) > NEIGHBOURS or len(inn) > NEIGHBOURS:
                truncated = True
                out.sort(key=lambda tc: -tc[1])
                inn.sort(key=lambda tc: -tc[1])
                out, inn = out[:NEIGHBOURS], inn[:NEIGHBOURS]

            def fact(t: Triple, c: float) -> dict:
                units = sorted(u for u in fa.fact_units.get(t, {}) if visible(u))
                return {"subject": t.subject, "relation": t.relation, "object": t.object, "confidence": c,
                        "units": units}

            names = [key] + [t.object for t, _ in out] + [t.subject for t, _ in inn]
            return {"symbol": key, "out": [fact(t, c) for t, c in out], "in": [fact(t, c) for t, c in inn],
                    "truncated": truncated, "labels": snap.labels_for(names)}

    # -- writing ------------------------------------------------------------------------------------
    def ingest(self, who: Principal, body: dict) -> dict:
        """``POST /ingest`` (writers only): the JSON of ``thinkingdb ingest --json``, plus the generation
        now being served. Each file is kept under ``DB.uploads/NAME`` (its source name in provenance);
        sending a name again replaces what it contributed before, as ingesting a file again does."""
        check("ingest", body)
        if not who.writer:
            raise Forbidden(f"the key {who.name!r} may not write (make a key with --writer)")
        files = body["files"]
        if not files:
            raise ValidationError("field 'files': at least one file is needed")
        names = [f["name"] for f in files]
        for n in names:
            if not _NAME.fullmatch(n):
                raise ValidationError(f"file name {n!r}: use letters, digits, '.', '_' and '-' "
                                      "(128 at most, not starting with a dot)")
        if len(set(names)) != len(names):
            raise ValidationError("field 'files': a file name appears twice")
        spool = self.path + ".uploads"
        with self._write_lock:
            os.makedirs(spool, exist_ok=True)
            paths, backups = [], []
            try:
                for f in files:
                    path = os.path.join(spool, f["name"])
                    if os.path.exists(path):
                        os.replace(path, path + ".previous")
                        backups.append(path)
                    with open(path, "w", encoding="utf-8", newline="") as fh:
                        fh.write(f["text"])
                    paths.append(path)
                if self._writer is None:
                    self._writer = KnowledgeBase(self.path, create=False, default_rules=self.default_rules)
                report = self._writer.ingest(paths, skip_invalid=bool(body.get("skip_invalid")),
                                             rejects_path=os.path.join(spool, "rejects.jsonl"))
            except BaseException:
                for p in paths:
                    if p not in backups:
                        os.remove(p)
                for p in backups:
                    os.replace(p + ".previous", p)
                raise
            for p in backups:
                os.remove(p + ".previous")
        out = report.to_json()
        out["generation"] = self.refresh()
        return out


def _proof_symbols(proofs) -> list[str]:
    out: list[str] = []
    for p in proofs:
        for node in (p if isinstance(p, tuple) else (p,)):
            if node is None:
                continue
            for t in node.facts():
                out += [t.subject, t.object]
            for t in node.leaves():
                out += [t.subject, t.object]
    return out


def _unit_json(u) -> dict:
    import json
    return {"id": u.id, "role": u.role, "topic": u.topic, "claim": u.claim, "condition": u.condition,
            "procedure": u.procedure, "utility_acts": list(u.utility_acts), "utility_note": u.utility_note,
            "source": u.source, "chunk": u.chunk, "acl": list(u.acl), "region": u.region,
            "effective_from": u.effective_from, "effective_to": u.effective_to, "extra": json.loads(u.extra or "{}")}
