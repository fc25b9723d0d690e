"""A view's BM25 index carried from an earlier store state through the change log
(thinkingdb/retrieval/lexcarry.py): after random writes (facts only, units added, rewritten, made
hidden, retracted) every search equals the one of an index built from scratch (the oracle: the
bulk build over the visible units, and the whole pipeline with carrying turned off); a write of
facts only loads the saved index and builds nothing; a gap in the change log rebuilds."""

from __future__ import annotations

import json
import random

import pytest

from lexical import BM25Index
from thinkingdb.api import KnowledgeBase
from thinkingdb.retrieval import lanes as lanes_mod
from thinkingdb.retrieval import lexcarry
from thinkingdb.retrieval.lanes import _unit_fields, lanes_for
from thinkingdb.store.access import Caller, parse_date

DAY = "2026-06-01"
WORDS = ["alder", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet", "jetty", "kelp", "loam"]
CALLERS = [Caller(), Caller(tags=("x",), region="eu"), Caller(tags=("y",))]
QUERIES = WORDS + ["alder birch", "cedar dune ember", "grove heath inlet kelp", "loam alder fjord"]


def _unit(rng: random.Random, uid: str) -> dict:
    u = {"id": uid, "topic": rng.choice(WORDS), "claim": " ".join(rng.choices(WORDS, k=rng.randint(1, 6))),
         "triples": [[rng.choice(WORDS), "r", rng.choice(WORDS), 0.5]] if rng.random() < 0.5 else []}
    if rng.random() < 0.4:
        u["acl"] = rng.sample(["x", "y"], rng.randint(1, 2))
    if rng.random() < 0.2:
        u["region"] = "eu"
    return u


def _write(path, units) -> str:
    path.write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    return str(path)


def _hits(kb, caller) -> tuple[dict, list]:
    """What ``kb``'s lanes do for ``caller`` (built/carried) and their BM25 hits for every query."""
    lanes = lanes_for(kb)
    view = lanes.access.view(caller, parse_date(DAY))
    idx, _ = lanes.bm25(view)
    key = f"bm25:{'all' if view.everything else view.fingerprint}"
    how = "built" if key in lanes.built else "carried" if key in lanes.carried else "loaded"
    return how, [[(h.doc_id, h.score) for h in idx.search(q, k=50)] for q in QUERIES]


def _oracle(kb, caller) -> list:
    """The same searches on an index built from scratch over the units ``caller`` sees now."""
    lanes = lanes_for(kb)
    view = lanes.access.view(caller, parse_date(DAY))
    idx = BM25Index(tokenizer=lanes.tokenizer)
    idx.rebuild((u.id, _unit_fields(u)) for i, u in enumerate(lanes.units) if view.mask[i])
    return [[(h.doc_id, h.score) for h in idx.search(q, k=50)] for q in QUERIES]


def _pipeline(db, caller) -> list:
    with KnowledgeBase(db, default_rules=False) as kb:
        return [json.dumps(kb.search(q, profile="kb-fast", caller=caller, as_of=DAY).to_json()["results"])
                for q in QUERIES[:6]]


@pytest.fixture
def store(tmp_path):
    rng = random.Random(5)
    units = [_unit(rng, f"u{i:03d}") for i in range(40)]
    db = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([_write(tmp_path / "units.jsonl", units)])
    for caller in CALLERS:
        with KnowledgeBase(db, default_rules=False) as kb:
            assert _hits(kb, caller)[0] == "built"
    return db, units


def _random_write(rng: random.Random, tmp_path, db, units: list, step: int) -> str:
    kind = rng.choice(["facts", "facts", "add", "rewrite", "hide", "retract"])
    with KnowledgeBase(db, default_rules=False) as kb:
        if kind == "facts":
            f = tmp_path / f"f{step}.tdb"
            f.write_text(f"{rng.choice(WORDS)} s{step} {rng.choice(WORDS)} @0.7.\n", encoding="utf-8")
            kb.ingest([str(f)])
        elif kind == "add":
            kb.ingest([_write(tmp_path / f"a{step}.jsonl", [_unit(rng, f"n{step}")])])
        elif kind in ("rewrite", "hide"):   # the first file again: every unit's row replaced
            for u in rng.sample(units, 3):
                if kind == "rewrite":
                    u["claim"] = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
                else:
                    u["acl"] = ["z"]
            kb.ingest([_write(tmp_path / "units.jsonl", units)])
        else:   # a source of units, or of facts only
            sources = sorted(str(p) for p in tmp_path.glob("[af]*.*") if kb.store.has_source(str(p)))
            if not sources:
                return _random_write(rng, tmp_path, db, units, step)
            with kb.store.transaction():
                kb.store.retract_source(rng.choice(sources))
    return kind


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_after_random_writes_the_carried_index_searches_as_one_built_from_scratch(tmp_path, store, seed):
    db, units = store
    rng = random.Random(seed)
    seen = set()
    for step in range(10):
        kind = _random_write(rng, tmp_path, db, units, step)
        for caller in CALLERS:
            with KnowledgeBase(db, default_rules=False) as kb:
                how, got = _hits(kb, caller)
                assert got == _oracle(kb, caller), (step, kind, caller)
                if kind == "facts":
                    assert how == "carried", (step, kind, caller)
                seen.add((kind, how))
    assert {k for k, how in seen if how == "carried"} >= {"facts", "add", "rewrite", "hide"} & {k for k, _ in seen}


def test_the_pipeline_answers_as_with_carrying_off(tmp_path, store, monkeypatch):
    db, units = store
    rng = random.Random(9)
    for step in range(5):
        _random_write(rng, tmp_path, db, units, step)
        carried = {c: _pipeline(db, c) for c in CALLERS}
        with monkeypatch.context() as m:   # the oracle: nothing loaded, carried or saved
            m.setattr(lanes_mod.Lanes, "_load", lambda self, name, record: None)
            m.setattr(lanes_mod.Lanes, "_save", lambda self, name, record, obj: None)
            m.setattr(lexcarry, "carry", lambda *a: None)
            assert {c: _pipeline(db, c) for c in CALLERS} == carried


def test_a_write_of_facts_only_builds_nothing(tmp_path, store, monkeypatch):
    db, _ = store
    (tmp_path / "one.tdb").write_text("alder uses birch @0.9.\n", encoding="utf-8")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([str(tmp_path / "one.tdb")])
    rebuilds = []
    real = BM25Index.rebuild
    monkeypatch.setattr(BM25Index, "rebuild", lambda self, docs: rebuilds.append(1) or real(self, docs))
    for caller in CALLERS:
        with KnowledgeBase(db, default_rules=False) as kb:
            how, got = _hits(kb, caller)
            assert (how, rebuilds) == ("carried", [])
            assert list(lanes_for(kb).carried.values()) == [False]   # not saved again: nothing patched
            assert got == _oracle(kb, caller)
            rebuilds.clear()


@pytest.mark.parametrize("gap", ["log row deleted", "log dropped"])
def test_a_gap_in_the_change_log_rebuilds(tmp_path, store, gap):
    db, _ = store
    (tmp_path / "one.tdb").write_text("alder uses birch @0.9.\n", encoding="utf-8")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([str(tmp_path / "one.tdb")])
        with kb.store.transaction():
            if gap == "log row deleted":
                kb.store.conn.execute("DELETE FROM change_log")
            else:
                kb.store.conn.execute("DROP TABLE change_log")
    for caller in CALLERS:
        with KnowledgeBase(db, default_rules=False) as kb:
            how, got = _hits(kb, caller)
            assert how == "built" and got == _oracle(kb, caller)
