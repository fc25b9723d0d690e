"""Hypothesis strategies and an independent naive BM25F for the lexical tests."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping

from hypothesis import strategies as st

# Few distinct words so that documents share terms; no stopwords, unstemmable forms.
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
# Compound words (whole form and parts; a repeated part; three parts) made of the words above.
COMPOUNDS = ["alpha-bravo", "bravo-charlie", "delta-echo-foxtrot", "india-india"]
FIELDS = ["topic", "claim", "role", "condition"]

words = st.sampled_from(WORDS + COMPOUNDS)
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
    groups: Callable[[str], list[tuple[str, ...]]],
    weights: Mapping[str, float],
    k1: float = 1.2,
    b: float = 0.75,
) -> list[tuple[str, float]]:
    """Every matching document with its score, best first, ties by id; a plain loop over documents.

    ``groups`` gives the terms of each word (a tokenizer's ``groups``); a group of
    two or more terms is a compound word: its whole form, then its parts. As
    ``lexical.scoring`` documents: a compound takes one position in the length,
    and in a query scores the better of its whole form and the sum of its parts.
    """
    words = {d: {f: groups(text) for f, text in fields.items()} for d, fields in docs.items()}
    tokens = {d: {f: [t for g in gs for t in g] for f, gs in fields.items()} for d, fields in words.items()}
    length = {d: {f: sum(len(g) - 1 if len(g) > 1 else 1 for g in gs) for f, gs in fields.items()} for d, fields in words.items()}
    n = len(docs)
    avgdl = {}
    for f in weights:
        lengths = [length[d][f] for d in docs if length[d].get(f)]
        avgdl[f] = sum(lengths) / len(lengths) if lengths else 1.0

    def term_score(d: str, term: str) -> float:
        df = sum(1 for t in tokens.values() if any(term in toks for toks in t.values()))
        if df == 0:
            return 0.0
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        total = 0.0
        for f, toks in tokens[d].items():
            tf = toks.count(term)
            if tf:
                norm = 1 - b + b * length[d][f] / avgdl[f]
                total += idf * weights[f] * tf * (k1 + 1) / (tf + k1 * norm)
        return total

    results = []
    clauses = Counter(groups(query))
    for d in docs:
        total = 0.0
        for group, qf in clauses.items():
            if len(group) == 1:
                total += qf * term_score(d, group[0])
            else:
                total += qf * max(term_score(d, group[0]), sum(term_score(d, p) for p in group[1:]))
        if total > 0:
            results.append((d, total))
    results.sort(key=lambda r: (-r[1], r[0]))
    return results
