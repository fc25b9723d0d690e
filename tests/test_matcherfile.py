"""The symbol matcher read from the store's matcher file (store/matcherfile.py, retrieval/symboltable.py)
matches exactly as the matcher made from scratch — the ``SymbolMatcher`` constructor over the labels
a caller's graph knows, the rules' constants, relations and aliases, read here with plain SQL — for
every caller; after random writes (facts, units, retracts, label-only writes) the patched file equals
the file made whole; a stale, truncated, corrupt, foreign or other-params file is made again, never
trusted; a write by another process is seen."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.retrieval import symboltable
from thinkingdb.retrieval.expansion import SymbolMatcher, words
from thinkingdb.retrieval.lanes import Lanes
from thinkingdb.store import matcherfile
from thinkingdb.store.access import Caller, parse_date
from thinkingdb.store.graphfile import Stamp, store_stamp

_READ_LABELS = matcherfile.read_labels   # (the fixture below counts the calls of the library's)
DAY = "2026-06-01"
CALLERS = [Caller(), Caller(tags=("x",)), Caller(tags=("y",), region="eu")]
# phrases whose keys collide under different labels (camelCase, case), stopwords, digits, one letter
PHRASES = ["Open SSL", "OpenSSL", "openssl", "Web Server", "WebServer", "web servers", "AchillesIDE",
           "Achilles IDE", "the", "of the cell", "Cell", "cell wall", "CellWall", "x", "2024", "regulated growth",
           "Regulation of Growth", "growth", "café au lait", "Café", "naïve Bayes", "pump regulator", "A B C",
           "nginx", "libc", "Lib C", "secure execution", "Secure-Execution"]
RELATIONS = ["uses", "part_of", "relevant_for"]
WORDS = ["open", "ssl", "openssl", "web", "server", "servers", "achilles", "ide", "cell", "wall", "of", "the",
         "growth", "regulated", "regulation", "café", "lait", "naïve", "bayes", "pump", "regulator", "nginx",
         "libc", "lib", "c", "uses", "part", "relevant", "for", "secure", "execution", "2024", "x", "au"]


def _q(p: str) -> str:
    return '"' + p + '"'


class World:
    """A store changed by random writes: facts files (with phrases, so labels), units files with
    acl tags, label-only writes, retracts."""

    def __init__(self, root, seed: int) -> None:
        self.root, self.rng = str(root), random.Random(seed)
        os.makedirs(self.root, exist_ok=True)
        self.db = os.path.join(self.root, "kb.sqlite")
        self.sources: list[str] = []
        self.n = 0
        self._facts()
        self._units()

    def _path(self, ext: str) -> str:
        self.n += 1
        return os.path.join(self.root, f"s{self.n}.{ext}")

    def _facts(self) -> None:
        rng = self.rng
        path = self._path("tdb")
        lines = [f"{_q(rng.choice(PHRASES))} {rng.choice(RELATIONS)} {_q(rng.choice(PHRASES))} @0.{rng.randint(1, 9)}."
                 for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.3:
            lines.append(f"rule r{self.n}: ?x part_of ?y => ?x relevant_for {_q(rng.choice(PHRASES))}.")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        self._ingest(path)

    def _units(self) -> None:
        import json
        rng = self.rng
        path = self._path("jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for _ in range(rng.randint(1, 3)):
                self.n += 1
                u = {"id": f"u{self.n}", "topic": rng.choice(PHRASES), "claim": "c",
                     "triples": [[rng.choice(PHRASES), rng.choice(RELATIONS), rng.choice(PHRASES), 0.5]]}
                if rng.random() < 0.4:
                    u["acl"] = [rng.choice(["x", "y"])]
                fh.write(json.dumps(u) + "\n")
        self._ingest(path)

    def _ingest(self, path: str) -> None:
        with KnowledgeBase(self.db, default_rules=False) as kb:
            kb.ingest([path])
        self.sources.append(path)

    def step(self) -> str:
        rng = self.rng
        op = rng.choice(["facts", "units", "retract", "labels", "fact"])
        if op == "facts":
            self._facts()
        elif op == "units":
            self._units()
        elif op == "retract" and len(self.sources) > 1:
            src = self.sources.pop(rng.randrange(len(self.sources)))
            with KnowledgeBase(self.db, default_rules=False) as kb:
                with kb.store.transaction():
                    kb.store.retract_source(src)
        elif op == "labels":          # labels only: keys with or without facts, new or already labelled
            from thinkingdb.normalize import symbol_key
            got = {symbol_key(p): p for p in rng.sample(PHRASES, 3)}
            with KnowledgeBase(self.db, default_rules=False) as kb:
                with kb.store.transaction():
                    kb.store.add_labels(got, source=f"labels{rng.randint(0, 2)}")
        else:                         # one fact through the API, into an existing source
            from thinkingdb.model import Fact
            from thinkingdb.normalize import symbol_key
            with KnowledgeBase(self.db, default_rules=False) as kb:
                with kb.store.transaction():
                    kb.store.add_facts([(Fact(symbol_key(rng.choice(PHRASES)), "uses", symbol_key(rng.choice(PHRASES))),
                                         "api.tdb", 1, None)])
            op = "fact"
        return op


def _oracle(kb, lanes, view) -> SymbolMatcher:
    """The matcher made from scratch: the labels read with SQL, kept where the view's graph knows the key."""
    conn = sqlite3.connect(kb.store.path)
    all_labels = {k: lab for k, lab, _ in conn.execute("SELECT key, label, min(origin) FROM symbols GROUP BY key")}
    conn.close()
    graph, rules = lanes.graph(view), lanes.rules(view)
    labels = {k: lab for k, lab in all_labels.items() if graph.symbol_id(k) is not None}
    constants = {t for r in rules for a in r.premises + (r.head,) for t in (a.subject, a.object) if isinstance(t, str)}
    relations = sorted(set(graph.relations()) | {r.head.relation for r in rules})
    return SymbolMatcher(sorted(set(labels) | constants), relations, labels=labels,
                         aliases=kb.store.vocabulary().aliases)


