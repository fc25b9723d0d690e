"""The state file (store/statefile.py): a question on an unchanged store opens no SQLite connection,
and one on a changed store — by ThinkingDB in another process, by anything else, or with a damaged or
foreign state file — reads SQLite and answers from the store as it is now."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.errors import StoreError
from thinkingdb.engine.bulk import LabelledAnswers
from thinkingdb.store.statefile import read_state, save, state_path

ROOT = Path(__file__).resolve().parent.parent
FACTS = "a r b. b r c. c r d.\nrelation r transitive.\nalias goes_to => r.\n"


def answers(kb, text):
    return sorted(tuple(sorted(a.bindings.items())) for a in kb.query(text))


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text(FACTS, source="facts.tdb")
    assert not os.path.exists(state_path(path))   # a write leaves none
    with KnowledgeBase(path) as kb:                # the first question reads SQLite, then writes it
        assert kb.store.connected
        assert answers(kb, "? a r ?x.") == [(("x", "b"),), (("x", "c"),), (("x", "d"),)]
    assert read_state(path) is not None
    return path


def test_a_question_on_an_unchanged_store_opens_no_connection(store):
    with KnowledgeBase(store) as kb:
        # r is transitive (a declaration stored in the state file); goes_to is its alias (the vocabulary)
        assert answers(kb, "? a goes_to ?x.") == [(("x", "b"),), (("x", "c"),), (("x", "d"),)]
        assert [str(p.conclusion) for p in kb.why("a r d").premises] in (["a r b", "b r d"], ["a r c", "c r d"])
        assert not kb.store.connected
        got = kb.query("? ?x r d.")
        assert not kb.store.connected   # labels are read when an answer is first read
        assert sorted(a.labels["x"] for a in got) == ["a", "b", "c"]
        assert kb.store.connected


def test_labels_read_on_first_use_belong_to_their_answers(tmp_path):
    """Labels are the text as written (keys fold case), read when first read."""
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text("relation r transitive. Nginx r OpenSSL. OpenSSL r LibC. LibC r Kernel.", source="x.tdb")
    with KnowledgeBase(path) as kb:
        kb.query("? nginx r ?x.")
    for text, labels in (("? nginx r ?x.", [("x", "Kernel"), ("x", "LibC"), ("x", "OpenSSL")]),
                         ("? ?s r kernel.", [("s", "LibC"), ("s", "Nginx"), ("s", "OpenSSL")])):
        with KnowledgeBase(path) as kb:
            got = kb.query(text)
            assert not kb.store.connected
            assert sorted(item for a in got for item in a.labels.items()) == labels


def test_labels_of_answers_kept_past_close(tmp_path):
    """Both kinds of answer sets (a list, and one held as arrays) read their labels after the knowledge
    base closed (through a read-only handle); a store gone since says so."""
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text("relation r transitive. Nginx r OpenSSL. OpenSSL r LibC.", source="x.tdb")
    with KnowledgeBase(path) as kb:
        listed = kb.query("? nginx r ?x.")
        arrays = kb.query("? ?s r ?x, ?x r libc.")
    assert sorted(a.labels["x"] for a in listed) == ["LibC", "OpenSSL"]
    assert [(a.labels["s"], a.labels["x"]) for a in arrays] == [("Nginx", "OpenSSL")]
    with KnowledgeBase(path) as kb:
        late = kb.query("? nginx r ?x.")
    os.remove(path)
    with pytest.raises(StoreError, match="no such store"):
        late.answers[0].labels["x"]


def test_a_labelled_list_fetches_once_and_keeps_its_answers():
    from thinkingdb.engine.answers import Answer
    built, fetched = [], []

    def proof(i):
        return lambda: built.append(i) or f"proof {i}"
    answers = [Answer({"s": "nginx", "x": f"k{i}"}, 1.0, proof(i)) for i in range(3)]
    got = LabelledAnswers.of(answers, lambda keys: fetched.append(keys) or {"nginx": "Nginx", "k1": "K1"})
    assert fetched == [] and len(got) == 3
    first = got[0]
    assert first is got[0] and first.proof == "proof 0" and got[0].proof == "proof 0" and built == [0]
    assert fetched == []   # labels not read yet
    assert dict(got[1].labels) == {"s": "Nginx", "x": "K1"} and dict(got[2].labels) == {"s": "Nginx", "x": "k2"}
    assert fetched == [["k0", "k1", "k2", "nginx"]]   # all keys at once, once
    assert repr(got[1].labels) == "{'s': 'Nginx', 'x': 'K1'}"
    assert got[1:3] == answers[1:3] and got == answers


def test_a_write_by_another_process_is_seen(store):
    kb = KnowledgeBase(store)
    assert answers(kb, "? d r ?x.") == [] and not kb.store.connected
    code = "import sys; from thinkingdb.api import KnowledgeBase; kb = KnowledgeBase(sys.argv[1]); kb.add_facts([('d', 'r', 'e')]); kb.close()"
    subprocess.run([sys.executable, "-c", code, store], check=True, cwd=ROOT)
    assert not os.path.exists(state_path(store))
    assert answers(kb, "? d r ?x.") == [(("x", "e"),)]   # the handle opened from the state file sees it
    kb.close()
    with KnowledgeBase(store) as fresh:
        assert answers(fresh, "? a r ?x.") == [(("x", v),) for v in "bcde"]
    with KnowledgeBase(store) as again:   # the state file was written again, at the new store state
        assert answers(again, "? c r ?x.") == [(("x", "d"),), (("x", "e"),)] and not again.store.connected


def test_a_write_by_another_program_is_seen(store):
    """The sqlite3 module adds a fact (and bumps nothing of ThinkingDB's): the store file or its log changed."""
    conn = sqlite3.connect(store)
    conn.execute("INSERT INTO facts (subject, relation, object, confidence) VALUES ('d', 'r', 'f', 1.0)")
    conn.commit()
    with KnowledgeBase(store) as kb:   # the log still holds the commit
        assert read_state(store) is None
        assert answers(kb, "? c r ?x.") == [(("x", "d"),), (("x", "f"),)]
    conn.close()   # merged into the store file: its size or time changed
    with KnowledgeBase(store) as kb:
        assert answers(kb, "? c r ?x.") == [(("x", "d"),), (("x", "f"),)]


@pytest.mark.parametrize("damage", ["byte", "alias", "truncate", "format", "foreign"])
def test_a_damaged_or_foreign_state_file_is_not_trusted(store, tmp_path, damage):
    spath = state_path(store)
    data = bytearray(Path(spath).read_bytes())
    if damage == "byte":
        data[-5] ^= 0x20
    elif damage == "alias":   # still one JSON object, naming another alias: only its CRC-32 tells
        i = data.index(b"goes_to")
        data[i:i + 7] = b"goes_up"
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "format":
        data[8] = 9
    else:   # the state file of another store at the same generation: its store file is another file
        other = str(tmp_path / "other.sqlite")
        with KnowledgeBase(other) as kb:
            kb.add_text("a r z.")
        with KnowledgeBase(other) as kb:
            kb.query("? a r ?x.")
        data = bytearray(Path(state_path(other)).read_bytes())
    Path(spath).write_bytes(bytes(data))
    assert read_state(store) is None
    with KnowledgeBase(store) as kb:
        assert answers(kb, "? a goes_to ?x.") == [(("x", "b"),), (("x", "c"),), (("x", "d"),)]
        assert kb.store.connected


def test_no_state_file_while_another_connection_s_log_holds_commits(store):
    os.remove(state_path(store))
    conn = sqlite3.connect(store)
    conn.execute("INSERT INTO facts (subject, relation, object, confidence) VALUES ('d', 'r', 'h', 1.0)")
    conn.commit()
    with KnowledgeBase(store) as kb:
        assert answers(kb, "? d r ?x.") == [(("x", "h"),)]
    assert not os.path.exists(state_path(store))
    conn.close()


def test_save_refuses_a_stamp_the_store_has_left(store):
    old = read_state(store).stamp
    with KnowledgeBase(store) as kb:
        kb.add_facts([("d", "r", "e")])
    with KnowledgeBase(store) as kb:   # (the writer closed: its log merged, nothing in it)
        assert kb.store.conn is not None and kb.store.generation == old.generation + 1
        assert save(kb.store, old) is False
        assert not os.path.exists(state_path(store))
        assert save(kb.store, kb._state().stamp) is True


def test_a_stale_graph_file_sends_the_question_to_sqlite(store):
    """The state file at the store's stamp, the graph file of an older state: the graph is rebuilt."""
    graph = store + ".graph"
    old = Path(graph).read_bytes()
    with KnowledgeBase(store) as kb:
        kb.add_facts([("d", "r", "g")])
    with KnowledgeBase(store) as kb:
        kb.query("? a r ?x.")
    assert read_state(store) is not None
    Path(graph).write_bytes(old)
    for suffix in (".graph.delta",):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    with KnowledgeBase(store) as kb:
        assert answers(kb, "? c r ?x.") == [(("x", "d"),), (("x", "g"),)]


def test_a_store_with_units_gets_no_state_file(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    note = tmp_path / "units.jsonl"
    note.write_text('{"id": "n1", "acl": ["staff"], "triples": [["a", "r", "b", 0.9]]}\n', encoding="utf-8")
    with KnowledgeBase(path) as kb:
        kb.ingest([str(note)])
    with KnowledgeBase(path) as kb:
        assert len(kb.query("? a r ?x.")) == 0   # the fact is the restricted note's: an anonymous caller sees none
    assert not os.path.exists(state_path(path))


def test_a_store_with_a_unit_without_facts_gets_no_state_file(tmp_path):
    """Its unit is searched (the lanes need SQLite), though no fact is a unit's."""
    path = str(tmp_path / "kb.sqlite")
    (tmp_path / "u.jsonl").write_text('{"id": "n1", "claim": "nginx needs openssl"}\n', encoding="utf-8")
    (tmp_path / "f.tdb").write_text("a r b.\n", encoding="utf-8")
    with KnowledgeBase(path) as kb:
        kb.ingest([str(tmp_path / "u.jsonl"), str(tmp_path / "f.tdb")])
    with KnowledgeBase(path) as kb:
        assert len(kb.query("? a r ?x.")) == 1
        assert save(kb.store, kb._state().stamp) is False
    assert not os.path.exists(state_path(path))


def test_saving_while_the_writer_lock_is_held_leaves_it_held(store):
    with KnowledgeBase(store) as kb:
        st = kb.store
        stamp = read_state(store).stamp
        st.conn
        assert st._lock.acquire() is not None
        assert save(st, stamp) is False
        assert st._lock.held
        st._lock.release()


def test_saving_inside_a_write_neither_writes_nor_releases_the_writer_lock(store):
    with KnowledgeBase(store) as kb:
        st = kb.store
        stamp = read_state(store).stamp
        with st.transaction():
            st.conn.execute("UPDATE meta SET value = value WHERE key = 'generation'")
            assert save(st, stamp) is False
            assert st._lock.held
        assert not os.path.exists(state_path(store))


def test_a_copied_store_with_its_files_is_read_from_sqlite(store, tmp_path):
    """Copies of the store, its graph file and its state file: the copy's store file is another file."""
    copy = str(tmp_path / "copy.sqlite")
    for suffix in ("", ".graph", ".state"):
        shutil.copy(store + suffix, copy + suffix)
    assert read_state(copy) is None
    with KnowledgeBase(copy) as kb:
        assert answers(kb, "? b r ?x.") == [(("x", "c"),), (("x", "d"),)]
    assert read_state(copy) is not None
