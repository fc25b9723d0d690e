"""The ThinkingDB language: grammar (package data), parser, frozen syntax tree and formatter.

The names below load on first use (PEP 562), so importing ``grammar.errors`` alone (the error types,
which ``thinkingdb.errors`` builds on) does not load the parser or lark.

>>> import grammar
>>> grammar.parse("a r b.").statements[0].relation.text
'r'
"""

from __future__ import annotations

import sys

_WHERE = {
    **dict.fromkeys(("Alias", "Alternative", "Atom", "Document", "Fact", "Inverse", "Pattern", "Query", "Relation",
                     "RelationDecl", "Repeat", "RuleDecl", "Sequence", "Step", "Symbol", "Variable", "Why"), "ast"),
    **dict.fromkeys(("Diagnostic", "GrammarError", "LanguageSyntaxError"), "errors"),
    **dict.fromkeys(("format_document", "format_statement"), "format"),
    "parse": "quick",   # a plain question without lark; anything else through grammar.parser
}

__all__ = [
    "Alias", "Alternative", "Atom", "Diagnostic", "Document", "Fact", "GrammarError", "Inverse",
    "LanguageSyntaxError", "Pattern", "Query", "Relation", "RelationDecl", "Repeat", "RuleDecl", "Sequence",
    "Step", "Symbol", "Variable", "Why", "format_document", "format_statement", "parse",
]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'grammar' has no attribute {name!r}")
    value = getattr(_import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _import_module(name: str, package: str):
    """``importlib.import_module(name, package)`` for the lazy imports of both packages, without
    loading ``importlib`` and ``warnings`` (~0.5 ms of a cold question)."""
    full = package + name if name.startswith(".") else name
    __import__(full)
    return sys.modules[full]
