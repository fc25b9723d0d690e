"""BM25F index: hand-computed scores, a naive oracle, incremental updates, filters, role boost, threads."""

from __future__ import annotations

import gc
import io
import math
import random
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lexical import (
    DEFAULT_FIELD_WEIGHTS,
    BM25Index,
    BM25Params,
    Hit,
    LexicalError,
    TextError,
    Tokenizer,
)
from lexical.errors import DocumentError, FieldError, ParameterError, UnknownDocumentError

from strategies_lexical import WORDS, field_docs, naive_bm25f, ops, plain_docs, queries

PLAIN_TOK = Tokenizer(stem=False, stopwords=[])
WEIGHTS = {"topic": 1.5, "claim": 1.0, "role": 0.5, "condition": 0.6, "text": 1.0}


def plain_index(**kw) -> BM25Index:
    return BM25Index(field_weights={"text": 1.0}, tokenizer=PLAIN_TOK, **kw)


def assert_same_ranking(ours: list[Hit], expected: list[tuple[str, float]]) -> None:
    """Same scores position by position; ids equal except inside groups of (nearly) equal scores."""
    assert len(ours) == len(expected)
    for hit, (_, score) in zip(ours, expected):
        assert hit.score == pytest.approx(score, rel=1e-9, abs=1e-12)
    i = 0
    while i < len(expected):
        j = i + 1
        while j < len(expected) and math.isclose(expected[j][1], expected[i][1], rel_tol=1e-9):
            j += 1
        assert {h.doc_id for h in ours[i:j]} == {d for d, _ in expected[i:j]}
        i = j


# --------------------------------------------------------------- hand-computed


def test_three_documents_by_hand() -> None:
    idx = plain_index()
    idx.rebuild([("d1", "apple banana apple"), ("d2", "banana cherry"), ("d3", "cherry date elder fig")])
    # N = 3, dl = 3, 2, 4, avgdl = 9 / 3 = 3, k1 = 1.2, b = 0.75
    idf_apple = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # df 1: ln(8/3) = 0.98083
    idf_cherry = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # df 2: ln(1.6) = 0.47000
    d1 = idf_apple * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 3 / 3))  # tf 2, dl 3: 4.4 / 3.2
    d2 = idf_cherry * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3))  # tf 1, dl 2: 2.2 / 1.9
    d3 = idf_cherry * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / 3))  # tf 1, dl 4: 2.2 / 2.5
    assert (round(d1, 6), round(d2, 6), round(d3, 6)) == (1.348640, 0.544215, 0.413603)
    hits = idx.search("apple cherry")
    assert [h.doc_id for h in hits] == ["d1", "d2", "d3"]
    assert [h.score for h in hits] == pytest.approx([d1, d2, d3], rel=1e-12)
    # a repeated query term counts with its query frequency
    assert idx.search("apple apple")[0].score == pytest.approx(2 * d1, rel=1e-12)
    assert idx.search("zebra") == [] and idx.search("") == []


def test_compound_word_by_hand() -> None:
    idx = plain_index()
    idx.rebuild([("d1", "wing-body drag"), ("d2", "wing body"), ("d3", "drag")])
    # d1's tokens: wing-body wing body drag, but 3 positions (the whole form shares one with
    # its parts); dl = 3, 2, 1, avgdl = 6 / 3 = 2; N = 3
    assert idx.stats().total_terms == 6
    idf_whole = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # df 1: ln(8/3) = 0.98083
    idf_part = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # df 2: ln(1.6) = 0.47000
    sat_d1 = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / 2))  # tf 1, dl 3: 2.2 / 2.65
    whole_d1, parts_d1 = idf_whole * sat_d1, 2 * idf_part * sat_d1
    parts_d2 = 2 * idf_part * 1.0  # tf 1, dl = avgdl: sat 1
    assert (round(whole_d1, 6), round(parts_d1, 6), round(parts_d2, 6)) == (0.814273, 0.780383, 0.940007)
    # the better reading counts, never both: d1 gets its whole form, d2 (spelt apart, shorter) wins
    hits = idx.search("wing-body")
    assert [h.doc_id for h in hits] == ["d2", "d1"]
    assert [h.score for h in hits] == pytest.approx([parts_d2, whole_d1], rel=1e-12)
    # the parts alone score as separate terms; a repeated compound counts twice
    assert idx.search("wing body")[1].score == pytest.approx(parts_d1, rel=1e-12)
    assert idx.search("wing-body drag wing-body")[0].doc_id == "d1"
    assert idx.search("wing-body wing-body")[0].score == pytest.approx(2 * parts_d2, rel=1e-12)


