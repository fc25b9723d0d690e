"""Fuzzing the language and every reader (issue 21): random bytes, grammar-aware token soup, invalid
UTF-8, byte-order marks, NUL, CRLF, long lines, deep nesting and huge repetition bounds.

Every case must end in success or an error of the project's tree (``ThinkingDBError``), an ingest
that is refused must leave the store exactly as it was (``Store.dump``), and no case may take long
(hypothesis deadlines). ``CASES`` counts what ran, for the closing note.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.errors import IngestError, ThinkingDBError
from thinkingdb.language import compile_source

CASES: Counter = Counter()
EXTENSIONS = [".tdb", ".tsv", ".csv", ".jsonl", ".md", ".txt"]
try:
    import pyoxigraph  # noqa: F401 (the rdf extra: its readers are fuzzed too)
    EXTENSIONS += [".nt", ".ttl"]
except ImportError:
    pass
TOKENS = ["nginx", "depends_on", "openssl", '"Secure Execution"', "?x", "?y", "?_", ".", ",", "@0.5", "@1e400",
          "@-1", "rule", "r1", ":", "=>", "relation", "transitive", "symmetric", "inverse", "alias", "not",
          "why", "?", "(", ")", "|", "/", "^", "+", "*", "{", "}", "{2,1000000000}", "{0,}", "1", "\n", " ",
          "#", '"', "\\", "\r\n", "\x00", "\ufeff", "é", "∀", "acl:", "---", "```tdb", "```", "# Title"]
soup = st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join)
special = st.sampled_from([
    "? a " + "(" * 5000 + "r" + ")" * 5000 + " ?x.",
    "? a " + "^" * 20000 + "r ?x.",
    "? a (r|s){2,1000000000} ?x.",
    "? a r{1000000000,} ?x.",
    "a r b @1e400.",
    "a " * 50000 + ".",
    "x" * 200000 + " r y.",
    "rule r: " + ", ".join(f"?x{i} r ?x{i + 1}" for i in range(300)) + " => ?x0 r ?x300.",
])
FUZZ = settings(max_examples=30, deadline=20000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


def _only_ours(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except ThinkingDBError:
        return None


TEXTS = st.one_of(st.text(max_size=300), soup, special)
"""Text cases for the language, queries, why and search (benchmarks/fuzz.py drives the same)."""


def language_case(text: str) -> None:
    """One fuzz case of the language: success or a ThinkingDBError."""
    _only_ours(compile_source, text, "fuzz.tdb")


@FUZZ
@given(text=TEXTS)
def test_language_never_escapes(text):
    CASES["language (compile_source)"] += 1
    language_case(text)


def make_kb(d):
    """The store the fuzz cases run against (a folder ``d``): a transitive chain and a restricted unit."""
    (d / "base.tdb").write_text("relation depends_on transitive.\nnginx depends_on openssl.\nopenssl depends_on libc.\n",
                                encoding="utf-8")
    (d / "u.jsonl").write_text(json.dumps({"id": "u1", "claim": "nginx uses openssl", "acl": ["x"]}) + "\n",
                               encoding="utf-8")
    k = KnowledgeBase(str(d / "kb.sqlite"))
    k.ingest([str(d / "base.tdb"), str(d / "u.jsonl")])
    return k


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzzkb")
    k = make_kb(d)
    yield k, d
    k.close()


def query_case(k, text: str) -> None:
    """One fuzz case of query, why and search over the same text."""
    _only_ours(k.query, text, caller=None)
    _only_ours(k.why, text)
    if text.strip():
        _only_ours(k.search, text, profile="kb-thinkingdb")


@FUZZ
@given(text=TEXTS)
def test_query_why_search_never_escape(kb, text):
    k, _ = kb
    CASES["query / why / search text"] += 3
    query_case(k, text)


def _bytes_cases():
    raw = st.binary(max_size=400)
    text = st.one_of(st.text(max_size=300), soup).map(lambda t: t.encode("utf-8", "surrogatepass"))
    mutate = st.tuples(st.one_of(raw, text), st.sampled_from(["", "bom", "crlf", "nul", "badutf8", "cr"])).map(
        lambda p: {"": p[0], "bom": b"\xef\xbb\xbf" + p[0], "crlf": p[0].replace(b"\n", b"\r\n"),
                   "nul": p[0] + b"\x00", "badutf8": p[0] + b"\xff\xfe", "cr": p[0].replace(b"\n", b"\r")}[p[1]])
    records = st.sampled_from([
        b"a\tr\tb\t1e400\n", b"a\tr\n", b"\t\t\t\n", json.dumps({"id": "z", "x": 1}).encode()[:-1] + b", \"y\": " +
        b"[" * 5000 + b"]" * 5000 + b"}\n", b'{"id": "q", "triples": [["a", "r", "b", ' + b"9" * 500 + b"]]}\n",
        b"---\nacl:\n  - \n---\n# T\ntext\n", b"# T\n```tdb\nrule r: ?x a ?y => ?y a ?x.\n", b"x" * 1_000_000 + b"\n",
    ])
    return st.one_of(mutate, records, st.lists(records, min_size=2, max_size=4).map(b"".join))


BYTES = _bytes_cases()
"""File contents for every reader (benchmarks/fuzz.py drives the same)."""


def reader_case(k, d, data: bytes, ext: str, skip: bool) -> None:
    """One fuzz case of a reader: the file is ingested, or refused with diagnostics naming it and
    the store unchanged (AssertionError otherwise); an accepted file is retracted again."""
    p = d / f"fuzz{ext}"
    p.write_bytes(data)
    before = k.store.dump()
    try:
        k.ingest([str(p)], skip_invalid=skip, rejects_path=str(d / "rejects.jsonl") if skip else None)
    except IngestError as exc:
        assert exc.diagnostics and all(x.source.endswith(f"fuzz{ext}") for x in exc.diagnostics)
        assert k.store.dump() == before            # refused: nothing changed
        return
    with k.store.transaction():                    # accepted: take it back out for the next case
        k.store.retract_source(os.path.normpath(str(p)))
    k._cache = None


@FUZZ
@given(data=BYTES, ext=st.sampled_from(EXTENSIONS), skip=st.booleans())
def test_every_reader_refuses_cleanly_and_changes_nothing(kb, data, ext, skip):
    k, d = kb
    CASES[f"reader {ext}"] += 1
    reader_case(k, d, data, ext, skip)


def test_zz_report():
    print("\nfuzz cases run (0 escapes, or a test above failed):")
    for name, n in sorted(CASES.items()):
        print(f"  {name:<40} {n}")
    print(f"  {'total':<40} {sum(CASES.values())}")
