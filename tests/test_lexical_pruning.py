"""MaxScore pruning: a pruned search returns exactly (bit for bit) what a full one does."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lexical.index
from lexical import BM25Index, Tokenizer

from strategies_lexical import naive_bm25f

PLAIN_TOK = Tokenizer(stem=False, stopwords=[])
WEIGHTS = {"topic": 1.5, "claim": 1.0, "role": 0.5, "text": 1.0}
# a few common words (long posting lists, low idf) and rarer ones (short lists, high idf)
COMMON = ["alpha", "bravo", "charlie"]
RARE = ["delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo"]
# compound words: scored as the better of the whole form and the sum of the parts
COMPOUND = ["alpha-delta", "bravo-charlie", "echo-alpha-golf"]
word = st.one_of(st.sampled_from(COMMON), st.sampled_from(COMMON), st.sampled_from(RARE), st.sampled_from(COMPOUND))
text = st.lists(word, min_size=0, max_size=12).map(" ".join)
doc = st.fixed_dictionaries({"claim": text}, optional={"topic": text, "role": st.sampled_from(["x", "y"])})
query = st.lists(word, min_size=2, max_size=5).map(" ".join)


def twins(role_boost: float) -> tuple[BM25Index, BM25Index]:
    """An index that prunes whenever it can and one that never does."""
    pruned = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK, role_boost=role_boost)
    full = BM25Index(field_weights=WEIGHTS, tokenizer=PLAIN_TOK, role_boost=role_boost)
    pruned._PRUNE_MIN = 0
    full._PRUNE_MIN = 1 << 62
    for idx in (pruned, full):
        idx._DELTA_MIN = 4
        idx._DEAD_MIN = 3
    return pruned, full


@given(
    st.lists(doc, min_size=1, max_size=40),
    st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 49), doc), max_size=12),
    st.lists(query, min_size=1, max_size=4),
    st.integers(1, 6),
    st.sampled_from([1.3, 0.5]),
    st.one_of(st.none(), st.sets(st.integers(0, 49))),
    st.sampled_from([None, "x"]),
)
def test_pruned_equals_full(docs, edits, qs, k, role_boost, allowed_idx, role) -> None:
    pruned, full = twins(role_boost)
    live = {f"d{i}": d for i, d in enumerate(docs)}
    for idx in (pruned, full):
        idx.rebuild(live.items())
    for op, i, fields in edits:  # a delta segment and dead slots
        key = f"d{i}"
        if op == "add":
            live[key] = fields
            pruned.add(key, fields)
            full.add(key, fields)
        elif key in live:
            del live[key]
            pruned.remove(key)
            full.remove(key)
    allowed = None if allowed_idx is None else {f"d{i}" for i in allowed_idx}
    for q in qs:
        assert pruned.search(q, k=k, allowed=allowed, boost_role=role) == full.search(
            q, k=k, allowed=allowed, boost_role=role
        )
    assert pruned.search_many(qs, k=k) == full.search_many(qs, k=k)


def test_pruning_happens_and_matches_naive(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"pruned": 0, "total": 0}
    real = lexical.index.pruned_gather

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls["total"] += 1
        calls["pruned"] += out is not None
        return out

    monkeypatch.setattr(lexical.index, "pruned_gather", spy)
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(200)]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like: a few very common words
    vocab += [f"w{i}-w{i + 7}" for i in range(20)]  # compound words
    weights += [0.05] * 20
    docs = {f"doc{i:04d}": {"text": " ".join(rng.choices(vocab, weights, k=rng.randint(1, 40)))} for i in range(250)}
    pruned, full = twins(1.3)
    for idx in (pruned, full):
        idx.rebuild((d, f["text"]) for d, f in docs.items())
    for _ in range(25):
        q = " ".join(rng.choices(vocab, weights, k=rng.randint(2, 5)))
        ours = pruned.search(q, k=10)
        assert ours == full.search(q, k=10)
        expected = naive_bm25f(docs, q, PLAIN_TOK.groups, {"text": 1.0})[:10]
        assert [h.doc_id for h in ours] == [d for d, _ in expected]
        assert [h.score for h in ours] == pytest.approx([s for _, s in expected], rel=1e-12)
    assert calls["pruned"] >= 10, calls


def test_rebuild_forgets_cached_bounds() -> None:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(30)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    pruned, full = twins(1.3)
    for _ in range(3):  # each rebuild restarts the statistics version at 0
        docs = [(f"d{i}", " ".join(rng.choices(vocab, weights, k=rng.randint(1, 20)))) for i in range(rng.randint(50, 150))]
        for idx in (pruned, full):
            idx.rebuild(docs)
        for _ in range(10):
            q = " ".join(rng.choices(vocab, weights, k=3))
            assert pruned.search(q, k=5) == full.search(q, k=5)
