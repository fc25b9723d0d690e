"""Query decomposition: long queries are split into sub-queries scored independently.

With ``decompose=True`` and at least ``threshold`` (default 4) content words — the query's whitespace
words that the lexical tokenizer keeps (a stopword, or punctuation alone, yields no term and is not a
content word) — the query becomes the sliding windows of two consecutive content words (``n`` words
give ``n − 1`` sub-queries), kept as written so the BM25 lane analyzes each sub-query exactly as it
analyzes a whole query. Each sub-query is searched on its own; a result's score
is the mean of its scores over the sub-queries (0 where a sub-query missed it), multiplied by
``1 + intersection_bonus`` (default 0.25) when at least two sub-queries found it. Shorter queries are
searched whole.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..numeric import check_number

SearchFn = Callable[[str], Sequence[tuple[str, float]]]


def content_words(tokenizer: Callable[[str], Sequence[str]], text: str) -> list[str]:
    """The whitespace words of ``text`` that yield at least one term, in order.

    >>> content_words(lambda w: [] if w.lower() in {"the", "for", "?"} else [w.lower()], "Policy for the laptop ?")
    ['Policy', 'laptop']
    """
    return [w for w in text.split() if tokenizer(w)]


def sub_queries(terms: Sequence[str], threshold: int = 4) -> list[str]:
    """Sliding pairs of content terms, or the whole query when it is short.

    >>> sub_queries(["refurbish", "laptop", "replac", "polici"])
    ['refurbish laptop', 'laptop replac', 'replac polici']
    >>> sub_queries(["rpl-14"])
    ['rpl-14']
    """
    if len(terms) < threshold:
        return [" ".join(terms)]
    return [f"{a} {b}" for a, b in zip(terms, terms[1:])]


def combine(per_query: Sequence[Sequence[tuple[str, float]]], intersection_bonus: float = 0.25) -> list[tuple[str, float]]:
    """Merge sub-query results: mean score, times ``1 + bonus`` for results found at least twice.

    >>> combine([[("a", 1.0), ("b", 0.8)], [("b", 0.8)]], 0.25)
    [('b', 1.0), ('a', 0.5)]
    """
    bonus = check_number(intersection_bonus, "intersection_bonus", low=0.0)
    n = max(len(per_query), 1)
    sums: dict[str, float] = {}
    hits: dict[str, int] = {}
    for results in per_query:
        for uid, score in results:
            sums[uid] = sums.get(uid, 0.0) + score
            hits[uid] = hits.get(uid, 0) + 1
    out = [(uid, total / n * (1.0 + bonus if hits[uid] >= 2 else 1.0)) for uid, total in sums.items()]
    return sorted(out, key=lambda r: (-r[1], r[0]))


def decomposed_search(terms: Sequence[str], search: SearchFn, *, threshold: int = 4,
                      intersection_bonus: float = 0.25) -> tuple[list[tuple[str, float]], list[str]]:
    """Run ``search`` on every sub-query and combine; returns (results, the sub-queries used)."""
    subs = sub_queries(terms, threshold)
    if len(subs) == 1:
        return list(search(subs[0])), subs
    return combine([search(q) for q in subs], intersection_bonus), subs