def _queries(rng: random.Random, n: int = 25) -> list[str]:
    out = [" ".join(rng.choice(WORDS + PHRASES) for _ in range(rng.randint(1, 8))) for _ in range(n)]
    return out + [" ".join(PHRASES), "which cells regulate growth of the OpenSSL web servers"]


def _same(m: SymbolMatcher, o: SymbolMatcher, queries: list[str]) -> None:
    """``m`` answers as the oracle ``o``: every entry and form looked up one by one, the queries,
    then the whole tables."""
    for stems, keys in o._sym.items():
        assert m._sym.get(stems) == keys, stems
    assert m._sym.get(("no", "such", "words")) is None
    for key, forms in o._forms.items():
        assert m._forms.get(key, ()) == forms, key
    rel = frozenset(o.stem(w) for r in o._rel for w in r)
    for q in queries:
        assert m.match(q) == o.match(q), q
        ws = words(q)
        stems = [o.stem(w) for w in ws]
        assert m.symbol_spans(stems) == o.symbol_spans(stems), q
        assert m.symbol_spans(stems, ws, rel) == o.symbol_spans(stems, ws, rel), q
    assert dict(m._sym) == o._sym
    assert {k: v for k, v in m._forms.items()} == o._forms


def _check(db: str, rng: random.Random) -> None:
    """A fresh knowledge base's matcher of every caller (through its file) equals the oracle's, and
    the file on disk is the store's current state, equal to the file made whole."""
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        queries = _queries(rng)
        for caller in CALLERS:
            view = lanes.access.view(caller, parse_date(DAY))
            _same(lanes.matcher(view), _oracle(kb, lanes, view), queries)
        assert lanes._symbol_table is not None
        stamp = store_stamp(kb.store)
        params = symboltable.table_params()
        got = matcherfile.load(db, stamp, params)
        assert got is not None
        labels = _READ_LABELS(kb.store.conn)
        forms = SymbolMatcher([], []).forms_many({k: lab for k, (lab, _) in labels.items()})
        assert got.records() == matcherfile.encode({k: (labels[k][1], forms[k]) for k in labels})


@pytest.fixture
def derived(monkeypatch):
    """How many times the file was patched from an earlier state's (``derived``) and made whole."""
    got = {"derived": 0, "whole": 0}
    real_derive, real_read = matcherfile.derive, matcherfile.read_labels

    def derive(*a, **kw):
        out = real_derive(*a, **kw)
        got["derived"] += out is not None
        return out

    def read(conn):
        got["whole"] += 1
        return real_read(conn)
    monkeypatch.setattr(matcherfile, "derive", derive)
    monkeypatch.setattr(matcherfile, "read_labels", read)
    return got


# -- the file -----------------------------------------------------------------------------------------------

_word = st.text(alphabet="abcé1XY", min_size=1, max_size=4)
_form = st.lists(_word, min_size=1, max_size=3).map(tuple)


@given(st.dictionaries(st.text(alphabet="ab_cé", min_size=1, max_size=5),
                       st.tuples(st.integers(1, 9), st.lists(st.tuples(_form, _form), max_size=3)), max_size=8))
