"""A caller's view read lazily and persisted per store state (issue 20): same visibility as the rule of
docs/access.md, hand-computed on a small store and compared with an independent oracle on generated
ones; a write makes every persisted part stale, and a stale, torn or corrupt file is recomputed."""

from __future__ import annotations

import json
import os
import random

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.store import viewfile
from thinkingdb.store.graphfile import map_container
from thinkingdb.store.access import Caller, FactAccess, parse_date, unit_visible
from thinkingdb.store.sqlite import Unit
from thinkingdb.store.stateread import StaleRead

DAY = "2026-06-01"
UNITS = [
    {"id": "pub", "triples": [["a", "r", "b", 0.5], ["e", "r", "f", 0.7]]},
    {"id": "sec", "acl": ["x"], "triples": [["a", "r", "b", 0.9], ["c", "r", "d", 0.8], ["g", "r", "h", 0.8]]},
    {"id": "old", "effective_to": "2025-12-31", "triples": [["k", "r", "l", 0.6]]},
    {"id": "eu", "region": "EU", "triples": [["m", "r", "n", 0.6]]},
]
FACTS = "g r h @0.4.\np r q.\n"
ANON = Caller()
X_EU = Caller(tags=("x",), region="eu")
# by hand, from the rule (a fact is visible iff a visible unit or a source outside units asserts it,
# at its best visible confidence)
EXPECTED = {
    (ANON, DAY): [("a", "r", "b", 0.5), ("e", "r", "f", 0.7), ("g", "r", "h", 0.4), ("p", "r", "q", 1.0)],
    (X_EU, DAY): [("a", "r", "b", 0.9), ("c", "r", "d", 0.8), ("e", "r", "f", 0.7), ("g", "r", "h", 0.8),
                  ("m", "r", "n", 0.6), ("p", "r", "q", 1.0)],
    (X_EU, "2025-06-01"): [("a", "r", "b", 0.9), ("c", "r", "d", 0.8), ("e", "r", "f", 0.7), ("g", "r", "h", 0.8),
                           ("k", "r", "l", 0.6), ("m", "r", "n", 0.6), ("p", "r", "q", 1.0)],
    (Caller(tags=("x",)), DAY): [("a", "r", "b", 0.9), ("c", "r", "d", 0.8), ("e", "r", "f", 0.7),
                                 ("g", "r", "h", 0.8), ("p", "r", "q", 1.0)],
}


def random_unit(rng: random.Random, uid: str, syms: list[str], topics: list[str], max_triples: int,
                acl_p: float) -> dict:
    """A unit dictionary for the random-write tests (here and tests/test_viewderive.py): a topic, up to
    ``max_triples`` triples over ``syms``, acl tags with probability ``acl_p``, sometimes a region and
    an expired or not-yet-effective date."""
    u = {"id": uid, "topic": rng.choice(topics),
         "triples": [[rng.choice(syms), rng.choice(("r", "t")), rng.choice(syms), rng.choice((0.3, 0.5, 0.8, 1.0))]
                     for _ in range(rng.randint(0, max_triples))]}
    if rng.random() < acl_p:
        u["acl"] = rng.sample(["x", "y", "z"], rng.randint(1, 2))
    if rng.random() < 0.3:
        u["region"] = rng.choice(["eu", "us"])
    when = rng.random()
    if when < 0.2:
        u["effective_to"] = "2025-12-31"
    elif when < 0.4:
        u["effective_from"] = "2026-03-01"
    return u


def _write(path, units) -> str:
    path.write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    return str(path)


@pytest.fixture
def db(tmp_path):
    (tmp_path / "facts.tdb").write_text(FACTS, encoding="utf-8")
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path, default_rules=False) as kb:
        kb.ingest([_write(tmp_path / "units.jsonl", UNITS), str(tmp_path / "facts.tdb")])
    return path


def rows(db: str, caller: Caller, day: str = DAY, **kw) -> list[tuple]:
    """The visible facts of ``caller`` as a fresh process sees them (a new knowledge base object)."""
    with KnowledgeBase(db, default_rules=False, **kw) as kb:
        return kb.view(caller, day).fact_rows()


@pytest.fixture
def computed(monkeypatch):
    """Counts the views whose differences are computed from the store (not read from their file)."""
    calls = []
    real = viewfile.hidden_changes
    monkeypatch.setattr(viewfile, "hidden_changes", lambda conn, ids: calls.append(len(ids)) or real(conn, ids))
    return calls


@pytest.mark.parametrize("caller, day", list(EXPECTED))
def test_visibility_by_hand_cold_then_from_the_file(db, computed, caller, day):
    sees_all = (caller, day) == (X_EU, "2025-06-01")             # every unit: the full graph, nothing to compute
    assert rows(db, caller, day) == EXPECTED[caller, day]       # cold: computed and written
    assert len(computed) == (0 if sees_all else 1)
    assert rows(db, caller, day) == EXPECTED[caller, day]       # warm: read from the view file
    assert len(computed) == (0 if sees_all else 1)
    assert os.path.exists(db + ".access")


