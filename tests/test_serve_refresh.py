"""A write during serving refreshes the served snapshot incrementally: the new snapshot is derived from
the old one plus what the write changed, never read and built from the whole store — and it answers
exactly what a server started fresh on the same store answers (the independent oracle: the full path)."""

from __future__ import annotations

import json

import pytest

from thinkingdb.serve import Principal, Service
from thinkingdb.store.access import Caller

from serve_kb import AS_OF, build

WRITER = Principal("w", "writer", Caller(), writer=True)
CALLERS = {"clerk": Principal("c", "clerk", Caller(tags=("claims:west",), region="west")),
           "auditor": Principal("a", "auditor", Caller(tags=("claims:west", "audit:gold"), region="west")),
           "public": Principal("p", "public", Caller())}
NEW_UNITS = [
    {"id": "gold-memo", "topic": "Gold tier memo", "claim": "Memo GLD-12: gold tier claims use the fast track.",
     "acl": ["audit:gold"], "triples": [["gold tier", "uses", "fast track"], ["fast track", "part_of", "claims desk"]]},
    {"id": "pump-note", "topic": "Sump pump", "claim": "A sump pump rider covers basement flooding from groundwater.",
     "triples": [["sump pump", "relevant_for", "basement flooding"], ["AchillesIDE", "uses", "sump pump"]]},
]
# the writes, one after another: facts only; units (one hidden from the clerk); the same file again with a
# unit changed and one gone; the facts file again with fewer facts (its symbols left without facts vanish)
WRITES = [
    ("facts.tdb", "nginx depends_on zlib. zlib depends_on libc. quarkbox provides sandboxing.\n"),
    ("units.jsonl", "".join(json.dumps(u) + "\n" for u in NEW_UNITS)),
    ("units.jsonl", json.dumps({**NEW_UNITS[0], "claim": "Memo GLD-12 (revised): gold tier claims use triage.",
                                "triples": [["gold tier", "uses", "triage"]]}) + "\n"),
    ("facts.tdb", "nginx depends_on zlib.\n"),
]
# the parts that read or build from the whole store (each must not run during an incremental refresh)
FULL_PATHS = [("thinkingdb.retrieval.lanes", "FactAccess", "__init__"), ("thinkingdb.store.sqlite", "Store", "units"),
              ("thinkingdb.retrieval.lanes", "Lanes", "_bm25_build"), ("thinkingdb.retrieval.lanes", "Lanes", "_hdc_build"),
              ("thinkingdb.retrieval.lanes", "Lanes", "_graph_build"),
              ("thinkingdb.retrieval.expansion", "SymbolMatcher", "__init__"),
              ("thinkingdb.store.sqlite", "Store", "labels"), ("thinkingdb.store.graphdelta", None, "build_graph")]


@pytest.fixture(autouse=True)
def no_time_bound(monkeypatch):
    """The closure's time bound cuts a search differently under load, so two servers could give
    different traces for one state: here it is far above what this small store needs (the depth, node
    and derived-fact bounds stay as they are)."""
    from dataclasses import replace

    from thinkingdb.retrieval import profiles

    builtin = profiles.get_profile

    def get_profile(profile):
        p = builtin(profile)
        return replace(p, closure=replace(p.closure, timeout_ms=600_000.0))
    monkeypatch.setattr(profiles, "get_profile", get_profile)


def _answers(svc: Service) -> dict:
    out = {}
    for name, who in CALLERS.items():
        for profile in ("kb-fast", "kb-balanced", "kb-thinkingdb"):
            for text in ("gold tier fast track", "why is AchillesIDE relevant for basement flooding",
                         "basement flooding rule"):
                res = svc.search(who, {"text": text, "profile": profile, "as_of": AS_OF, "labels": True})
                out[name, "search", profile, text] = (res["results"], _no_timings(res["trace"]), res.get("labels"))
        for q in ("? ?s uses ?o", "? nginx depends_on+ ?x", "? ?s relevant_for ?o", "? gold_tier uses ?o"):
            out[name, "query", q] = svc.query(who, {"query": q, "as_of": AS_OF, "labels": True})
        for f in ("achilleside relevant_for basement_flooding", "nginx depends_on libc", "gold_tier uses fast_track"):
            out[name, "why", f] = svc.why(who, {"fact": f, "as_of": AS_OF, "labels": True})
        stats = svc.stats(who, {"as_of": AS_OF})
        out[name, "stats"] = {k: v for k, v in stats.items() if k != "generation"}
        for key in ("gold_tier", "sump_pump", "zlib", "quarkbox", "sandboxing"):
            try:
                out[name, "symbol", key] = svc.symbol(who, key, {"as_of": AS_OF})
            except LookupError:
                out[name, "symbol", key] = 404
        for uid in ("gold-memo", "pump-note", "ide-profile"):
            try:
                out[name, "unit", uid] = svc.unit(who, uid, {"as_of": AS_OF})
            except LookupError:
                out[name, "unit", uid] = 404
    return out


