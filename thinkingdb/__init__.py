"""ThinkingDB: a symbolic reasoning engine for knowledge bases.

A normalized fact graph, written in a small language, drives bounded forward-chaining closure that
keeps a proof for every derived fact; BM25 and hyperdimensional lanes turn free text into seeds.

>>> import thinkingdb
>>> thinkingdb.symbol_key("Secure Execution")
'secure_execution'
"""

from .api import DEFAULT_LIMITS, KnowledgeBase, open_kb
from .errors import (Diagnostic, IngestError, LaneIndexError, LimitError, ParseError, ProfileError, QueryError,
                     StoreError, ThinkingDBError, ValidationError)
from .language import compile_source, parse_fact, parse_query
from .model import (Atom, Declaration, Fact, Limits, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                    QueryPattern, Rule, Triple, Var)
from .normalize import Vocabulary, relation_key, symbol_key
from .store.access import Caller
from .engine.closure import ClosureResult, closure
from .engine.graph import FactGraph
from .retrieval.profiles import Profile, get_profile, load_profile_file, profile_names
from .engine.proofs import Proof
from .engine.query import Answer, QueryResult, why
from .retrieval.pipeline import Result, SearchResult, search
from .store.sqlite import Store, Unit

open = open_kb  # noqa: A001  - ``thinkingdb.open(path)`` is the documented entry point

__version__ = "0.1.0"

__all__ = [
    "Answer", "Caller", "ClosureResult", "FactGraph", "Profile", "Proof", "QueryResult", "Result", "SearchResult",
    "closure", "get_profile", "load_profile_file", "profile_names", "search", "why",
    "Atom", "DEFAULT_LIMITS", "Declaration", "Diagnostic", "Fact", "IngestError", "KnowledgeBase", "LaneIndexError",
    "LimitError", "Limits", "ParseError", "PathAlt", "PathInv", "PathRel", "PathRepeat", "PathSeq", "ProfileError",
    "Query", "QueryError", "QueryPattern", "Rule", "Store", "StoreError", "ThinkingDBError", "Triple", "Unit",
    "ValidationError", "Var", "Vocabulary", "compile_source", "open", "open_kb", "parse_fact", "parse_query",
    "relation_key", "symbol_key", "__version__",
]
