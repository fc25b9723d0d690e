"""The first question after a small write derives the caller's view file and the access table from
those of the earlier state (or another caller's view file) and the change log (store/changelog.py,
store/viewderive.py), and they equal a recompute from scratch: random sequences of writes (ingest, retract, units added, replaced, made
visible or hidden, moved to another source, facts of unknown units) checked after every write against
an independent oracle (the visibility rule applied to every provenance row) and against the view and
access table computed whole; a gap in the log, a write another process made, a tampered record and a
view file of another caller each force a recompute or are seen, never trusted."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.model import Fact
from thinkingdb.store import changelog, deltacompose, graphdelta, viewcarry, viewderive, viewfile
from thinkingdb.store.access import AccessTable, Caller, parse_date
from thinkingdb.store.graphfile import store_stamp
from thinkingdb.store.sqlite import Unit
from thinkingdb.store.stateread import read_access

from test_access_persisted import _oracle as _rule_oracle, random_unit

_REAL_HIDDEN = viewfile.hidden_changes

DAYS = ("2026-06-01", "2025-06-01")
CALLERS = [Caller(), Caller(tags=("x",)), Caller(tags=("y",), region="eu"), Caller(tags=("x", "z"), region="us")]
SYMS = [f"s{i}" for i in range(10)]


def _oracle(db: str, caller: Caller, day: str) -> list[tuple]:
    """test_access_persisted's oracle: every provenance row visible when outside units or of a unit the
    store holds and the caller may see (a row of a unit the store does not hold is visible to no one)."""
    return _rule_oracle(db, caller, day)


@pytest.fixture
def counts(monkeypatch):
    """How many views were computed whole (``computed``) and derived (``derived``) so far."""
    got = {"computed": 0, "derived": 0, "access_derived": 0, "topics_derived": 0}
    real_hidden, real_derive = viewfile.hidden_changes, viewderive.derive
    real_patched = AccessTable.patched

    def hidden(conn, ids):
        got["computed"] += 1
        return real_hidden(conn, ids)

    def derive(*a, **kw):
        out = real_derive(*a, **kw)
        got["derived"] += out is not None
        return out

    def patched(self, *a):
        got["access_derived"] += 1
        return real_patched(self, *a)
    from thinkingdb.store import topicfile
    real_topics = topicfile.derive

    def topics(*a):
        out = real_topics(*a)
        got["topics_derived"] += out is not None
        return out
    monkeypatch.setattr(topicfile, "derive", topics)
    monkeypatch.setattr(viewfile, "hidden_changes", hidden)
    monkeypatch.setattr(viewderive, "derive", derive)
    monkeypatch.setattr(AccessTable, "patched", patched)
    return got


def _unit(rng: random.Random, uid: str) -> dict:
    return random_unit(rng, uid, SYMS, SYMS[:4] + ["S2", "no such symbol", ""], 3, 0.5)


def _write_units(path: str, units: list[dict]) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(u) + "\n" for u in units))
    return path


class World:
    """A small store and the files ingested into it, changed by random writes."""

    def __init__(self, root, seed: int) -> None:
        self.root, self.rng = str(root), random.Random(seed)
        self.db = os.path.join(self.root, "kb.sqlite")
        self.files: dict[str, list[dict]] = {}      # units file -> its units
        self.facts: list[str] = []                  # .tdb files
        self.next = 0
        self._ingest_units(6)
        self._ingest_facts()

    def _uid(self) -> str:
        self.next += 1
        return f"u{self.next:03d}"

    def _ingest_units(self, n: int) -> None:
        path = os.path.join(self.root, f"units{len(self.files)}.jsonl")
        self.files[path] = [_unit(self.rng, self._uid()) for _ in range(n)]
        with KnowledgeBase(self.db, default_rules=False) as kb:
            kb.ingest([_write_units(path, self.files[path])])

    def _ingest_facts(self) -> None:
        path = os.path.join(self.root, f"facts{len(self.facts)}.tdb")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{self.rng.choice(SYMS)} {self.rng.choice(('r', 't'))} {self.rng.choice(SYMS)} "
                             f"@{self.rng.choice((0.2, 0.6, 1.0))}.\n" for _ in range(self.rng.randint(1, 3))))
        self.facts.append(path)
        with KnowledgeBase(self.db, default_rules=False) as kb:
            kb.ingest([path])

    def step(self) -> str:
        """One random write; returns its name."""
        rng = self.rng
        op = rng.choice(["units", "replace", "facts", "retract", "acl", "owner", "ghost", "assert"])
        if op == "units":
            self._ingest_units(rng.randint(1, 2))
            return op
        if op == "facts":
            self._ingest_facts()
            return op
        with KnowledgeBase(self.db, default_rules=False) as kb:
            st = kb.store
            ids = [u.id for u in st.units()]
            if op == "replace" and self.files:        # a units file ingested again, changed
                path = rng.choice(sorted(self.files))
                units = [_unit(rng, u["id"]) if rng.random() < 0.6 else u for u in self.files[path]]
                if rng.random() < 0.3:
                    units.append(_unit(rng, self._uid()))
                self.files[path] = units
                kb.ingest([_write_units(path, units)])
            elif op == "retract" and (sorted(self.files) + self.facts):
                sources = sorted(self.files) + self.facts
                src = rng.choice(sources)
                with st.transaction():
                    st.retract_source(src)
                self.files.pop(src, None)
                if src in self.facts:
                    self.facts.remove(src)
            elif op == "acl" and ids:                   # a unit made visible or hidden, in place
                uid = rng.choice(ids)
                with st.transaction():
                    st.conn.execute("UPDATE units SET acl = ?, region = ?, effective_to = ? WHERE id = ?",
                                    (json.dumps(rng.choice([[], ["x"], ["z"]])), rng.choice(["", "eu", "us"]),
                                     rng.choice(["", "2025-12-31"]), uid))
            elif op == "owner" and ids:                 # a unit moved to another source, its columns changed
                uid = rng.choice(ids)
                with st.transaction():
                    st.add_units([(Unit(uid, acl=tuple(rng.choice([[], ["y"]])), region=rng.choice(["", "eu"])), 1)],
                                 source="moved.jsonl")
                for path, units in self.files.items():   # its file no longer holds it
                    self.files[path] = [u for u in units if u["id"] != uid]
            elif op == "ghost":                        # a fact of a unit the store does not hold
                with st.transaction():
                    st.add_facts([(Fact(rng.choice(SYMS), "r", rng.choice(SYMS), rng.choice((0.4, 0.9))),
                                   "ghost.tdb", 1, f"ghost{rng.randint(0, 2)}")])
            elif op == "assert" and ids:                # a unit asserts one more fact
                with st.transaction():
                    st.add_facts([(Fact(rng.choice(SYMS), rng.choice(("r", "t")), rng.choice(SYMS),
                                        rng.choice((0.3, 0.7, 1.0))), "extra.tdb", 1, rng.choice(ids))])
            else:
                op = None
        if op is None:             # nothing to do it on: units instead
            self._ingest_units(2)
            op = "units"
        return op


def _rows(db: str, caller: Caller, day: str) -> list[tuple]:
    with KnowledgeBase(db, default_rules=False) as kb:
        return kb.view(caller, day).fact_rows()


def _scratch_matches_files(db: str, caller: Caller, day: str) -> None:
    """The view file and the access table on disk equal those computed whole from the store now."""
    with KnowledgeBase(db, default_rules=False) as kb:
        state = kb._state()
        table = AccessTable.from_rows(read_access(kb.store.conn))
        if not len(table):          # no units: every caller sees every fact, nothing is persisted
            return
        got = viewfile._read_access_file(db)
        stamp = store_stamp(kb.store)
        assert got is not None and got[0] == [stamp.generation, stamp.token, stamp.max_fact]
        assert got[1].ids == table.ids
        view = table.view(caller, parse_date(day))
        assert np.array_equal(got[1].view(caller, parse_date(day)).mask, view.mask)
        if view.everything:
            return
        full = state.graph
        base = full.file
        hidden = [table.ids[i] for i in np.flatnonzero(~view.mask).tolist()]
        changes = _REAL_HIDDEN(kb.store.conn, hidden)
        on_disk = viewfile.open_view(db, view.fingerprint, stamp, base)
        assert on_disk is not None
        if not changes:
            if on_disk is viewfile.SAME:
                return
            want_h, want_a = graphdelta.compose(base, full.overlay, [])
        else:
            want_h, want_a = graphdelta.compose(base, full.overlay, changes)
        assert on_disk is not viewfile.SAME
        header, arrays, _ = on_disk
        assert header == {"new_relations": list(want_h["new_relations"]),
                          "removed_relations": [int(e) for e in want_h["removed_relations"]]}
        for k, v in want_a.items():
            assert np.array_equal(np.asarray(arrays[k]), np.asarray(v), equal_nan=v.dtype.kind == "f"), k


def _topics_match(db: str) -> None:
    """A fresh process's topic index (read from its file, derived, or made) is the units' own:
    ``symbol_key`` of every unit's topic, computed here."""
    import sqlite3
    from thinkingdb.normalize import symbol_key
    from thinkingdb.errors import ValidationError
    from thinkingdb.retrieval.lanes import Lanes
    want: dict[str, list[str]] = {}
    conn = sqlite3.connect(db)
    for uid, topic in conn.execute("SELECT id, topic FROM units ORDER BY id"):
        try:
            key = symbol_key(topic) if topic else None
        except ValidationError:
            key = None
        if key is not None:
            want.setdefault(key, []).append(uid)
    conn.close()
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        index = lanes.topic_index()
        assert dict(index.items()) == want
        for k in list(want) + ["nothing"]:
            assert index.get(k) == want.get(k)
        assert dict(lanes.topic_units().items()) == {k: v for k, v in want.items() if kb.graph.symbol_id(k) is not None}
        for k in list(want) + ["s9", "nothing"]:
            assert lanes.topic_units().get(k) == (want.get(k) if kb.graph.symbol_id(k) is not None else None)


