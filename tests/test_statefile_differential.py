"""The state file (store/statefile.py) against SQLite: a question answered from ``kb.sqlite.state`` must
answer as one read from SQLite alone. The oracle is ``KnowledgeBase(path, graph_file=False)`` (no graph
file, so no state file: every row read from SQLite now); the handles checked are a fresh one (its first
question reads SQLite and writes the state file), a second fresh one (answered from the state file when it
is current) and a handle opened earlier. Writes come from this process, from a worker process (whose log
stays unmerged while it keeps its handle open) and from SQLite alone (the sqlite3 module, bumping nothing).

The first tests are the minimal cases of the bugs the hunt and a review found, each failing before its fix,
with values worked by hand; then the other ways a question is asked (read-only, symbol modes, the CLI, a
served store), against the oracle; then the differential hunt.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.errors import StoreError
from thinkingdb.store import statefile
from thinkingdb.store.graphfile import store_stamp
from thinkingdb.store.sqlite import Store
from thinkingdb.store.statefile import read_state, state_path

ROOT = Path(__file__).resolve().parent.parent


def xs(kb, text: str) -> list[str]:
    return sorted(a.bindings["x"] for a in kb.query(text))


@pytest.fixture
def store(tmp_path):
    """A store of ``a r b.`` whose state file is current (its first question wrote it)."""
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text("a r b.\n", source="f.tdb")
    with KnowledgeBase(path) as kb:
        assert xs(kb, "? a r ?x.") == ["b"]
    assert read_state(path) is not None
    return path


def write_in_another_process(path: str, text: str, source: str) -> None:
    code = ("import sys; from thinkingdb.api import KnowledgeBase\n"
            "with KnowledgeBase(sys.argv[1]) as kb: kb.add_text(sys.argv[2], source=sys.argv[3])")
    subprocess.run([sys.executable, "-c", code, path, text, source], check=True, cwd=ROOT)


# -- the minimal cases -------------------------------------------------------------------------------------

def test_a_handle_opened_earlier_parses_with_the_aliases_and_inverses_of_now(store):
    """A question was parsed with the state file's vocabulary before the generation was checked: an alias
    or inverse another process declared since was not applied (``? a goes_to ?x.`` had no answer, then b
    and c when asked again)."""
    h = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        write_in_another_process(store, 'alias "goes to" => r.\nrelation r transitive.\nb r c.\n'
                                 'relation c inverse k.\nd c a.\n', "g.tdb")
        # by hand: a r b, b r c, r transitive -> a r c; goes_to is r; a k d is d c a (k the inverse of c)
        assert xs(h, "? a goes_to ?x.") == ["b", "c"]
        assert str(h.why("a goes_to c").conclusion) == "a r c"
        assert [dict(a.bindings) for a in h.stream("? a k ?x.")] == [{"x": "d"}]
        assert [row["source"] for row in h.provenance("a k d")] == ["g.tdb"]
    finally:
        h.close()


def test_add_facts_through_a_handle_opened_earlier_applies_the_aliases_of_now(store):
    """The same parse by add_facts: the fact was stored under the alias's own name (goes_to), for good."""
    h = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        write_in_another_process(store, 'alias "goes to" => r.\n', "g.tdb")
        h.add_facts([("b", "goes to", "c")])
    finally:
        h.close()
    with KnowledgeBase(store, graph_file=False) as kb:
        assert sorted(f.relation for f in kb.store.facts()) == ["r", "r"]