def test_a_fact_of_a_hidden_and_a_visible_unit_is_visible_and_of_a_hidden_one_only_hidden(db):
    with KnowledgeBase(db, default_rules=False) as kb:
        answers = {(a.bindings["s"], a.bindings["o"]): a.score for a in kb.query("? ?s r ?o", as_of=DAY).answers}
    assert answers[("a", "b")] == 0.5            # asserted by pub (visible, 0.5) and sec (hidden, 0.9)
    assert ("c", "d") not in answers             # asserted by sec only
    assert answers[("g", "h")] == 0.4            # outside units (0.4) and by sec (hidden, 0.8)


def test_without_a_graph_file_the_same_view(db):
    for (caller, day), want in EXPECTED.items():
        assert rows(db, caller, day, graph_file=False) == want


@pytest.mark.parametrize("change", ["new unit", "unit made public", "facts retracted"])
def test_a_write_makes_the_persisted_view_stale(tmp_path, db, computed, change):
    assert rows(db, ANON) == EXPECTED[ANON, DAY]
    stale = {name: open(os.path.join(tmp_path, name), "rb").read() for name in os.listdir(tmp_path)
             if name.startswith("kb.sqlite.graph.view") or name == "kb.sqlite.access"}
    with KnowledgeBase(db, default_rules=False) as kb:
        if change == "new unit":
            kb.ingest([_write(tmp_path / "more.jsonl", [{"id": "pub2", "triples": [["c", "r", "d", 0.3]]}])])
            want = sorted(EXPECTED[ANON, DAY] + [("c", "r", "d", 0.3)])
        elif change == "unit made public":   # no fact changes: only who may see them
            public = [{k: v for k, v in u.items() if k != "acl"} for u in UNITS]
            kb.ingest([_write(tmp_path / "units.jsonl", public)])
            want = [("a", "r", "b", 0.9), ("c", "r", "d", 0.8), ("e", "r", "f", 0.7), ("g", "r", "h", 0.8),
                    ("p", "r", "q", 1.0)]
        else:
            with kb.store.transaction():
                kb.store.retract_source(str(tmp_path / "facts.tdb"))
            want = [("a", "r", "b", 0.5), ("e", "r", "f", 0.7)]
    import sqlite3             # without the change log (tests/test_viewderive.py: with it, the view is derived)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM change_log")
    assert rows(db, ANON) == want
    assert len(computed) == 2
    for name in os.listdir(tmp_path):                # the old files put back, in every view slot: stale,
        if name.startswith("kb.sqlite.graph.view"):  # never trusted
            os.remove(os.path.join(tmp_path, name))
    for name, data in stale.items():
        targets = [name] if name == "kb.sqlite.access" else [f"kb.sqlite.graph.view{i}" for i in range(viewfile.VIEW_FILES)]
        for target in targets:
            with open(os.path.join(tmp_path, target), "wb") as fh:
                fh.write(data)
    assert rows(db, ANON) == want
    assert len(computed) == 3
    assert rows(db, ANON) == want                     # and written again
    assert len(computed) == 3


@pytest.mark.parametrize("damage", ["flip a data byte", "truncate", "garbage", "empty"])
@pytest.mark.parametrize("which", ["view", "access"])
def test_a_damaged_file_is_recomputed_never_trusted(tmp_path, db, computed, damage, which):
    assert rows(db, ANON) == EXPECTED[ANON, DAY]
    [name] = [n for n in os.listdir(tmp_path) if n.startswith("kb.sqlite.graph.view")] if which == "view" \
        else ["kb.sqlite.access"]
    path = os.path.join(tmp_path, name)
    data = bytearray(open(path, "rb").read())
    if damage == "flip a data byte":        # the first byte of the largest array
        header, _, buf = map_container(path, viewfile.VIEW_MAGIC if which == "view" else viewfile.ACCESS_MAGIC)
        name, (_, _, offset) = max(header["arrays"].items(), key=lambda kv: kv[1][1])
        start = (24 + int.from_bytes(bytes(buf[16:24]), "little") + 63) // 64 * 64
        buf.close()
        data[start + offset] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    else:
        data = bytearray()
    with open(path, "wb") as fh:
        fh.write(data)
    assert rows(db, ANON) == EXPECTED[ANON, DAY]
    assert len(computed) == (2 if which == "view" else 1)
    assert open(path, "rb").read() != bytes(data)      # rewritten


def test_a_lazy_read_after_another_write_is_refused_and_the_view_reads_again(tmp_path, db):
    with KnowledgeBase(db, default_rules=False) as kb:
        state = kb._state()
        with KnowledgeBase(db, default_rules=False) as other:
            other.ingest([_write(tmp_path / "more.jsonl", [{"id": "pub2", "triples": [["c", "r", "d", 0.3]]}])])
        with pytest.raises(StaleRead):
            list(state.units)
        with pytest.raises(StaleRead):
            state.facts.fact_units.get(_t("a", "r", "b"))
        assert kb.view(ANON, DAY).fact_rows() == sorted(EXPECTED[ANON, DAY] + [("c", "r", "d", 0.3)])


def _t(s, r, o):
    from thinkingdb.model import Triple
    return Triple(s, r, o)


