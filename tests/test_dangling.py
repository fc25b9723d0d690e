"""A provenance record naming a unit the store does not hold (a dangling unit id) is visible to no
one (store/access.py, docs/access.md): hand-computed cases, cold (computed in SQL), from the view file,
derived after a write through the change log, and in a store without units."""

from __future__ import annotations

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.model import Fact, Triple
from thinkingdb.store import viewfile
from thinkingdb.store.access import AccessTable, Caller, parse_date
from thinkingdb.store.sqlite import Unit
from thinkingdb.store.stateread import read_access

DAY = "2026-06-01"
ANON, X = Caller(), Caller(tags=("x",))          # X sees every unit of the store


def _facts(st, rows) -> None:
    with st.transaction():
        st.add_facts([(Fact(s, "r", o, c), src, i, uid) for i, (s, o, c, src, uid) in enumerate(rows)])


def _rows(db: str, caller: Caller) -> list[tuple]:
    with KnowledgeBase(db, default_rules=False) as kb:
        return kb.view(caller, DAY).fact_rows()


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path, default_rules=False) as kb:
        st = kb.store
        with st.transaction():
            st.add_units([(Unit("pub"), 1), (Unit("sec", acl=("x",)), 2)], source="u.jsonl")
        _facts(st, [("a", "b", 0.9, "g.tdb", "ghost"),                              # only a dangling unit
                    ("c", "d", 0.9, "g.tdb", "ghost"), ("c", "d", 0.4, "u.jsonl", "pub"),   # dangling + visible
                    ("e", "f", 0.9, "g.tdb", "ghost"), ("e", "f", 0.3, "p.tdb", None),      # dangling + public .tdb
                    ("g", "h", 0.8, "g.tdb", "later"),                              # its unit comes later
                    ("i", "j", 0.7, "u.jsonl", "sec"), ("k", "l", 0.6, "u.jsonl", "pub")])
    return path


# hand-computed: a-b hidden from all; c-d at the visible unit's 0.4, e-f at the file's 0.3; g-h hidden
BOTH = [("c", "r", "d", 0.4), ("e", "r", "f", 0.3), ("k", "r", "l", 0.6)]
WANT = {ANON: BOTH, X: sorted(BOTH + [("i", "r", "j", 0.7)])}


@pytest.mark.parametrize("caller", [ANON, X])
def test_a_dangling_record_shows_nothing_computed_read_and_derived(db, caller):
    assert _rows(db, caller) == WANT[caller]          # computed in SQL, written
    assert _rows(db, caller) == WANT[caller]          # read from the file
    with KnowledgeBase(db, default_rules=False) as kb:
        table = AccessTable.from_rows(read_access(kb.store.conn))
        assert table.dangling == ("ghost", "later") and not table.view(X, parse_date(DAY)).everything
        _facts(kb.store, [("a", "b", 0.5, "g2.tdb", "ghost2")])     # a write: one more dangling record
    assert _rows(db, caller) == WANT[caller]          # derived through the log


@pytest.mark.parametrize("acl, seen_by", [((), (ANON, X)), (("x",), (X,))])
def test_the_unit_ingested_later_makes_its_fact_visible(db, acl, seen_by):
    for caller in (ANON, X):
        assert _rows(db, caller) == WANT[caller]
    with KnowledgeBase(db, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.add_units([(Unit("later", acl=acl), 3)], source="u.jsonl")
    for caller in (ANON, X):      # derived from the files of the earlier state (the access table patched)
        want = sorted(WANT[caller] + ([("g", "r", "h", 0.8)] if caller in seen_by else []))
        assert _rows(db, caller) == want
    got = viewfile._read_access_file(db)
    assert got is not None and got[1].dangling == ("ghost",)


def test_a_store_without_units(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path, default_rules=False) as kb:
        _facts(kb.store, [("a", "b", 0.9, "g.tdb", "ghost"), ("e", "f", 0.9, "g.tdb", "ghost"),
                          ("e", "f", 0.3, "p.tdb", None), ("m", "n", 1.0, "p.tdb", None)])
    for caller in (ANON, X):
        assert _rows(path, caller) == [("e", "r", "f", 0.3), ("m", "r", "n", 1.0)]
    with KnowledgeBase(path, default_rules=False, graph_file=False) as kb:
        assert kb.view(ANON, DAY).fact_rows() == [("e", "r", "f", 0.3), ("m", "r", "n", 1.0)]


def test_a_process_holding_every_provenance_row_names_the_same_dangling_ids(db):
    """FactAccess (the eager rows a server holds) finds the dangling ids the access table read whole
    does: those a table made from the units alone lacks."""
    from thinkingdb.store.access import FactAccess
    with KnowledgeBase(db, default_rules=False) as kb:
        fa = FactAccess(kb.store)
        table = AccessTable(kb.store.units())
        assert table.dangling == () and fa.dangling(table) == ("ghost", "later")
        assert fa.visible_confidence(Triple("a", "r", "b"), lambda uid: table.find(uid) >= 0) is None   # only dangling
        assert fa.visible_confidence(Triple("c", "r", "d"), lambda uid: table.find(uid) >= 0) == 0.4