def test_a_commit_merged_between_the_two_stats_is_seen(store):
    """still_current read the store file, then the log: a writer that committed before the question and
    merged its log in between (its close) left the old file's key and no log, and the question answered
    without its commit. Its merge is run between the stats here by wrapping the log's stat."""
    h = KnowledgeBase(store)
    writer = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        writer.add_facts([("a", "r", "c")])   # committed: in the writer's log until it closes
        assert os.path.getsize(store + "-wal") > 0
        real = statefile._log_empty

        def log_empty(path):
            if not writer.store._closed:
                writer.close()   # the last connection: its log merged into the store file and removed
            return real(path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(statefile, "_log_empty", log_empty)
            assert xs(h, "? a r ?x.") == ["b", "c"]
    finally:
        writer.close()
        h.close()


def test_save_records_no_rows_a_program_changed_while_it_read(store):
    """save took the store file's key after reading the rows: a program writing without the writer lock
    (an alias added with the sqlite3 module, its log merged) between the two left the old rows under the
    new file's key, and every later question parsed without the alias."""
    os.remove(state_path(store))
    st = Store(store)
    try:
        with st.reading():
            stamp = store_stamp(st)
        reading = st.reading

        @contextmanager
        def reading_then_a_foreign_write():
            with reading():
                yield
            conn = sqlite3.connect(store)
            conn.execute("INSERT INTO aliases VALUES ('goes_to', 'r', 1, 1)")
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
        st.reading = reading_then_a_foreign_write
        statefile.save(st, stamp)
    finally:
        st.close()
    with KnowledgeBase(store) as kb:
        assert xs(kb, "? a goes_to ?x.") == ["b"]


def test_a_write_between_the_graph_and_the_rules_of_one_question(tmp_path, monkeypatch):
    """The store written after the question took the state file's graph and before it read the rules (each
    read checks the state file is still current, and reads SQLite when not): the answer is the old state's
    or the new one's, never the old graph with the new rules (b and c, before the question checked)."""
    from thinkingdb.store import graphdelta
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text("a r b. b r c.\n", source="f.tdb")
    with KnowledgeBase(path) as kb:
        kb.query("? a r ?x.")
    h = KnowledgeBase(path)
    open_current = graphdelta.open_current

    def open_then_a_write(*args):
        got = open_current(*args)
        monkeypatch.setattr(graphdelta, "open_current", open_current)
        with KnowledgeBase(path) as w:
            w.add_text("c r d.\nrelation r transitive.\n", source="g.tdb")
        return got
    try:
        assert not h.store.connected
        monkeypatch.setattr(graphdelta, "open_current", open_then_a_write)
        # by hand: before the write a r b only; after it r is transitive over a r b r c r d (b, c and d);
        # the old graph with the new rule gave b and c
        assert xs(h, "? a r ?x.") in (["b"], ["b", "c", "d"])
        assert xs(h, "? a r ?x.") == ["b", "c", "d"]
    finally:
        h.close()


def test_a_store_renamed_over_the_path_at_the_same_generation(store, tmp_path):
    """A store built elsewhere and renamed over the path (both at generation 1): a handle that answered from
    the state file connects to the new file, whose generation matched its cached state's, and answered
    with the old graph under the new store's aliases (goes_to: b, which neither store gives)."""
    h = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        new = str(tmp_path / "new.sqlite")
        with KnowledgeBase(new) as kb:
            kb.add_text('alias "goes to" => r.\na r c.\n', source="g.tdb")
        os.replace(new, store)
        # by hand: the new store holds a r c only, and goes_to is its r
        assert xs(h, "? a goes_to ?x.") == ["c"]
        assert xs(h, "? a r ?x.") == ["c"]
    finally:
        h.close()


def test_a_relative_path_and_a_change_of_directory(tmp_path, monkeypatch):
    """A handle opened by a relative path from the state file, the process then in another directory: its
    late connection opened the relative path there, made a new empty store and answered nothing."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    with KnowledgeBase("kb.sqlite") as kb:
        kb.add_text('"Big Thing" r b.\n', source="f.tdb")
    with KnowledgeBase("kb.sqlite") as kb:
        kb.query("? big_thing r ?x.")
    h = KnowledgeBase("kb.sqlite")
    try:
        assert not h.store.connected
        monkeypatch.chdir(tmp_path / "b")
        assert [a.labels["x"] for a in h.query("? ?x r b.")] == ["Big Thing"] and h.store.connected
        assert xs(h, "? big_thing r ?x.") == ["b"]
    finally:
        h.close()
    assert os.listdir(tmp_path / "b") == []


def test_a_store_reached_by_a_symbolic_link_and_written_by_its_own_name(store, tmp_path):
    """SQLite keeps the log of a store reached by a link beside the file linked to: the state file's checks
    looked for one beside the link, found none while a writer (by the store's own name, still open) held
    its commit there, and trusted the state file (a r: b only)."""
    link = str(tmp_path / "link.sqlite")
    os.symlink(store, link)
    with KnowledgeBase(link) as kb:
        assert xs(kb, "? a r ?x.") == ["b"]
    assert read_state(link) is not None
    early = KnowledgeBase(link)
    writer = KnowledgeBase(store)
    try:
        assert not early.store.connected
        writer.add_facts([("a", "r", "c")])   # (its log beside the store, unmerged while it is open)
        with KnowledgeBase(link) as kb:
            assert xs(kb, "? a r ?x.") == ["b", "c"]
        assert xs(early, "? a r ?x.") == ["b", "c"]
    finally:
        writer.close()
        early.close()


@pytest.mark.parametrize("readonly", [True, False])
def test_a_store_gone_since_the_state_file_was_read(store, readonly):
    """A handle opened from the state file, its store moved away: each question raises StoreError, and a
    handle with create=False makes no new store at the path (its connection, made late, created one,
    answered from it and left it at the path when closed)."""
    h = KnowledgeBase(store, create=False, readonly=readonly)
    assert not h.store.connected
    os.rename(store, store + ".moved")
    try:
        for _ in range(2):
            with pytest.raises(StoreError, match="no such store"):
                h.query("? a r ?x.")
    finally:
        h.close()
    assert not os.path.exists(store)


def test_a_store_gone_since_is_not_made_again_by_a_handle_that_may_create(store):
    """The same with the default create=True: the store existed when the handle was opened, so its late
    connection makes none (it made a new empty store at the path, answered nothing from it, and left it)."""
    h = KnowledgeBase(store)
    assert not h.store.connected
    os.rename(store, store + ".moved")
    try:
        with pytest.raises(StoreError, match="no such store"):
            h.query("? a r ?x.")
    finally:
        h.close()
    assert not os.path.exists(store)


def test_a_thread_reading_while_another_connects_reads_the_store_of_now(store, monkeypatch):
    """Thread A finds the store changed and connects (slowly here); thread B parses a query meanwhile. B
    read the state file's rows while the connection was being made, with the old vocabulary, though A had
    found them stale."""
    h = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        with KnowledgeBase(store) as w:
            w.add_text('alias "goes to" => r.\na r c.\n', source="g.tdb")
        connect = Store._connect

        def slow_connect(self, *args):
            time.sleep(0.3)
            return connect(self, *args)
        monkeypatch.setattr(Store, "_connect", slow_connect)
        got = {}

        def run(name, call):
            try:
                got[name] = call()
            except Exception as exc:   # noqa: BLE001 - reported below
                got[name] = repr(exc)
        a = threading.Thread(target=run, args=("A", lambda: h.store.current_generation()))
        b = threading.Thread(target=run, args=("B", lambda: str(h.parse_query("? a goes_to ?x."))))
        a.start()
        time.sleep(0.1)   # A holds the handle's lock, connecting
        b.start()
        for t in (a, b):
            t.join()
        # by hand: the fixture's write was generation 1, g.tdb generation 2; goes_to is r since g.tdb
        assert got == {"A": 2, "B": str(h.parse_query("? a r ?x."))}
        assert xs(h, "? a goes_to ?x.") == ["b", "c"]
    finally:
        h.close()


# -- the other ways a question is asked, against the oracle ------------------------------------------------

RICH = ('a r b. b r c. c r d.\nrelation r transitive.\nalias "goes to" => r.\nrelation c2 inverse b2.\n'
        'a b2 z.\nrule g: ?x r ?y, ?y r d => ?x s ?y.\n"Big Thing" r a.\n')
QUERIES = ["? a goes_to ?x.", "? ?x s ?y.", "? z c2 ?x.", "? ?x b2 ?y.", "? big_thing r ?x."]


def answer_set(kb, text: str) -> list:
    return sorted((tuple(sorted(a.bindings.items())), round(a.score, 9),
                   tuple(sorted(a.labels.items()))) for a in kb.query(text))


@pytest.fixture
def rich(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text(RICH, source="rich.tdb")
    with KnowledgeBase(path) as kb:
        kb.query("? a r ?x.")
    assert read_state(path) is not None
    with KnowledgeBase(path, graph_file=False) as oracle:
        want = {q: answer_set(oracle, q) for q in QUERIES}
    # by hand, a few: goes_to is r (transitive): b, c, d; z c2 a is a b2 z turned; 'Big Thing' keeps its label
    assert [b for b, _, _ in want["? a goes_to ?x."]] == [(("x", v),) for v in "bcd"]
    assert [b for b, _, _ in want["? z c2 ?x."]] == [(("x", "a"),)]
    assert want["? big_thing r ?x."][0][2] == (("x", "a"),)
    return path, want


@pytest.mark.parametrize("readonly", [False, True])
def test_every_question_from_the_state_file_answers_as_sqlite(rich, readonly):
    path, want = rich
    with KnowledgeBase(path, readonly=readonly) as kb:
        assert not kb.store.connected
        assert {q: answer_set(kb, q) for q in QUERIES} == want
        assert kb.why_not("d goes_to a").holds is False
        assert kb.labels()["big_thing"] == "Big Thing"
        assert kb.search("what does Big Thing goes to").results == ()   # a store without units: no unit to give


@pytest.mark.parametrize("mode", ["iris", "folded", "quoted"])
def test_the_symbol_mode_comes_from_the_state_file(tmp_path, mode):
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path, symbols=mode) as kb:
        kb.add_text('"http://x.org/A" r "Q b".\nex:B r "http://x.org/A".\n', source="m.tdb")
    with KnowledgeBase(path) as kb:
        kb.query("? ?x r ?y.")
    assert read_state(path) is not None
    queries = ['? "http://x.org/A" r ?x.', '? ?x r "http://x.org/a".', "? ex:B r ?x.", '? ?x r "q b".']
    with KnowledgeBase(path, graph_file=False) as oracle:
        want = [answer_set(oracle, q) for q in queries]
    # by hand: only folded folds the IRI's case; quoted keeps "Q b" apart from "q b"
    assert [len(w) for w in want] == [1, int(mode == "folded"), 1, int(mode != "quoted")]
    with KnowledgeBase(path, symbols=mode) as kb:   # the store's own mode: nothing to change
        assert not kb.store.connected and kb.store.symbol_mode == mode
        assert [answer_set(kb, q) for q in queries] == want
    other = next(m for m in ("iris", "folded", "quoted") if m != mode)
    with pytest.raises(StoreError, match="cannot change"):
        KnowledgeBase(path, symbols=other)


@pytest.mark.parametrize("fmt", ["text", "tsv", "jsonl"])
def test_the_cli_answers_from_the_state_file_as_from_sqlite(rich, fmt):
    path, _ = rich
    cli = str(Path(sys.executable).with_name("thinkingdb"))
    args = [cli, "query", "--db", path, "--format", fmt, '? "Big Thing" goes_to ?x.']
    first = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    os.remove(state_path(path))   # the same question read from SQLite (and the state file written again)
    second = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert (first.returncode, first.stdout, first.stderr) == (second.returncode, second.stdout, second.stderr)
    assert first.returncode == 0 and read_state(path) is not None
    # by hand: Big Thing r a, and r (goes_to) is transitive: a, b, c, d
    assert all(v in first.stdout for v in "abcd")


def test_a_served_store_opened_from_the_state_file(rich):
    from thinkingdb.serve.service import Service
    path, want = rich
    gens = Service(path, poll_seconds=0.0)
    try:
        assert not gens._probe.connected
        with gens.reading() as snap:
            assert snap.generation == 1
            assert answer_set(snap.kb, "? a goes_to ?x.") == want["? a goes_to ?x."]
        write_in_another_process(path, "d r e.\n", "more.tdb")
        assert gens.refresh() == 2
        with gens.reading() as snap:
            assert [b for b, _, _ in answer_set(snap.kb, "? a goes_to ?x.")] == [(("x", v),) for v in "bcde"]
    finally:
        gens.close()


# -- the differential hunt ---------------------------------------------------------------------------------

WORKER = r"""
import json, sqlite3, sys
from thinkingdb.api import KnowledgeBase
from thinkingdb.cli.main import main
from thinkingdb.errors import ThinkingDBError
kept = []
def close():
    while kept:
        kept.pop().close()
for line in sys.stdin:
    cmd = json.loads(line)
    close()
    out = "ok"
    try:
        if cmd["op"] == "text":
            kb = KnowledgeBase(cmd["path"])
            kept.append(kb)
            kb.add_text(cmd["text"], source=cmd["source"])
        elif cmd["op"] == "retract":
            out = str(main(["retract", cmd["source"], "--db", cmd["path"], "-q"]))
        elif cmd["op"] == "raw":
            conn = sqlite3.connect(cmd["path"])
            kept.append(conn)
            for sql in cmd["sql"]:
                conn.execute(sql)
            conn.commit()
    except ThinkingDBError as exc:
        out = "refused: " + type(exc).__name__
    if not cmd.get("keep"):
        close()
    print(out, flush=True)
"""


@pytest.fixture(scope="module")
def worker():
    proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)

    def ask(**cmd) -> str:
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, "the worker process died"
        return line.strip()
    yield ask
    proc.stdin.close()
    proc.wait(timeout=30)


NODES = ["n0", "n1", "n2", "n3"]
RELS = ["r", "s", "c", "b", "goes_to"]
STATEMENTS = st.one_of(
    st.builds(lambda s, r, o: f"{s} {r} {o}.", st.sampled_from(NODES), st.sampled_from(RELS), st.sampled_from(NODES)),
    st.sampled_from(["relation r transitive.", "relation c inverse b.", 'alias "goes to" => r.',
                     'alias "goes to" => s.', "rule g: ?x r ?y => ?x s ?y.", "rule g: ?x s ?y => ?x r ?y."]))
SOURCES = st.sampled_from(["f0.tdb", "f1.tdb", "f2.tdb"])
OPS = st.one_of(
    st.tuples(st.just("text"), SOURCES, st.lists(STATEMENTS, min_size=1, max_size=4), st.booleans()),
    st.tuples(st.just("local_text"), SOURCES, st.lists(STATEMENTS, min_size=1, max_size=3)),
    st.tuples(st.just("retract"), SOURCES),
    st.tuples(st.just("h_add"), st.sampled_from(NODES), st.sampled_from(RELS + ["goes to"]), st.sampled_from(NODES),
              st.booleans()),
    st.tuples(st.just("raw_fact"), st.sampled_from(NODES), st.sampled_from(RELS), st.sampled_from(NODES),
              st.booleans(), st.booleans()),
    st.tuples(st.just("raw_alias"), st.sampled_from(["r", "s", "b"]), st.booleans()),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("swap"), st.lists(STATEMENTS, min_size=1, max_size=3)),
)
HUNT_QUERIES = ["? ?x goes_to ?y.", "? ?x b ?y.", "? ?x s ?y.", "? ?x r ?y."]


def snapshot(kb, labels: bool = True, first: int = 0) -> tuple:
    """The answers (bindings, score) of HUNT_QUERIES, a proof's score, then the answers' labels (read
    last: reading one connects a handle opened from the state file, as an asserted fact's proof does).
    ``first``: the query asked first (a handle opened from the state file parses it before it finds the
    store changed)."""
    order = list(range(first, len(HUNT_QUERIES))) + list(range(first))
    got = {i: list(kb.query(HUNT_QUERIES[i])) for i in order}
    results = [got[i] for i in range(len(HUNT_QUERIES))]
    proof = kb.why("n0 r n2")
    return (tuple(sorted((tuple(sorted(a.bindings.items())), round(a.score, 9)) for a in got) for got in results),
            None if proof is None else round(proof.score, 9),
            labels and tuple(sorted(tuple(sorted(a.labels.items())) for a in got) for got in results))


def swap_in(path: str, statements: list[str]) -> bool:
    """Build a store of ``statements`` beside ``path`` at the generation of the store there and rename it
    over ``path`` (no connection open on the old one); whether it was (an ingest refused: not)."""
    with KnowledgeBase(path, graph_file=False) as kb:
        gen = kb.store.current_generation()
    new = path + ".new"
    try:
        with KnowledgeBase(new) as kb:
            kb.add_text("\n".join(statements) + "\n", source="swap.tdb")
            while kb.store.current_generation() < gen:
                kb.add_facts([("p", "pad", "q")])
    except Exception as exc:   # refused: nothing at new
        assert type(exc).__name__ in ("IngestError", "ParseError", "ValidationError")
        return False
    os.replace(new, path)
    return True


@settings(max_examples=50, deadline=None)
@given(ops=st.lists(OPS, min_size=1, max_size=6))
def test_the_state_file_never_changes_an_answer(worker, ops):
    d = tempfile.mkdtemp(prefix="tdb-statefile-")
    path = os.path.join(d, "kb.sqlite")
    h = early = None
    try:
        with KnowledgeBase(path) as kb:
            kb.add_text("n0 r n1. n1 r n2.\n", source="seed.tdb")
        with KnowledgeBase(path) as kb:
            kb.query("? n0 r ?x.")
        h = KnowledgeBase(path)   # opened from the state file: unconnected until the store changes
        early = KnowledgeBase(path)   # the same, opened again after each step's checks
        lag = False   # a raw write bumping no generation: a handle opened earlier may not see it (as before)
        for step, op in enumerate(ops):
            kind, wrote = op[0], False   # wrote: a ThinkingDB write committed (the generation moved)
            if kind == "text":
                wrote = worker(op="text", path=path, source=op[1], text="\n".join(op[2]) + "\n", keep=op[3]) == "ok"
            elif kind == "local_text":
                try:
                    with KnowledgeBase(path) as kb:
                        kb.add_text("\n".join(op[2]) + "\n", source=op[1])
                    wrote = True
                except Exception as exc:   # an ingest refused: nothing written
                    assert type(exc).__name__ in ("IngestError", "ParseError", "ValidationError")
            elif kind == "retract":
                wrote = worker(op="retract", path=path, source=op[1]) == "0"
            elif kind == "h_add":
                wrote = (early if op[4] else h).add_facts([op[1:4]]) >= 0
            elif kind == "raw_fact":
                _, s, r, o, bump, keep = op
                sql = [f"INSERT OR IGNORE INTO facts (subject, relation, object, confidence) VALUES "
                       f"('{s}', '{r}', '{o}', 0.5)"]
                if bump:
                    sql.append("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
                worker(op="raw", path=path, sql=sql, keep=keep)
                lag = lag or not bump
            elif kind == "raw_alias":   # the latest source's alias wins: origin 999
                alias = f"INSERT OR REPLACE INTO aliases VALUES ('goes_to', '{op[1]}', 999, 1)"
                worker(op="raw", path=path, sql=[alias], keep=op[2])
            elif kind == "swap":   # (a handle connected to the old file would read it on: none is)
                worker(op="close", path=path)
                if not h.store.connected and not early.store.connected:
                    wrote = swap_in(path, op[1])
            else:
                h.close()
                h, lag = KnowledgeBase(path), False
            if wrote or (kind == "raw_fact" and op[4]):
                lag = False
            with KnowledgeBase(path, graph_file=False) as oracle:
                want = snapshot(oracle)
            with KnowledgeBase(path) as first:    # reads SQLite when the state file is stale; writes it
                assert snapshot(first) == want, op
            with KnowledgeBase(path) as second:   # answered from the state file when it is current
                assert snapshot(second) == want, op
            # (no labels: a handle opened from the state file stays unconnected while the store does not change)
            assert snapshot(early, labels=False, first=step % len(HUNT_QUERIES)) == want[:2] + (False,), op
            early.close()
            early = KnowledgeBase(path)
            if not lag:
                assert snapshot(h, labels=False, first=(step + 1) % len(HUNT_QUERIES)) == want[:2] + (False,), op
    finally:
        worker(op="close", path=path)
        for kb in (h, early):
            if kb is not None:
                kb.close()
        shutil.rmtree(d, ignore_errors=True)