@pytest.mark.parametrize("seed", range(8))
def test_random_writes_derive_what_a_recompute_gives(tmp_path, counts, seed):
    world = World(tmp_path, seed)
    for caller in CALLERS:
        for day in DAYS:
            assert _rows(world.db, caller, day) == _oracle(world.db, caller, day)
    ops = []
    for _ in range(10):
        ops.append(world.step())
        for caller in CALLERS:
            for day in DAYS:
                assert _rows(world.db, caller, day) == _oracle(world.db, caller, day), (ops, caller, day)
                _scratch_matches_files(world.db, caller, day)
        _topics_match(world.db)          # made or derived, and written
        _topics_match(world.db)          # read from the file
    assert counts["derived"] > 0 and counts["access_derived"] > 0 and counts["topics_derived"] > 0, (ops, counts)


def _anon_rows(db: str) -> list[tuple]:
    return _rows(db, Caller(), DAYS[0])


@pytest.fixture
def small(tmp_path):
    world = World(tmp_path, 1)
    assert _anon_rows(world.db) == _oracle(world.db, Caller(), DAYS[0])
    return world


def _units_write(world: World, **kw) -> None:
    path = os.path.join(world.root, "more.jsonl")
    with KnowledgeBase(world.db, default_rules=False, **kw) as kb:
        kb.ingest([_write_units(path, [{"id": "zz1", "acl": ["x"], "triples": [["s1", "r", "s2", 0.9]]},
                                       {"id": "zz2", "triples": [["s3", "r", "s4", 0.7]]}])])


