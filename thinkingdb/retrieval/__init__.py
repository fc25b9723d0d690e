"""Retrieval: one pipeline, three profiles: lanes, expansion, fusion, thresholds, fold, evaluation.

``from thinkingdb.retrieval import search`` keeps working: the pipeline's public names are re-exported.
"""

from .pipeline import Result, SearchResult, fold_result, search

__all__ = ["Result", "SearchResult", "fold_result", "search"]
