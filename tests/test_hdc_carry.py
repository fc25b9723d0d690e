"""The HDC index carried from an earlier store state through the change log
(thinkingdb/retrieval/hdccarry.py): after generated sequences of writes (units added, replaced under
the same id, sources re-ingested with other text or fewer units, retracted, facts only) every search
of the carried index — ids, scores, order, with and without an ``allowed`` filter and a role — equals
the one of an index built from scratch over the store's units now (the oracle: ``add_many`` over
every unit, what ``Lanes`` builds when nothing is saved; and the whole pipeline with carrying turned
off). A write of one unit re-encodes that unit only; a gap in the change log, another parameter or
tokenizer, a corrupt blob or a saved index of other units rebuilds."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdc import HDCIndex, HDCParams
from thinkingdb.api import KnowledgeBase
from thinkingdb.retrieval import hdccarry
from thinkingdb.retrieval import lanes as lanes_mod
from thinkingdb.retrieval.lanes import _unit_fields, lanes_for
from thinkingdb.retrieval.profiles import BUILTIN
from thinkingdb.store.access import Caller

WORDS = ["alder", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath"]
ROLES = ["", "policy", "procedure"]
QUERIES = [("alder birch", None), ("cedar", None), ("embr fjrd grove", None), ("heath dune alder", "policy"),
           ("birch cedar", "procedure"), ("qwertyuiop", None)]


def _search_all(idx: HDCIndex, ids: list[str]) -> list:
    """Every query, over all units and over every other unit id, with its role: ``(id, score)`` lists."""
    allowed = frozenset(sorted(ids)[::2])
    return [idx.search(q, k=50, role=role, allowed=a) for q, role in QUERIES for a in (None, allowed)]


def _oracle(kb) -> tuple[list, list[str]]:
    """The searches of an index built from scratch over the store's units now."""
    lanes = lanes_for(kb)
    idx = HDCIndex(HDCParams(), tokenizer=lanes.tokenizer)
    idx.add_many((u.id, _unit_fields(u)) for u in lanes.units)
    ids = [u.id for u in lanes.units]
    return _search_all(idx, ids), ids


def _carried(db: str) -> tuple[str, list, list]:
    """How a fresh process gets the HDC index (built, carried or loaded), its searches and the oracle's."""
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = lanes_for(kb)
        idx, _ = lanes.hdc()
        how = "built" if "hdc" in lanes.built else "carried" if "hdc" in lanes.carried else "loaded"
        want, ids = _oracle(kb)
        assert sorted(idx) == sorted(ids)
        return how, _search_all(idx, ids), want


def _write_units(path: Path, units: list[dict]) -> str:
    path.write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    return str(path)


text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
content = st.fixed_dictionaries({"topic": text, "claim": text, "role": st.sampled_from(ROLES)},
                                optional={"utility_acts": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)})
contents = st.lists(content, min_size=1, max_size=4)
op = st.one_of(st.tuples(st.just("add"), contents),
               st.tuples(st.just("reingest"), st.integers(0, 10), contents),   # same ids, other text, more or fewer
               st.tuples(st.just("retract"), st.integers(0, 10)),
               st.tuples(st.just("facts"), st.sampled_from(WORDS)))


def _source(tmp: Path, name: str, got: list[dict]) -> str:
    """A file of units ``{name}-0``, ``{name}-1``, ... (a unit id belongs to one source)."""
    return _write_units(tmp / f"{name}.jsonl", [{"id": f"{name}-{k}", **c} for k, c in enumerate(got)])


def _apply(tmp: Path, db: str, sources: list[str], step: int, write) -> None:
    with KnowledgeBase(db, default_rules=False) as kb:
        kind = write[0]
        if kind == "add":
            path = _source(tmp, f"a{step}", write[1])
            kb.ingest([path])
            sources.append(path)
        elif kind == "reingest" and sources:
            kb.ingest([_source(tmp, Path(sources[write[1] % len(sources)]).stem, write[2])])
        elif kind == "retract" and sources:
            with kb.store.transaction():
                kb.store.retract_source(sources.pop(write[1] % len(sources)))
        else:
            f = tmp / f"f{step}.tdb"
            f.write_text(f"{write[-1] if kind == 'facts' else 'alder'} s{step} birch @0.7.\n", encoding="utf-8")
            kb.ingest([str(f)])


def _store(tmp: Path, path: str) -> str:
    """A store of the units of ``path`` and a fact, its HDC index built and saved. (The first write of
    facts to a store without any is a bulk load, which the change log does not record: a gap.)"""
    db = str(tmp / "kb.sqlite")
    (tmp / "base.tdb").write_text("alder r birch @0.5.\n", encoding="utf-8")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([path, str(tmp / "base.tdb")])
    assert _carried(db)[0] == "built"
    return db


@settings(max_examples=40, deadline=None)
@given(base=contents, writes=st.lists(op, min_size=1, max_size=6), resave=st.booleans())
def test_after_generated_writes_the_carried_index_searches_as_one_built_from_scratch(base, writes, resave):
    tmp = Path(tempfile.mkdtemp(prefix="tdb-hdccarry-"))
    try:
        sources = [_source(tmp, "base", base)]
        db = _store(tmp, sources[0])
        # resave: every carried index saved again, so the next carry starts from a patched one
        with mock.patch.object(hdccarry, "SAVE_AFTER", -1 if resave else hdccarry.SAVE_AFTER):
            for step, write in enumerate(writes):
                _apply(tmp, db, sources, step, write)
                how, got, want = _carried(db)
                assert how == "carried", (step, write)
                assert got == want, (step, write)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


