"""Ingestion of TSV, JSON Lines and .tdb: values, rejects with file/line/column, streaming, skip-invalid."""

import io
import json

import pytest

from thinkingdb.store import tsv as ingest_mod
from thinkingdb.errors import IngestError
from thinkingdb.store.ingest import ingest
from thinkingdb.model import Triple
from thinkingdb.progress import Progress
from thinkingdb.store.sqlite import Store


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "kb.sqlite")) as st:
        yield st


def _write(tmp_path, name, text, binary=False):
    p = tmp_path / name
    p.write_bytes(text) if binary else p.write_text(text, encoding="utf-8", newline="")
    return str(p)


def test_tsv_values(tmp_path, store):
    vocab = _write(tmp_path, "v.tdb", "relation part_of inverse has_part.\n")
    p = _write(tmp_path, "e.tsv", "# header\r\nnginx\tdependsOn\tOpen SSL\t0.25\r\n\r\ncar\thasPart\tWheel\n"
                                  "  # indented comment\nNginx\tdepends_on\topen-ssl\t0.75\nlast\tuses\tline")
    r = ingest(store, [vocab, p])
    assert (r.facts, r.units, r.rejected) == (4, 0, 0)
    assert sorted((str(f.triple), f.confidence) for f in store.facts()) == [
        ("last uses line", 1.0), ("nginx depends_on open_ssl", 0.75), ("wheel part_of car", 1.0)]
    assert [(p_["line"], p_["confidence"]) for p_ in store.provenance(Triple("nginx", "depends_on", "open_ssl"))] \
        == [(2, 0.25), (6, 0.75)]
    assert store.labels()["open_ssl"] == "Open SSL" and store.labels()["wheel"] == "Wheel"


@pytest.mark.parametrize("line,col,reason", [
    ("a\tb", 1, "expected 3 or 4 tab-separated fields (subject, relation, object, confidence), found 2"),
    ("a\tb\tc\td\te", 1, "found 5"),
    ("a\tb\tc\tnan", 7, "confidence must be a finite number, got nan"),
    ("a\tb\tc\t1.5", 7, "confidence must be in [0, 1], got 1.5"),
    ("a\tb\tc\t-0.1", 7, "confidence must be in [0, 1], got -0.1"),
    ("a\tb\tc\thigh", 7, "confidence must be a number, got 'high'"),
    ("a\tb\tc\tinf", 7, "confidence must be a finite number, got inf"),
    ("\tb\tc", 1, "subject: empty symbol"),
    ("a\t \tc", 3, "relation: empty relation name"),
    ("a\tb\t\"\"", 5, "object: empty symbol"),
])
def test_tsv_rejects_name_file_line_column(tmp_path, store, line, col, reason):
    p = _write(tmp_path, "bad.tsv", "ok\tuses\tfine\n" + line + "\n")
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    d = err.value.first
    assert (d.source.endswith("bad.tsv"), d.line, d.column) == (True, 2, col)
    assert reason in d.reason
    assert store.stats()["facts"] == 0


def test_binary_and_non_utf8_lines(tmp_path, store):
    p = _write(tmp_path, "b.tsv", b"a\tb\tc\nx\ty\t\xffz\nq\x00\tr\ts\n", binary=True)
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    assert [(d.line, d.column, d.reason.split(" (")[0]) for d in err.value.diagnostics] == [
        (2, 5, "not UTF-8 text"), (3, 2, "binary data")]


def test_every_error_is_reported_and_skip_invalid_writes_rejects(tmp_path, store):
    p = _write(tmp_path, "m.tsv", "a\tuses\tb\nbad\nc\tuses\td\t2\ne\tuses\tf\n")
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    assert [d.line for d in err.value.diagnostics] == [2, 3]
    rejects = tmp_path / "rejects.jsonl"
    r = ingest(store, [p], skip_invalid=True, rejects_path=str(rejects))
    assert (r.facts, r.rejected, r.rejects_path) == (2, 2, str(rejects))
    rows = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert [(x["line"], x["record"]) for x in rows] == [(2, "bad"), (3, "c\tuses\td\t2")]
    assert "confidence must be in [0, 1], got 2.0" in rows[1]["reason"]


def test_streaming_small_blocks_and_chunks_give_the_same_store(tmp_path, monkeypatch):
    lines = "".join(f"s{i % 97}\tr{i % 3}\to{i % 89}\t{(i % 10) / 10}\n" for i in range(5000))
    p = _write(tmp_path, "big.tsv", "# c\n" + lines)
    with Store(str(tmp_path / "one.sqlite")) as st:
        ingest(st, [p])
        one = st.dump()
    monkeypatch.setattr(ingest_mod, "BLOCK", 37)
    monkeypatch.setattr(ingest_mod, "CHUNK", 7)
    monkeypatch.setattr(ingest_mod, "_CACHE_MAX", 5)
    with Store(str(tmp_path / "two.sqlite")) as st:
        ingest(st, [p])
        two = st.dump()
    assert one == two and len(one["provenance"]) == 5000
    assert max(c for *_, c in one["facts"]) == 0.9


