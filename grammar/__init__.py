"""The ThinkingDB language: grammar (package data), parser, frozen syntax tree and formatter."""

from .ast import (Alias, Alternative, Atom, Document, Fact, Inverse, Pattern, Query, Relation, RelationDecl,
                  Repeat, RuleDecl, Sequence, Step, Symbol, Variable, Why)
from .errors import Diagnostic, GrammarError, LanguageSyntaxError
from .format import format_document, format_statement
from .parser import parse

__all__ = [
    "Alias", "Alternative", "Atom", "Diagnostic", "Document", "Fact", "GrammarError", "Inverse",
    "LanguageSyntaxError", "Pattern", "Query", "Relation", "RelationDecl", "Repeat", "RuleDecl", "Sequence",
    "Step", "Symbol", "Variable", "Why", "format_document", "format_statement", "parse",
]
