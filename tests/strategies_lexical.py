"""Hypothesis strategies and an independent naive BM25F for the lexical tests."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping

from hypothesis import strategies as st

# Few distinct words so that documents share terms; no stopwords, unstemmable forms.
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
FIELDS = ["topic", "claim", "role", "condition"]

words = st.sampled_from(WORDS)
texts = st.lists(words, min_size=0, max_size=8).map(" ".join)
plain_docs = st.lists(st.lists(words, min_size=1, max_size=10).map(" ".join), min_size=1, max_size=12)
field_docs = st.dictionaries(st.sampled_from(FIELDS), texts, min_size=1, max_size=len(FIELDS))
doc_ids = st.sampled_from([f"d{i}" for i in range(10)])
queries = st.lists(words, min_size=1, max_size=4).map(" ".join)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), doc_ids, field_docs),
        st.tuples(st.just("update"), doc_ids, field_docs),
        st.tuples(st.just("remove"), doc_ids, st.none()),
        st.tuples(st.just("search"), queries, st.none()),
    ),
    max_size=40,
)


def naive_bm25f(
    docs: Mapping[str, Mapping[str, str]],
    query: str,
    tokenize: Callable[[str], list[str]],
    weights: Mapping[str, float],
    k1: float = 1.2,
    b: float = 0.75,
) -> list[tuple[str, float]]:
    """Every matching document with its score, best first, ties by id; a plain loop over documents."""
    tokens = {d: {f: tokenize(text) for f, text in fields.items()} for d, fields in docs.items()}
    n = len(docs)
    avgdl = {}
    for f in weights:
        lengths = [len(t[f]) for t in tokens.values() if t.get(f)]
        avgdl[f] = sum(lengths) / len(lengths) if lengths else 1.0
    results = []
    qcounts = Counter(tokenize(query))
    for d, fields in tokens.items():
        total = 0.0
        matched = False
        for term, qf in qcounts.items():
            df = sum(1 for t in tokens.values() if any(term in toks for toks in t.values()))
            if df == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for f, toks in fields.items():
                tf = toks.count(term)
                if tf:
                    matched = True
                    norm = 1 - b + b * len(toks) / avgdl[f]
                    total += qf * idf * weights[f] * tf * (k1 + 1) / (tf + k1 * norm)
        if matched:
            results.append((d, total))
    results.sort(key=lambda r: (-r[1], r[0]))
    return results