def _no_timings(value):
    if isinstance(value, dict):
        return {k: _no_timings(v) for k, v in value.items() if not (k == "ms" or k.endswith("_ms")) or k == "timeout_ms"}
    if isinstance(value, list):
        return [_no_timings(v) for v in value]
    return value


@pytest.fixture
def counted(monkeypatch):
    import importlib
    calls: dict[str, int] = {}
    for module, cls, name in FULL_PATHS:
        owner = importlib.import_module(module)
        owner = getattr(owner, cls) if cls else owner
        real = getattr(owner, name)
        label = f"{cls or module}.{name}"
        calls[label] = 0

        def wrapper(*a, _real=real, _label=label, **kw):
            calls[_label] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_a_write_refreshes_the_snapshot_from_the_old_one_and_answers_as_a_fresh_server(tmp_path, counted):
    db, _ = build(tmp_path)
    svc = Service(db)
    try:
        before = _answers(svc)    # warms every caller's views (indexes, graphs, matchers)
        seen_before = set(before)
        for i, (name, text) in enumerate(WRITES):
            for k in counted:
                counted[k] = 0
            report = svc.ingest(WRITER, {"files": [{"name": name, "text": text}]})
            assert report["generation"] == svc.generation
            assert svc.refreshes == {"incremental": i + 1, "full": 0}
            assert counted == {k: 0 for k in counted}, f"write {i}: a full-store path ran during the refresh"
            got = _answers(svc)
            assert counted == {k: 0 for k in counted}, f"write {i}: a warm view was rebuilt after the refresh"
            fresh = Service(db)
            try:
                want = _answers(fresh)
            finally:
                fresh.close()
            assert set(got) == seen_before
            for key in want:
                assert got[key] == want[key], (i, key)
        # the writes did change what is served (the comparison above is not between unchanged states)
        assert got != before
        q = ("auditor", "query", "? gold_tier uses ?o")
        assert [a["bindings"]["o"] for a in got[q]["answers"]] == ["triage"]
        assert before[q]["answers"] == []
        assert got["clerk", "query", q[2]]["answers"] == []
        assert got["clerk", "unit", "gold-memo"] == 404 and got["auditor", "unit", "gold-memo"] != 404
        assert got["public", "symbol", "sandboxing"] == 404 and got["public", "symbol", "zlib"] != 404
    finally:
        svc.close()


def test_a_write_the_log_does_not_cover_is_read_whole(tmp_path):
    import sqlite3
    db, _ = build(tmp_path)
    svc = Service(db)
    try:
        svc.query(CALLERS["public"], {"query": "? a r ?x"})
        conn = sqlite3.connect(db)                   # a write by code that keeps no log: a gap in it
        with conn:
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        conn.close()
        svc.ingest(WRITER, {"files": [{"name": "x.tdb", "text": "a r b.\n"}]})
        assert svc.refreshes == {"incremental": 0, "full": 1}
        assert [a["bindings"]["x"] for a in svc.query(CALLERS["public"], {"query": "? a r ?x"})["answers"]] == ["b"]
    finally:
        svc.close()


def test_retired_snapshots_are_freed(tmp_path):
    """A retired snapshot's lanes are dropped once its last reader is done (the lanes cache holds its
    knowledge base only weakly, but the lanes refer back to it: closing must drop them)."""
    import gc
    from thinkingdb.retrieval.lanes import Lanes
    db, _ = build(tmp_path)
    svc = Service(db)
    try:
        for n in range(4):
            svc.search(CALLERS["clerk"], {"text": "basement flooding", "as_of": AS_OF})
            svc.ingest(WRITER, {"files": [{"name": "a.tdb", "text": f"x{n} r y{n}.\n"}]})
        gc.collect()
        mine = [o for o in gc.get_objects() if isinstance(o, Lanes) and o.kb.path == db]
        assert len(mine) == 1 and mine[0].generation == svc.generation
    finally:
        svc.close()