def test_a_small_write_is_derived_not_computed(small, counts):
    before = counts["computed"]
    _units_write(small)
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    assert counts["computed"] == before and counts["derived"] == 1 and counts["access_derived"] == 1


def test_a_write_not_logged_is_a_gap_and_recomputed(small, counts):
    _units_write(small, graph_file=False)            # no change log record (and a stale graph file)
    with KnowledgeBase(small.db, default_rules=False) as kb:
        gen = kb.store.current_generation()
        assert kb.store.conn.execute("SELECT count(*) FROM change_log WHERE generation = ?", (gen,)).fetchone()[0] == 0
    before = counts["computed"]
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    assert counts["computed"] == before + 1 and counts["access_derived"] == 0


@pytest.mark.parametrize("tamper", ["delete the record", "another parent", "another stamp", "garbage"])
def test_a_missing_or_tampered_record_forces_a_recompute(small, counts, tamper):
    _units_write(small)
    import sqlite3
    conn = sqlite3.connect(small.db)
    gen = conn.execute("SELECT max(generation) FROM change_log").fetchone()[0]
    if tamper == "delete the record":
        conn.execute("DELETE FROM change_log WHERE generation = ?", (gen,))
    elif tamper == "another parent":
        conn.execute("UPDATE change_log SET parent = json_set(parent, '$[1]', 'ff') WHERE generation = ?", (gen,))
    elif tamper == "another stamp":
        conn.execute("UPDATE change_log SET stamp = json_set(stamp, '$[1]', 'ff') WHERE generation = ?", (gen,))
    else:
        conn.execute("UPDATE change_log SET units = '[[' WHERE generation = ?", (gen,))
    conn.commit()
    conn.close()
    before = counts["computed"]
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    assert counts["computed"] == before + 1 and counts["derived"] == 0 and counts["access_derived"] == 0