def test_two_fields_by_hand() -> None:
    idx = BM25Index(tokenizer=PLAIN_TOK)
    idx.add("u1", {"topic": "sandbox", "claim": "sandbox runs code"})
    idx.add("u2", {"claim": "code review"})
    # N = 2, df(sandbox) = 1: idf = ln(1 + 1.5/1.5) = ln 2
    # avgdl topic = 1 (only u1 has a topic), avgdl claim = (3 + 2) / 2 = 2.5
    topic = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / 1))  # = 1.0
    claim = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / 2.5))  # = 2.2 / 2.38
    expected = math.log(2) * (1.5 * topic + 1.0 * claim)
    assert idx.search("sandbox") == [Hit("u1", pytest.approx(expected, rel=1e-12))]
    stats = idx.stats()
    # tokens: sandbox | sandbox runs code | code review; distinct: sandbox runs code review
    assert (stats.total_docs, stats.total_terms, stats.vocabulary_size) == (2, 6, 4)
    assert stats.avg_field_lengths["topic"] == 1.0 and stats.avg_field_lengths["claim"] == 2.5


def test_default_weights_are_the_seed() -> None:
    assert dict(DEFAULT_FIELD_WEIGHTS) == {
        "topic": 1.5, "claim": 1.0, "procedure": 1.0, "utility_acts": 0.8,
        "utility_note": 0.6, "condition": 0.6, "role": 0.5, "text": 1.0,
    }
    p = BM25Index().params
    assert (p.k1, p.b, p.role_boost) == (1.2, 0.75, 1.3)


# ---------------------------------------------------------------- naive oracle


@given(plain_docs, queries)
def test_plain_matches_naive(texts: list[str], query: str) -> None:
    docs = {f"d{i}": {"text": t} for i, t in enumerate(texts)}
    idx = plain_index()
    idx.rebuild((d, f["text"]) for d, f in docs.items())
    expected = naive_bm25f(docs, query, PLAIN_TOK.groups, {"text": 1.0})
    assert_same_ranking(idx.search(query, k=len(docs)), expected)


@given(st.lists(field_docs, min_size=1, max_size=10), queries, st.integers(1, 4))
def test_fields_match_naive_and_topk_is_a_prefix(fields: list[dict], query: str, k: int) -> None:
    docs = {f"d{i}": f for i, f in enumerate(fields)}
    idx = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK)
    idx.rebuild(docs.items())
    expected = naive_bm25f(docs, query, PLAIN_TOK.groups, WEIGHTS)
    full = idx.search(query, k=len(docs))
    assert_same_ranking(full, expected)
    assert idx.search(query, k=k) == full[:k]


def test_topk_on_a_larger_corpus_matches_naive() -> None:
    import random

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(60)]
    docs = {f"doc{i:03d}": {"text": " ".join(rng.choices(vocab, k=rng.randint(1, 30)))} for i in range(300)}
    idx = plain_index()
    idx.rebuild((d, f["text"]) for d, f in docs.items())
    for _ in range(30):
        query = " ".join(rng.choices(vocab, k=rng.randint(1, 5)))
        expected = naive_bm25f(docs, query, PLAIN_TOK.groups, {"text": 1.0})
        ours = idx.search(query, k=10)
        assert [h.doc_id for h in ours] == [d for d, _ in expected[:10]]
        assert [h.score for h in ours] == pytest.approx([s for _, s in expected[:10]], rel=1e-9)


# --------------------------------------------------------- incremental updates


def apply(idx: BM25Index, operations: list, live: dict) -> None:
    for op, key, fields in operations:
        if op in ("add", "update"):
            getattr(idx, op)(key, fields)
            live[key] = fields
        elif op == "remove":
            if key in live:
                idx.remove(key)
                del live[key]
            else:
                with pytest.raises(UnknownDocumentError):
                    idx.remove(key)
        else:
            idx.search(key, k=3)  # refreshes impacts mid-sequence