# -- generated stores against an independent oracle ---------------------------------------------------
def _generated(tmp_path, seed: int) -> str:
    rng = random.Random(seed)
    syms = [f"s{i}" for i in range(12)]
    units = []
    for i in range(25):
        units.append(random_unit(rng, f"u{i:02d}", syms, syms + ["S3 and more", "no such symbol", ""], 4, 0.4))
    facts = "".join(f"{rng.choice(syms)} {rng.choice(('r', 't'))} {rng.choice(syms)} @{rng.choice((0.2, 0.6))}.\n"
                    for _ in range(8))
    (tmp_path / "f.tdb").write_text(facts, encoding="utf-8")
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path, default_rules=False) as kb:
        kb.ingest([_write(tmp_path / "u.jsonl", units), str(tmp_path / "f.tdb")])
    return path


def _oracle(db: str, caller: Caller, day: str) -> list[tuple]:
    """Every provenance row, visible when outside units or of a unit ``unit_visible`` accepts; a fact's
    confidence the best visible row's (written from the rule, not from the code under test)."""
    import sqlite3
    conn = sqlite3.connect(db)
    units = {}
    for uid, acl, region, start, end in conn.execute("SELECT id, acl, region, effective_from, effective_to FROM units"):
        units[uid] = Unit(uid, acl=tuple(json.loads(acl or "[]")), region=region or "", effective_from=start or "",
                          effective_to=end or "")
    best: dict[tuple, float] = {}
    for s, r, o, uid, c in conn.execute("SELECT f.subject, f.relation, f.object, p.unit_id, p.confidence "
                                        "FROM provenance p JOIN facts f ON f.id = p.fact"):
        if uid is None or (uid in units and unit_visible(units[uid], caller, parse_date(day))):
            best[s, r, o] = max(c, best.get((s, r, o), 0.0))
    conn.close()
    return sorted((*k, c) for k, c in best.items())


CALLERS = [ANON, Caller(tags=("x",)), Caller(tags=("y",), region="eu"), Caller(tags=("x", "z"), region="us")]


@pytest.mark.parametrize("seed", range(6))
def test_generated_stores_match_the_oracle_cold_warm_and_eager(tmp_path, seed):
    db = _generated(tmp_path, seed)
    for caller in CALLERS:
        for day in ("2025-06-01", DAY):
            want = _oracle(db, caller, day)
            assert rows(db, caller, day) == want            # computed in SQL, written
            assert rows(db, caller, day) == want            # read from the file
            assert rows(db, caller, day, graph_file=False) == want
            with KnowledgeBase(db, default_rules=False) as kb:   # a process holding every provenance row (serve)
                state = kb._state()
                state.facts = FactAccess(kb.store)
                from thinkingdb.retrieval.lanes import Lanes
                lanes = Lanes(kb, state)
                assert lanes.caller_view(caller, parse_date(day)).fact_rows() == want


@pytest.mark.parametrize("seed", range(3))
def test_lazy_fact_access_answers_as_the_eager_one(tmp_path, seed):
    db = _generated(tmp_path, seed)
    with KnowledgeBase(db, default_rules=False) as kb:
        state = kb._state()
        eager, lazy = FactAccess(kb.store), state.facts
        triples = [_t(*f[:3]) for f in kb.store.fact_rows()]
        for t in triples + [_t("no", "such", "fact")]:
            assert lazy.fact_units.get(t) == eager.fact_units.get(t)
            assert list(lazy.fact_units.get(t, {})) == list(eager.fact_units.get(t, {}))
            assert lazy.public.get(t) == eager.public.get(t)
        for u in [u.id for u in kb.store.units()] + ["nobody"]:
            assert lazy.unit_facts.get(u) == eager.unit_facts.get(u)
        assert dict(lazy.fact_units) == eager.fact_units          # read whole when iterated
        assert dict(lazy.unit_facts) == eager.unit_facts and dict(lazy.public) == eager.public


@pytest.mark.parametrize("seed", range(3))
def test_the_topic_index_read_without_the_units_text_is_the_units_one(tmp_path, seed):
    from thinkingdb.retrieval.lanes import Lanes, topic_key
    db = _generated(tmp_path, seed)
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        got, topics = lanes.topic_index(), lanes.topic_units()
        assert not lanes.units.loaded                       # ids and topics read, not the units
        want: dict[str, list[str]] = {}
        for u in kb.store.units():
            if (k := topic_key(u)) is not None:
                want.setdefault(k, []).append(u.id)
        assert got == want and got
        assert topics == {k: v for k, v in want.items() if kb.graph.symbol_id(k) is not None} and topics


def test_a_unit_is_found_by_id_without_reading_every_unit(db):
    from thinkingdb.retrieval.lanes import Lanes
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        assert lanes.by_id.get("sec") == kb.store.unit("sec") and lanes.by_id["pub"].id == "pub"
        assert "nobody" not in lanes.by_id and lanes.by_id.get("nobody") is None
        assert not lanes.units.loaded
        assert sorted(lanes.by_id) == ["eu", "old", "pub", "sec"]     # iterating reads them all
        assert lanes.units.loaded and isinstance(lanes.by_id, dict)