def test_round_trip(tmp_path_factory, records):
    """save∘load: every key's forms and every stem sequence's keys, against a dictionary made by hand."""
    path = str(tmp_path_factory.mktemp("m") / "kb.sqlite")
    stamp = Stamp(4, "tok", 7)
    assert matcherfile.save(path, stamp, {"p": 1}, records)
    table = matcherfile.load(path, stamp, {"p": 1})
    assert table is not None and len(table) == len(records)
    want: dict[tuple, list] = {}
    for key in sorted(records, key=lambda k: k.encode()):
        for _, stems in records[key][1]:
            if key not in want.setdefault(stems, []):
                want[stems].append(key)
    for stems, keys in want.items():
        assert table.keys_of(stems) == keys
    assert dict(table.entries()) == want
    assert table.keys_of(("zz", "zz")) is None
    for key, (origin, forms) in records.items():
        assert table.forms(key) == [w for w, _ in forms]
        assert (key in table.keys_from({origin})) and (key not in table.keys_from({origin + 100}))
    assert table.forms("no such key") is None
    assert table.records() == matcherfile.encode(records)
    assert matcherfile.table(records).records() == table.records()


_records = st.dictionaries(st.text(alphabet="ab_cé", min_size=1, max_size=4),
                           st.tuples(st.integers(1, 9), st.lists(st.tuples(_form, _form), max_size=3)), max_size=8)


@given(_records, st.dictionaries(st.text(alphabet="ab_cé", min_size=1, max_size=4), st.none() | st.tuples(
    st.integers(1, 9), st.lists(st.tuples(_form, _form), max_size=3)), max_size=5))
def test_patch_equals_whole(records, changes):
    """Splicing changed keys into the arrays (matcherpatch.patch) gives exactly the arrays made whole
    from the changed records."""
    import numpy as np
    from thinkingdb.store.matcherpatch import patch
    want = dict(records)
    for k, r in changes.items():
        if r is None:
            want.pop(k, None)
        else:
            want[k] = r
    got = patch(matcherfile.table(records),
                {k.encode(): None if r is None else matcherfile.encode({k: r})[k.encode()] for k, r in changes.items()})
    whole = matcherfile._arrays(want)
    assert sorted(got) == sorted(whole)
    for name in whole:
        assert np.array_equal(np.asarray(got[name]), whole[name]) and got[name].dtype == whole[name].dtype, name


def test_file_matcher_equals_fresh(tmp_path):
    """On generated stores, every caller's matcher read from the file equals the one made from scratch
    (and the same search results come out with and without the file)."""
    for seed in range(4):
        w = World(tmp_path / f"w{seed}", seed)
        for _ in range(4):
            w.step()
        _check(w.db, random.Random(seed))


def _untimed(obj):
    """A trace without its clock readings (``ms``, ``*_ms``)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k != "ms" and not k.endswith("_ms")}
    if isinstance(obj, (list, tuple)):
        return [_untimed(v) for v in obj]
    return obj


def test_search_identical_without_file(tmp_path, monkeypatch):
    """kb-thinkingdb's results and traces are the same through the file and through the matcher made
    in memory (the code before the file), for callers who see different labels."""
    w = World(tmp_path, 11)
    for _ in range(6):
        w.step()
    for _ in range(3):
        w._units()
    texts = _queries(random.Random(3), 8)

    def run():
        out = []
        with KnowledgeBase(w.db, default_rules=False) as kb:
            for caller in CALLERS:
                for text in texts:
                    res = kb.search(text, profile="kb-thinkingdb", caller=caller, as_of=DAY)
                    trace = _untimed(res.trace)
                    closure = trace["lanes"].get("closure", {})   # (none: the caller sees no unit)
                    out.append(([(r.unit_id, r.score, r.proof) for r in res.results], closure.get("query_symbols"),
                                trace))
        return out
    with_file = run()
    assert sum(bool(q) for _, q, _ in with_file) >= 6      # the closure lane matched symbols
    assert os.path.exists(matcherfile.matcher_path(w.db))
    monkeypatch.setattr(symboltable, "_table", lambda lanes: None)
    assert run() == with_file


def test_random_writes_patch_the_file(tmp_path, derived):
    """After each random write the next process patches the file (not made whole) and it equals the
    file made whole; its matcher equals the oracle's for every caller."""
    for seed in range(3):
        w = World(tmp_path / f"w{seed}", 100 + seed)
        _check(w.db, random.Random(seed))
        before = dict(derived)
        ops = []
        for _ in range(8):
            ops.append(w.step())
            _check(w.db, random.Random(len(ops)))
        assert derived["derived"] - before["derived"] == len(ops), ops
        assert derived["whole"] - before["whole"] == 0, ops


def _rebuilt(db: str, derived: dict) -> None:
    before = derived["whole"]
    _check(db, random.Random(0))
    assert derived["whole"] == before + 1