@given(ops, st.booleans(), st.booleans())
def test_incremental_equals_rebuild(operations: list, seed_first: bool, eager_compaction: bool) -> None:
    idx = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK)
    if eager_compaction:
        idx._DELTA_MIN = 2
        idx._DEAD_MIN = 1
    live: dict = {}
    if seed_first:
        seed = {f"d{i}": {"claim": " ".join(WORDS[i : i + 3])} for i in range(0, 10, 2)}
        idx.rebuild(seed.items())
        live.update(seed)
    apply(idx, operations, live)
    fresh = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK)
    fresh.rebuild(sorted(live.items()))
    assert len(idx) == len(fresh) == len(live)
    assert sorted(idx) == sorted(live)
    assert idx.stats() == fresh.stats()
    buf = io.BytesIO()
    idx.save(buf)  # whatever state the operations left, the saved index loads back the same
    buf.seek(0)
    loaded = BM25Index.load(buf)
    for query in [*WORDS, "alpha bravo", "charlie delta echo", "golf golf hotel"]:
        assert idx.search(query, k=20) == fresh.search(query, k=20) == loaded.search(query, k=20)
        assert idx.search(query, k=20, boost_role="alpha") == fresh.search(query, k=20, boost_role="alpha")
    assert loaded.stats() == fresh.stats()


def test_saved_after_adding_and_removing_a_new_word_loads() -> None:
    idx = BM25Index()
    idx.rebuild([("a", "foo")])
    idx.add("b", "bar")  # a new term, then its only document goes before any compaction
    idx.remove("b")
    buf = io.BytesIO()
    idx.save(buf)
    buf.seek(0)
    loaded = BM25Index.load(buf)
    assert list(loaded) == ["a"] and loaded.search("bar") == [] and loaded.stats().vocabulary_size == 1


def test_readding_replaces_and_removal_leaves_no_trace() -> None:
    idx = plain_index()
    idx.rebuild([("a", "red fox"), ("b", "blue whale")])
    before = idx.stats()
    idx.add("c", "red red panda")
    idx.add("c", "green turtle")
    assert idx.search("panda") == [] and idx.document_frequency("red") == 1
    idx.remove("c")
    assert idx.stats() == before
    assert idx.search("turtle") == [] and "c" not in idx


def test_many_single_adds_compact_and_match_rebuild() -> None:
    idx = plain_index()
    idx._DELTA_MIN = 16
    idx._DEAD_MIN = 8
    docs = {f"d{i}": " ".join(WORDS[j % 10] for j in range(i % 7, i % 7 + 1 + i % 5)) for i in range(200)}
    for d, text in docs.items():
        idx.add(d, text)
    for i in range(0, 200, 3):
        idx.remove(f"d{i}")
        del docs[f"d{i}"]
    assert not idx._delta_docs or len(idx._delta_docs) <= 200
    fresh = plain_index()
    fresh.rebuild(docs.items())
    for w in WORDS:
        assert idx.search(w, k=50) == fresh.search(w, k=50)


# ---------------------------------------------------------- filters and roles


@given(st.lists(field_docs, min_size=1, max_size=10), queries, st.sets(st.integers(0, 11)))
def test_allowed_filters_before_topk(fields: list[dict], query: str, allowed_idx: set[int]) -> None:
    docs = {f"d{i}": f for i, f in enumerate(fields)}
    allowed = {f"d{i}" for i in allowed_idx}
    idx = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK)
    idx.rebuild(docs.items())
    full = idx.search(query, k=100)
    filtered = idx.search(query, k=3, allowed=allowed)
    assert all(h.doc_id in allowed for h in filtered)
    assert filtered == [h for h in full if h.doc_id in allowed][:3]


def test_role_boost_multiplies_matching_role() -> None:
    idx = BM25Index(tokenizer=PLAIN_TOK)
    idx.rebuild([("p", {"role": "Procedure", "claim": "restart server"}), ("f", {"role": "fact", "claim": "restart server"})])
    plain = {h.doc_id: h.score for h in idx.search("restart")}
    assert plain["p"] == plain["f"]
    boosted = idx.search("restart", boost_role="procedure")
    assert boosted[0] == Hit("p", pytest.approx(plain["p"] * 1.3, rel=1e-12))
    assert boosted[1] == Hit("f", plain["f"])
    assert idx.search("restart", boost_role="unknown role") == idx.search("restart")


