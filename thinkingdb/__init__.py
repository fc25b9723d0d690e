"""ThinkingDB: a symbolic reasoning engine for knowledge bases.

A normalized fact graph, written in a small language, drives bounded forward-chaining closure that
keeps a proof for every derived fact; BM25 and hyperdimensional lanes turn free text into seeds.

>>> import thinkingdb
>>> thinkingdb.symbol_key("Secure Execution")
'secure_execution'
"""

# The public names and the modules that define them, imported on first use (PEP 562), so that
# ``import thinkingdb.errors`` or ``thinkingdb --help`` does not load the engine, lark or numpy.
from grammar import _import_module   # (one project: the lazy imports of both packages)

_LAZY = {
    "api": ("DEFAULT_LIMITS", "KnowledgeBase", "open_kb"),
    "errors": ("Diagnostic", "IngestError", "LaneIndexError", "LimitError", "ParseError", "ProfileError", "QueryError",
               "StoreError", "ThinkingDBError", "ValidationError"),
    "language": ("compile_source", "parse_fact", "parse_query"),
    "model": ("Atom", "Declaration", "Fact", "Limits", "PathAlt", "PathInv", "PathRel", "PathRepeat", "PathSeq",
              "Query", "QueryPattern", "Rule", "Triple", "Var"),
    "normalize": ("Vocabulary", "relation_key", "symbol_key"),
    "store.access": ("Caller",),
    "engine.closure": ("ClosureResult", "closure"),
    "engine.graph": ("FactGraph",),
    "retrieval.profiles": ("Profile", "get_profile", "load_profile_file", "profile_names"),
    "engine.proofs": ("Proof",),
    "engine.query": ("Answer", "QueryResult", "why"),
    "retrieval.pipeline": ("Result", "SearchResult", "search"),
    "store.sqlite": ("Store", "Unit"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    if name == "open":  # ``thinkingdb.open(path)`` is the documented entry point
        value = __getattr__("open_kb")
    elif name in _WHERE:
        value = getattr(_import_module(f".{_WHERE[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'thinkingdb' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