BASE = [{"id": f"u{i}", "topic": WORDS[i % 8], "claim": f"{WORDS[(i * 3) % 8]} {WORDS[(i + 1) % 8]}",
         "role": ROLES[i % 3], **({"acl": ["x"]} if i % 4 == 0 else {})} for i in range(12)]
BASE.append({"id": "twin", "topic": BASE[1]["topic"], "claim": BASE[1]["claim"], "role": BASE[1]["role"]})


@pytest.fixture
def store(tmp_path):
    return _store(tmp_path, _write_units(tmp_path / "base.jsonl", BASE))


def _one_unit(tmp_path, db, uid="new-1", claim="tls for nginx alder") -> None:
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([_write_units(tmp_path / f"{uid}.jsonl", [{"id": uid, "claim": claim}])])


def test_a_one_unit_write_encodes_that_unit_only_and_saves_nothing(tmp_path, store, monkeypatch):
    _one_unit(tmp_path, store)
    encoded = []
    real = HDCIndex.add_many

    def add_many(self, pairs, **kw):
        pairs = list(pairs)
        encoded.extend(pairs)
        return real(self, pairs, **kw)
    monkeypatch.setattr(HDCIndex, "add_many", add_many)
    saved = []
    monkeypatch.setattr(lanes_mod.Lanes, "_save", lambda self, name, record, obj: saved.append(name))
    for _ in range(2):   # the next process carries it again (the saved one leans on one write)
        with KnowledgeBase(store, default_rules=False) as kb:
            lanes_for(kb).hdc()
            assert lanes_for(kb).carried == {"hdc": False}
        assert [uid for uid, _ in encoded] == ["new-1"] and saved == []
        encoded.clear()
    monkeypatch.undo()
    how, got, want = _carried(store)
    assert how == "carried" and got == want


def test_the_pipeline_answers_as_with_carrying_off(tmp_path, store, monkeypatch):
    profile = dataclasses.replace(BUILTIN["kb-balanced"], hdc="always")
    callers = [Caller(), Caller(tags=("x",))]

    def answers():
        with KnowledgeBase(store, default_rules=False) as kb:
            got = [json.dumps(kb.search(q, profile=profile, caller=c, role=role).to_json()["results"])
                   for q, role in QUERIES for c in callers]
            assert "hdc" in lanes_for(kb).carried
            return got

    _one_unit(tmp_path, store)
    with KnowledgeBase(store, default_rules=False) as kb:   # a unit rewritten, one retracted
        kb.ingest([_write_units(tmp_path / "base.jsonl", [{**u, "claim": "heath dune alder"} if u["id"] == "u3" else u
                                                          for u in BASE if u["id"] != "u7"])])
    carried = answers()
    with monkeypatch.context() as m:   # the oracle: nothing loaded, carried or saved
        m.setattr(lanes_mod.Lanes, "_load", lambda self, name, record: None)
        m.setattr(lanes_mod.Lanes, "_save", lambda self, name, record, obj: None)
        m.setattr(hdccarry, "carry", lambda *a: None)
        with KnowledgeBase(store, default_rules=False) as kb:
            assert [json.dumps(kb.search(q, profile=profile, caller=c, role=role).to_json()["results"])
                    for q, role in QUERIES for c in callers] == carried
            assert "hdc" in lanes_for(kb).built


@pytest.mark.parametrize("gap", ["log row deleted", "log dropped"])
def test_a_gap_in_the_change_log_rebuilds(tmp_path, store, gap):
    _one_unit(tmp_path, store)
    with KnowledgeBase(store, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.conn.execute("DELETE FROM change_log" if gap == "log row deleted" else "DROP TABLE change_log")
    how, got, want = _carried(store)
    assert how == "built" and got == want


def test_another_parameter_rebuilds(tmp_path, store, monkeypatch):
    _one_unit(tmp_path, store)
    monkeypatch.setitem(HDCParams.__init__.__kwdefaults__, "ngram", 4)   # HDCParams() now has ngram 4
    assert HDCParams().ngram == 4
    how, got, want = _carried(store)
    assert how == "built" and got == want


def test_another_tokenizer_in_the_saved_record_rebuilds(tmp_path, store):
    _one_unit(tmp_path, store)
    with KnowledgeBase(store, default_rules=False) as kb:
        params = json.loads(kb.store.conn.execute("SELECT params FROM lane_indexes WHERE name = 'hdc'").fetchone()[0])
        params["tokenizer"]["stopwords"] = "another list"
        with kb.store.transaction():
            kb.store.conn.execute("UPDATE lane_indexes SET params = ? WHERE name = 'hdc'", (json.dumps(params),))
    how, got, want = _carried(store)
    assert how == "built" and got == want


@pytest.mark.parametrize("blob", ["truncated", "not an index", "an index of other units"])
def test_a_corrupt_or_foreign_saved_blob_rebuilds(tmp_path, store, blob):
    _one_unit(tmp_path, store)
    with KnowledgeBase(store, default_rules=False) as kb:
        (data,) = kb.store.conn.execute("SELECT data FROM lane_indexes WHERE name = 'hdc'").fetchone()
        if blob == "truncated":
            data = data[: len(data) // 2]
        elif blob == "not an index":
            data = b"\x00" * len(data)
        else:   # a well-formed index under the same record, one unit short: not this store's
            import io
            idx = HDCIndex.load(io.BytesIO(data), tokenizer=lanes_for(kb).tokenizer)
            idx.remove("u5")
            buf = io.BytesIO()
            idx.save(buf)
            data = buf.getvalue()
        with kb.store.transaction():
            kb.store.conn.execute("UPDATE lane_indexes SET data = ? WHERE name = 'hdc'", (data,))
    how, got, want = _carried(store)
    assert how == "built" and got == want