def test_search_many_equals_search() -> None:
    idx = plain_index()
    idx.rebuild([(f"d{i}", " ".join(WORDS[i % 10 : i % 10 + 3])) for i in range(40)])
    qs = ["alpha", "bravo charlie", "nothing", "juliet alpha alpha"]
    assert idx.search_many(qs, k=5) == [idx.search(q, k=5) for q in qs]
    assert idx.search_many(qs, k=5, allowed={"d1", "d2"}) == [idx.search(q, k=5, allowed={"d1", "d2"}) for q in qs]


# -------------------------------------------------------------------- errors

BAD_INPUTS = [
    (lambda: BM25Index(k1=-1), ParameterError, "k1 must be >= 0"),
    (lambda: BM25Index(b=1.5), ParameterError, "b must be in [0, 1]"),
    (lambda: BM25Index(k1=float("inf")), ParameterError, "k1 must be finite"),
    (lambda: BM25Index(role_boost=float("nan")), ParameterError, "role_boost must be finite"),
    (lambda: BM25Index(field_weights={"topic": 0}), ParameterError, "field_weights['topic'] must be > 0"),
    (lambda: BM25Index(field_weights={"topic": float("nan")}), ParameterError, "field_weights['topic'] must be finite"),
    (lambda: BM25Index(field_weights={}), ParameterError, "at least one field"),
    (lambda: BM25Index().add("x", {"colour": "red"}), FieldError, "unknown field 'colour'"),
    (lambda: BM25Index().add(3, "text"), DocumentError, "doc_id must be str"),  # type: ignore[arg-type]
    (lambda: BM25Index().add("x", {"claim": 5}), DocumentError, "field 'claim' must be str"),
    (lambda: BM25Index().remove("nope"), UnknownDocumentError, "no document with id 'nope'"),
    (lambda: BM25Index().search("x", k=-1), ParameterError, "k must be an int >= 0"),
    (lambda: BM25Index().search("x", allowed="abc"), DocumentError, "not one str"),
    # lone surrogates, as an unpaired JSON escape "\ud800" gives them
    (lambda: BM25Index().add("x", {"topic": "caf\u00e9 \ud800"}), TextError,
     "document 'x': field 'topic' is not valid Unicode: a lone surrogate U+D800 at character 5"),
    (lambda: BM25Index().add("x\udc00", "text"), TextError, "doc id 'x\\udc00' is not valid Unicode"),
    (lambda: BM25Index().search("a \udfff"), TextError, "query is not valid Unicode: a lone surrogate U+DFFF"),
    (lambda: Tokenizer()("\ud800"), TextError, "text is not valid Unicode"),
]


def test_refused_documents_leave_the_index_as_it_was() -> None:
    idx = BM25Index()
    idx.rebuild([("a", "red fox"), ("b", "blue fox")])
    before = (sorted(idx), idx.stats(), idx.search("fox"))
    with pytest.raises(TextError):
        idx.rebuild([("c", "green fox"), ("d", {"claim": "bad \ud800"})])
    with pytest.raises(TextError):
        idx.add("a", "replaced by \udbff")
    assert (sorted(idx), idx.stats(), idx.search("fox")) == before