@pytest.mark.parametrize("damage", ["truncated", "byte", "stale", "params", "foreign", "garbage", "log gap"])
def test_bad_file_is_made_again(tmp_path, derived, damage):
    """A file that is not exactly of this state is never trusted: made whole again, and right."""
    w = World(tmp_path / "a", 5)
    for _ in range(3):
        w.step()
    _check(w.db, random.Random(0))
    path = matcherfile.matcher_path(w.db)
    if damage == "truncated":
        with open(path, "r+b") as fh:
            fh.truncate(os.path.getsize(path) // 2)
    elif damage == "byte":            # one byte of a key: the header and the structure still check out
        from thinkingdb.store.graphfile import map_container
        _, arrays, buf = map_container(path, matcherfile.MATCHER_MAGIC)
        at = arrays._start + arrays._layout["key_blob"][2]
        b = buf[at]
        buf.close()
        with open(path, "r+b") as fh:
            fh.seek(at)
            fh.write(bytes([b ^ 0x01]))
    elif damage == "stale":           # a file naming a later state than the store's
        with KnowledgeBase(w.db, default_rules=False) as kb:
            s = store_stamp(kb.store)
        os.replace(path, path + ".keep")
        matcherfile.save(w.db, Stamp(s.generation + 5, s.token, s.max_fact), symboltable.table_params(), {})
    elif damage == "params":          # made by another tokenizer
        with KnowledgeBase(w.db, default_rules=False) as kb:
            s = store_stamp(kb.store)
        matcherfile.save(w.db, s, {**symboltable.table_params(), "stemmer": "0"}, {})
    elif damage == "foreign":         # another store's file, of an earlier generation
        other = World(tmp_path / "b", 6)
        _check(other.db, random.Random(0))
        shutil.copy(matcherfile.matcher_path(other.db), path)
    elif damage == "garbage":
        with open(path, "wb") as fh:
            fh.write(b"TDBMATCH" + os.urandom(300))
    elif damage == "log gap":         # a write the logs do not cover
        w.step()
        with sqlite3.connect(w.db) as conn:
            conn.execute("DELETE FROM change_log")
    _rebuilt(w.db, derived)


def test_label_removed_while_symbol_stays(tmp_path, derived):
    """A retract takes a key's only label while another source still asserts the symbol: the patched
    file drops the key, and no caller matches it any more (it has no label); a label given again by
    a later source brings it back."""
    db = str(tmp_path / "kb.sqlite")
    (tmp_path / "a.tdb").write_text('"Zebra Crossing" uses nginx.\n', encoding="utf-8")
    with KnowledgeBase(db, default_rules=False) as kb:
        kb.ingest([str(tmp_path / "a.tdb")])
        from thinkingdb.model import Fact
        with kb.store.transaction():
            kb.store.add_facts([(Fact("zebra_crossing", "uses", "libc"), "api.tdb", 1, None)])
    _check(db, random.Random(0))
    with KnowledgeBase(db, default_rules=False) as kb:
        with kb.store.transaction():
            kb.store.retract_source(str(tmp_path / "a.tdb"))
    _check(db, random.Random(0))
    with KnowledgeBase(db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        assert lanes.state.graph.symbol_id("zebra_crossing") is not None
        assert lanes.matcher(lanes.access.view(Caller(), parse_date(DAY))).match("zebra crossing") == ([], [])
        with kb.store.transaction():
            kb.store.add_labels({"zebra_crossing": "ZebraCrossing"}, source="later")
    _check(db, random.Random(0))
    assert derived["derived"] == 2 and derived["whole"] == 1


_WRITER = """
import sys
from thinkingdb.api import KnowledgeBase
with KnowledgeBase(sys.argv[1], default_rules=False) as kb:
    kb.ingest([sys.argv[2]])
"""


def test_another_process_write_is_seen(tmp_path, derived):
    """A knowledge base open in this process sees the labels another process wrote: the next search
    matches the new symbol (its file patched to the new state)."""
    w = World(tmp_path, 21)
    extra = tmp_path / "new.tdb"
    extra.write_text('"Zebra Crossing" uses nginx.\n', encoding="utf-8")
    with KnowledgeBase(w.db, default_rules=False) as kb:
        lanes = Lanes(kb, kb._state())
        view = lanes.access.view(Caller(), parse_date(DAY))
        assert "zebra_crossing" not in lanes.matcher(view).match("a zebra crossing")[0]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        subprocess.run([sys.executable, "-c", _WRITER, w.db, str(extra)], check=True, env=env)
        res = kb.search("zebra crossings", profile="kb-thinkingdb", as_of=DAY)
        assert res.trace["lanes"]["closure"]["query_symbols"] == ["zebra_crossing"]
    assert derived["derived"] >= 1
    _check(w.db, random.Random(1))
