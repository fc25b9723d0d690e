"""Retrieval: one pipeline, three profiles: lanes, expansion, fusion, thresholds, fold, evaluation.

``from thinkingdb.retrieval import search`` keeps working: the pipeline's public names are re-exported.
"""

from __future__ import annotations

__all__ = ["Result", "SearchResult", "fold_result", "search"]


def __getattr__(name: str):
    """The pipeline's names, imported on first use: a query's access check reads
    ``thinkingdb.retrieval.lanes`` and should not load the search pipeline (BM25, HDC) with it."""
    if name in __all__:
        from . import pipeline
        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