def test_jsonl_units(tmp_path, store):
    units = [
        {"id": "u1", "role": "policy", "topic": "TLS", "claim": "use TLS 1.3", "utility_acts": ["secure"],
         "acl": ["staff", "sec"], "region": "eu", "effective_from": "2024-01-01", "effective_to": "2024-12-31",
         "chunk": "p3", "source": "handbook.pdf", "owner": "ops",
         "triples": [["nginx", "uses", "TLS 1.3", 0.9], {"subject": "tls_1.3", "relation": "isA", "object": "protocol"}]},
        {"id": "u2", "claim": "no facts"},
    ]
    p = _write(tmp_path, "u.jsonl", "\n".join(json.dumps(u) for u in units) + "\n\n")
    r = ingest(store, [p])
    assert (r.units, r.facts) == (2, 2)
    u1 = store.unit("u1")
    assert (u1.acl, u1.region, u1.effective_from, u1.effective_to, u1.source, u1.utility_acts) == (
        ("staff", "sec"), "eu", "2024-01-01", "2024-12-31", "handbook.pdf", ("secure",))
    assert json.loads(u1.extra) == {"owner": "ops"}
    assert store.unit_facts() == {"u1": [Triple("nginx", "uses", "tls_1.3"), Triple("tls_1.3", "is_a", "protocol")]}
    assert store.provenance(Triple("nginx", "uses", "tls_1.3"))[0]["unit_id"] == "u1"


@pytest.mark.parametrize("obj,reason", [
    ({"claim": "x"}, "needs a non-empty string field 'id'"),
    ({"id": "a", "effective_from": "2024-02-30"}, "effective_from"),
    ({"id": "a", "effective_from": "2024-05-01", "effective_to": "2024-01-01"}, "is before effective_from"),
    ({"id": "a", "acl": "x", "triples": [["a", "b"]]}, "triples[0]"),
    ({"id": "a", "triples": [["a", "b", "c", 7]]}, "triples[0] confidence must be in [0, 1], got 7"),
    ({"id": "a", "topic": 5}, "field 'topic' must be a string"),
    # json.dumps writes a lone surrogate as the escape \ud800, which json.loads reads back as one
    ({"id": "a", "triples": [["a", "r", "b\ud800"]]}, "field 'triples'[0][2] is not valid Unicode"),
    ({"id": "a", "topic": "x", "features": {"\udc00": 1}}, "a key of field 'features' is not valid Unicode"),
])
def test_jsonl_rejects(tmp_path, store, obj, reason):
    p = _write(tmp_path, "u.jsonl", json.dumps({"id": "ok"}) + "\n" + json.dumps(obj) + "\n")
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    assert err.value.first.line == 2 and reason in err.value.first.reason


def test_jsonl_escapes_of_valid_text_are_accepted(tmp_path, store):
    # json.dumps escapes every non-ASCII character; a surrogate pair (the emoji) is one valid character
    obj = {"id": "u", "topic": "café \U0001F600", "claim": "a literal \\ud800 is no escape"}
    ingest(store, [_write(tmp_path, "u.jsonl", json.dumps(obj) + "\n")])
    unit = store.unit("u")
    assert (unit.topic, unit.claim) == ("café \U0001F600", "a literal \\ud800 is no escape")


def test_jsonl_nan_and_bad_json(tmp_path, store):
    p = _write(tmp_path, "u.jsonl", '{"id": "a", "triples": [["a","b","c", NaN]]}\n{"id": \n')
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    assert [(d.line, d.reason) for d in err.value.diagnostics] == [
        (1, "NaN is not a finite number"), (2, "invalid JSON: Expecting value")]


def test_tdb_with_several_errors(tmp_path, store):
    p = _write(tmp_path, "x.tdb", "a b c.\nx y z @1.5.\nfine fact here.\nq r.\n")
    with pytest.raises(IngestError) as err:
        ingest(store, [p])
    assert [d.line for d in err.value.diagnostics] == [2, 4]


@pytest.mark.parametrize("name,content,reason", [
    ("empty.tsv", "# only a comment\n", "holds no triples"),
    ("empty.tdb", "# nothing\n", "holds no facts"),
    ("empty.jsonl", "\n", "holds no knowledge units"),
    ("x.xlsx", "a,b,c\n", "unsupported file type '.xlsx'"),
])
def test_empty_and_unsupported(tmp_path, store, name, content, reason):
    p = _write(tmp_path, name, content)
    with pytest.raises(IngestError, match=reason):
        ingest(store, [p])


def test_missing_file(tmp_path, store):
    with pytest.raises(IngestError, match="no such file"):
        ingest(store, [str(tmp_path / "nope.tsv")])


def test_progress_bar_draws_and_finishes():
    out = io.StringIO()
    bar = Progress("ingest x", 100, enabled=True, stream=out)
    bar.update(100, 5)
    bar.done()
    text = out.getvalue()
    assert "ingest x [" + "#" * 30 + "] 100.0% 5 records " in text and text.endswith("/s\n")