def test_a_write_by_another_process_between_reads_is_seen_and_derived(small, counts):
    with KnowledgeBase(small.db, default_rules=False) as kb:
        first = kb.view(Caller(), DAYS[0]).fact_rows()
        assert first == _oracle(small.db, Caller(), DAYS[0])
        path = os.path.join(small.root, "other.jsonl")
        _write_units(path, [{"id": "other1", "triples": [["s7", "t", "s8", 0.65]]}])
        code = ("import sys; from thinkingdb.api import KnowledgeBase\n"
                "with KnowledgeBase(sys.argv[1], default_rules=False) as kb: kb.ingest([sys.argv[2]])")
        subprocess.run([sys.executable, "-c", code, small.db, path], check=True)
        before = counts["computed"]
        second = kb.view(Caller(), DAYS[0]).fact_rows()
        assert ("s7", "t", "s8", 0.65) in second and ("s7", "t", "s8", 0.65) not in first
        assert second == _oracle(small.db, Caller(), DAYS[0])
        assert counts["computed"] == before and counts["derived"] == 1


@pytest.mark.parametrize("limit", [None, 0])
def test_another_callers_view_file_derives_this_one_within_the_unit_limit(small, counts, monkeypatch, limit):
    """Only the anonymous caller's view file is on disk; caller x's view after a write is derived from
    it (x sees more units: their facts are recomputed) — or, allowed no differing unit, recomputed."""
    if limit is not None:
        monkeypatch.setattr(viewderive, "MAX_UNITS", limit)
    x = Caller(tags=("x",))
    for name in os.listdir(small.root):
        if ".graph.view" in name:
            os.remove(os.path.join(small.root, name))
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    _units_write(small)
    before, derived = counts["computed"], counts["derived"]
    assert _rows(small.db, x, DAYS[0]) == _oracle(small.db, x, DAYS[0])
    _scratch_matches_files(small.db, x, DAYS[0])
    if limit is None:
        assert counts["computed"] == before and counts["derived"] == derived + 1
    else:
        assert counts["computed"] == before + 1 and counts["derived"] == derived