@pytest.mark.parametrize(("call", "error", "message"), BAD_INPUTS)
def test_errors(call, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
    assert isinstance(info.value, LexicalError)


def test_params_are_frozen_and_hashable() -> None:
    p = BM25Params(field_weights={"b": 2, "a": 1})
    assert p.field_weights == (("a", 1.0), ("b", 2.0))
    assert hash(p) == hash(BM25Params(field_weights={"a": 1.0, "b": 2.0}))
    with pytest.raises(AttributeError):
        p.k1 = 2.0  # type: ignore[misc]


def test_field_value_lists_are_joined() -> None:
    idx = BM25Index(tokenizer=PLAIN_TOK)
    idx.add("u", {"utility_acts": ["isolate", "execute"], "claim": None})
    assert [h.doc_id for h in idx.search("execute")] == ["u"]
    assert idx.stats().total_terms == 2


def test_big_tables_are_not_traversed_by_the_garbage_collector() -> None:
    # a list of every term or id would be walked, element by element, by every full collection
    idx = BM25Index()
    idx.rebuild((f"d{i}", f"word{i} shared{i % 7}") for i in range(3000))
    idx.add("late", "another word")
    buf = io.BytesIO()
    idx.save(buf)
    buf.seek(0)
    for index in (idx, BM25Index.load(buf)):
        gc.collect()  # tuples and dicts of atomic values are untracked by a collection
        walked = {name: len(gc.get_referents(value, *gc.get_referents(value)))
                  for name, value in vars(index).items() if gc.is_tracked(value)}
        assert max(walked.values()) < 500, walked  # nothing in proportion to the 3,000 documents
        assert len(index._terms) > 3000 and len(index._ids) >= 3000


@pytest.fixture
def frequent_thread_switches():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up at once
    yield
    sys.setswitchinterval(old)


def _threads(targets: list) -> None:
    errors: list[BaseException] = []

    def run(target) -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_threads_sharing_an_index_get_the_serial_results(frequent_thread_switches) -> None:
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(60)]
    docs = [(f"d{i}", " ".join(rng.choices(vocab, k=12))) for i in range(1500)]
    queries = [" ".join(rng.sample(vocab, 3)) for _ in range(40)]
    idx = BM25Index(field_weights={"text": 1.0}, tokenizer=Tokenizer(stem=False, stopwords=[]))
    idx.rebuild(docs)
    expected = [idx.search(q, k=5) for q in queries]
    got: dict[int, list] = {}

    def reader(n: int):
        return lambda: got.setdefault(n, [idx.search(q, k=5) for q in queries[n:] + queries[:n]])

    _threads([reader(n) for n in range(4)])
    for n, results in got.items():
        assert results == expected[n:] + expected[:n]


def test_a_writer_and_readers_share_an_index(frequent_thread_switches) -> None:
    tok = Tokenizer(stem=False, stopwords=[])
    idx = BM25Index(field_weights={"text": 1.0}, tokenizer=tok)
    idx._DELTA_MIN = idx._DEAD_MIN = 8  # compact often while readers search
    live = {f"d{i}": f"alpha w{i % 7}" for i in range(100)}
    idx.rebuild(live.items())

    def writer() -> None:
        for i in range(300):
            live[f"n{i}"] = f"alpha beta w{i % 5}"
            idx.add(f"n{i}", live[f"n{i}"])
            if i % 3 == 0 and f"d{i % 100}" in live:
                del live[f"d{i % 100}"]
                idx.remove(f"d{i % 100}")

    def reader() -> None:
        for _ in range(200):
            hits = idx.search("alpha beta w1", k=10)
            assert len(hits) == 10 and hits == sorted(hits, key=lambda h: (-h.score, h.doc_id))

    _threads([writer, reader, reader])
    fresh = BM25Index(field_weights={"text": 1.0}, tokenizer=tok)
    fresh.rebuild(sorted(live.items()))
    assert sorted(idx) == sorted(live) and idx.stats() == fresh.stats()
    for query in ["alpha", "beta w1", "w3 w6 alpha"]:
        assert idx.search(query, k=50) == fresh.search(query, k=50)


def test_len_and_membership_never_see_half_an_update(frequent_thread_switches) -> None:
    idx = BM25Index(field_weights={"text": 1.0}, tokenizer=Tokenizer(stem=False, stopwords=[]))
    idx.rebuild((f"d{i}", f"word{i}") for i in range(50))
    seen: list[tuple[bool, int]] = []

    def updater() -> None:
        for i in range(2000):
            idx.update("d0", f"text {i}")  # replaces: removes then re-adds under one lock

    def watcher() -> None:
        for _ in range(20000):
            seen.append(("d0" in idx, len(idx)))

    _threads([updater, watcher])
    assert set(seen) == {(True, 50)}


@pytest.mark.parametrize("tokenizer", [Tokenizer(), Tokenizer(stem=False, stopwords=["the"])])
def test_pickle_and_deepcopy_keep_every_score(tokenizer: Tokenizer) -> None:
    import copy
    import pickle

    idx = BM25Index(tokenizer=tokenizer)
    idx.rebuild([("a", {"topic": "red fox", "claim": "the fox runs"}), ("b", "blue fox")])
    idx.add("c", "late fox")  # a delta segment, not yet compacted
    for twin in (pickle.loads(pickle.dumps(idx)), copy.deepcopy(idx)):
        assert twin.tokenizer == tokenizer and twin.stats() == idx.stats()
        assert twin.search("fox runs", k=5) == idx.search("fox runs", k=5)
        twin.add("d", "fox fox")  # the copy is independent and has a lock of its own
        assert "d" in twin and "d" not in idx