def test_an_old_view_file_put_back_is_derived_from_or_recomputed(small, counts):
    """Files of two writes ago are derived through both records; a damaged old file is recomputed."""
    saved = os.path.join(small.root, "saved")
    os.mkdir(saved)
    for name in os.listdir(small.root):
        if ".graph.view" in name or name.endswith(".access"):
            shutil.copy(os.path.join(small.root, name), saved)
    _units_write(small)
    with KnowledgeBase(small.db, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.add_facts([(Fact("s5", "r", "s6", 0.35), "late.tdb", 1, None)])
    for name in os.listdir(saved):
        shutil.copy(os.path.join(saved, name), small.root)
    before = counts["computed"]
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    assert counts["computed"] == before and counts["derived"] == 1
    _scratch_matches_files(small.db, Caller(), DAYS[0])
    with KnowledgeBase(small.db, default_rules=False) as kb:    # one more write; the old file, damaged
        with kb.store.transaction():
            kb.store.add_facts([(Fact("s5", "r", "s7", 0.45), "late2.tdb", 1, None)])
    from thinkingdb.store.graphfile import map_container
    for name in [n for n in os.listdir(small.root) if ".graph.view" in n]:   # the first byte of its largest array
        path = os.path.join(small.root, name)
        header, _, buf = map_container(path, viewfile.VIEW_MAGIC)
        _, (_, _, offset) = max(header["arrays"].items(), key=lambda kv: kv[1][1])
        start = (24 + int.from_bytes(bytes(buf[16:24]), "little") + 63) // 64 * 64
        buf.close()
        data = bytearray(open(path, "rb").read())
        data[start + offset] ^= 0xFF
        open(path, "wb").write(bytes(data))
    assert _anon_rows(small.db) == _oracle(small.db, Caller(), DAYS[0])
    assert counts["computed"] == before + 1


def test_the_log_keeps_the_last_writes_and_skips_a_large_one(tmp_path, monkeypatch):
    with KnowledgeBase(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        st = kb.store
        monkeypatch.setattr(changelog, "KEEP", 3)
        for i in range(5):
            with st.transaction():
                st.add_facts([(Fact("a", "r", f"b{i}", 1.0), "f.tdb", i, None)])
        gens = [g for (g,) in st.conn.execute("SELECT generation FROM change_log ORDER BY generation")]
        top = st.current_generation()
        assert gens == [top - 2, top - 1, top]
        monkeypatch.setattr(changelog, "MAX_LOGGED", 2)
        with st.transaction():
            st.add_facts([(Fact("a", "r", f"c{i}", 1.0), "g.tdb", i, None) for i in range(3)])
        assert st.conn.execute("SELECT max(generation) FROM change_log").fetchone()[0] == top


def test_two_dimensional_positions_agree_with_the_packed_key(tmp_path, monkeypatch, counts):
    """compose's merge of old entries and changes, per triple instead of one packed key (huge stores)."""
    monkeypatch.setattr(deltacompose, "SAFE_KEY", 0)
    world = World(tmp_path, 3)
    for _ in range(4):
        world.step()
        for caller in CALLERS[:2]:
            assert _rows(world.db, caller, DAYS[0]) == _oracle(world.db, caller, DAYS[0])
            _scratch_matches_files(world.db, caller, DAYS[0])


@pytest.mark.parametrize("table", [False, True])
@pytest.mark.parametrize("who", [Caller(), Caller(tags=("x",))])
def test_units_removed_and_added_between_units_seen_differently(tmp_path, counts, monkeypatch, who, table):
    """Units alternately public and restricted, each asserting its own fact; a write removes some
    (their provenance stays: facts of units the store no longer holds) and adds others in between.
    The view after it is derived from the anonymous caller's file, each unit's bit taken from the
    right place of the earlier mask."""
    if table:                                  # unit rows from the decoded ids, not a search each
        monkeypatch.setattr(viewderive, "ROW_TABLE_TRIPLES", 0)
    db = str(tmp_path / "kb.sqlite")
    units = [{"id": f"u{i:02d}", **({"acl": ["x"]} if i % 2 else {}), "triples": [[f"a{i}", "r", f"b{i}", 0.5]]}
             for i in range(0, 40, 2)]
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([_write_units(str(tmp_path / "u.jsonl"), units)])
        kb.ingest([_write_units(str(tmp_path / "v.jsonl"),
                                [{"id": f"u{i:02d}", **({"acl": ["x"]} if i % 4 == 1 else {}),
                                  "triples": [[f"a{i}", "r", f"b{i}", 0.5], [f"a{i - 1}", "r", f"b{i - 1}", 0.7]]}
                                 for i in range(1, 40, 2)])])
    assert _anon_rows(db) == _oracle(db, Caller(), DAYS[0])
    assert counts["computed"] == 1
    with KnowledgeBase(db, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.conn.execute("DELETE FROM units WHERE id IN ('u03', 'u04', 'u10', 'u11', 'u12', 'u27')")
            kb.store.add_units([(Unit("u045", acl=("x",)), 1), (Unit("u105"), 2), (Unit("u00a", acl=("y",)), 3)],
                               source="w.jsonl")
            kb.store.add_facts([(Fact("c", "r", "d", 0.9), "w.jsonl", 4, "u105"),
                                (Fact("a6", "r", "b6", 0.8), "w.jsonl", 5, "u045")])
    before = counts["computed"]
    assert _rows(db, who, DAYS[0]) == _oracle(db, who, DAYS[0])
    _scratch_matches_files(db, who, DAYS[0])
    assert counts["computed"] == before and counts["derived"] >= 1


@pytest.mark.parametrize("limit", [1, 6])
@pytest.mark.parametrize("seed", range(6))
def test_a_merge_into_a_new_base_carries_the_view_files(tmp_path, counts, monkeypatch, seed, limit):
    """Every write (``limit`` 1), or every few (6: the views lie over a base with a delta, holding
    new symbols of their own), merges its delta into a new base graph file (store/graphdelta.py); the
    merging writer writes each caller's view file again over the new base (viewcarry.carry), so after
    the first round no view is computed whole again: each is derived through the log, and equals the
    oracle and the view computed whole, array for array."""
    monkeypatch.setattr(graphdelta, "merge_limit", lambda n: limit)
    carried = []
    real_carry = viewcarry.carry

    def carry(*a):
        carried.append(real_carry(*a))
        return carried[-1]
    monkeypatch.setattr(viewcarry, "carry", carry)
    world = World(tmp_path, seed)
    for caller in CALLERS:
        for day in DAYS:
            assert _rows(world.db, caller, day) == _oracle(world.db, caller, day)
    ops = []
    for _ in range(8):
        ops.append(world.step())
        computed = counts["computed"]
        for caller in CALLERS:
            for day in DAYS:
                assert _rows(world.db, caller, day) == _oracle(world.db, caller, day), (ops, caller, day)
                _scratch_matches_files(world.db, caller, day)
        with KnowledgeBase(world.db, default_rules=False) as kb:
            has_units = bool(list(kb.store.units()))
        if has_units:          # (a store without units keeps no view files: public_view computes its one view)
            assert counts["computed"] == computed, (ops, carried, counts)
    assert sum(carried) > 0 and counts["derived"] > 0, (ops, carried, counts)


def test_a_topic_whose_last_unit_goes_is_dropped_not_saved_empty(tmp_path, counts):
    """Retracting the only unit about a topic, or moving it to another topic, leaves no key with zero
    unit ids in the derived index (which topicfile.save refuses and a read rejects)."""
    from thinkingdb.store import topicfile
    db = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([_write_units(str(tmp_path / "a.jsonl"), [{"id": "a1", "topic": "s1", "triples": [["s1", "r", "s2"]]},
                                                            {"id": "a2", "topic": "s2", "triples": [["s2", "r", "s3"]]}])])
        kb.ingest([_write_units(str(tmp_path / "b.jsonl"), [{"id": "b1", "topic": "s3", "triples": [["s3", "r", "s1"]]}])])
    _topics_match(db)
    with KnowledgeBase(db, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.retract_source(str(tmp_path / "b.jsonl"))       # s3's only unit
        with kb.store.transaction():
            kb.store.conn.execute("UPDATE units SET topic = 's1' WHERE id = 'a2'")   # s2's only unit moves to s1
    before = counts["topics_derived"]
    _topics_match(db)
    assert counts["topics_derived"] == before + 1
    with KnowledgeBase(db, default_rules=False) as kb:
        got = topicfile.load(db, store_stamp(kb.store))
    assert got is not None and got.to_dict() == {"s1": ["a1", "a2"]}


@pytest.mark.parametrize("seed", range(3))
def test_prime_makes_the_files_a_first_question_would(tmp_path, counts, monkeypatch, seed):
    """After a write the log does not record (as a bulk ingest), viewprime.prime writes the access table
    and the anonymous view file; the next question reads them (nothing computed or derived), and they
    equal the oracle and the files computed whole, array for array."""
    from thinkingdb.store.viewprime import prime
    world = World(tmp_path, seed)
    assert _anon_rows(world.db) == _oracle(world.db, Caller(), DAYS[0])
    monkeypatch.setattr(changelog, "MAX_LOGGED", 0)           # every write is a gap
    world._ingest_units(3)
    with KnowledgeBase(world.db, default_rules=False) as kb:
        gen = kb.store.current_generation()
        assert kb.store.conn.execute("SELECT count(*) FROM change_log WHERE generation = ?", (gen,)).fetchone()[0] == 0
        got = prime(kb.store, Caller(), DAYS[0])
        assert got in ("computed", "everything")
        assert prime(kb.store, Caller(), DAYS[0]) == ("current" if got == "computed" else "everything")
    before = dict(counts)
    assert _anon_rows(world.db) == _oracle(world.db, Caller(), DAYS[0])
    assert counts == before                      # read from the primed files
    _scratch_matches_files(world.db, Caller(), DAYS[0])


def test_a_merge_that_removes_symbols_and_relations_a_view_held(tmp_path, counts, monkeypatch):
    """The merged delta removes symbols (and a relation) the view files still hold at their state: the
    carried files name them as symbols the new base lacks, and what is derived from them equals the
    oracle and the view computed whole."""
    monkeypatch.setattr(graphdelta, "merge_limit", lambda n: 1)
    db = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([_write_units(str(tmp_path / "a.jsonl"), [{"id": "p1", "triples": [["x1", "r", "y1", 0.5]]},
                                                            {"id": "h0", "acl": ["x"], "triples": [["x0", "q", "y0", 0.4]]}])])
        kb.ingest([_write_units(str(tmp_path / "b.jsonl"), [{"id": "h1", "acl": ["x"], "triples": [["x2", "q", "y2", 0.6]]},
                                                            {"id": "p2", "triples": [["z1", "r", "z2", 0.7]]}])])
    callers = [Caller(), Caller(tags=("x",), region="eu")]
    for step in ("a.jsonl", "b.jsonl"):
        for caller in callers:
            assert _rows(db, caller, DAYS[0]) == _oracle(db, caller, DAYS[0])
        computed = counts["computed"]
        with KnowledgeBase(db, default_rules=False) as kb:
            with kb.store.transaction():
                kb.store.retract_source(str(tmp_path / step))
        for caller in callers:
            assert _rows(db, caller, DAYS[0]) == _oracle(db, caller, DAYS[0])
            _scratch_matches_files(db, caller, DAYS[0])
        assert counts["computed"] == computed
