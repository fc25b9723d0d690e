"""From the syntax tree to the normalized model: canonical keys, aliases, inverses, rules, queries.

:func:`compile_source` parses and compiles one source in two passes — declarations and aliases first,
so they apply to the whole file wherever they stand — and reports every problem at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grammar
from grammar import ast

from .errors import Diagnostic, ParseError, ValidationError, translate
from .model import (Atom, Declaration, Fact, Path, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                    QueryPattern, Rule, Term, Triple, Var)
from .normalize import Vocabulary


@dataclass
class Program:
    """The normalized content of one source; ``lines`` keep where each item was written."""

    source: str
    facts: list[tuple[Fact, int]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    rules: list[tuple[Rule, int]] = field(default_factory=list)
    declarations: list[tuple[Declaration, int]] = field(default_factory=list)
    aliases: list[tuple[str, str, int]] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    whys: list[Triple] = field(default_factory=list)


def parse_source(text: str, source: str = "<string>") -> ast.Document:
    """Parse with the language package, translating its errors to :class:`ParseError`."""
    try:
        return grammar.parse(text, source)
    except grammar.GrammarError as exc:
        raise translate(exc) from exc


class _Compiler:
    def __init__(self, source: str, text: str, vocab: Vocabulary):
        self.source, self.text, self.vocab = source, text, vocab
        self.errors: list[Diagnostic] = []
        self.program = Program(source)

    def error(self, node, reason: str) -> None:
        line, col = getattr(node, "line", 0), getattr(node, "column", 0)
        self.errors.append(grammar.errors.make_diagnostic(self.text, self.source, line, col, reason))

    def symbol(self, sym: ast.Symbol) -> str:
        key = self.vocab.symbol(sym.text)
        self.program.labels.setdefault(key, sym.text.strip())
        return key

    def term(self, t: ast.Term) -> Term:
        return Var(t.name) if isinstance(t, ast.Variable) else self.symbol(t)

    def atom(self, a: ast.Atom) -> Atom:
        s, o = self.term(a.subject), self.term(a.object)
        rel = self.vocab.relation(a.relation.text)
        if rel in self.vocab.inverses:
            return Atom(o, self.vocab.inverses[rel], s)
        return Atom(s, rel, o)

    def path(self, p: ast.PathExpr) -> Path:
        if isinstance(p, ast.Step):
            rel = self.vocab.relation(p.relation.text)
            if rel in self.vocab.inverses:
                return PathInv(PathRel(self.vocab.inverses[rel]))
            return PathRel(rel)
        if isinstance(p, ast.Inverse):
            return PathInv(self.path(p.path))
        if isinstance(p, ast.Sequence):
            return PathSeq(tuple(self.path(x) for x in p.parts))
        if isinstance(p, ast.Alternative):
            return PathAlt(tuple(self.path(x) for x in p.options))
        return PathRepeat(self.path(p.path), p.min, p.max)

    def declarations(self, doc: ast.Document) -> None:
        for s in doc.statements:
            try:
                if isinstance(s, ast.Alias):
                    self.vocab.add_alias(s.phrase.text, s.relation.text)
                    self.program.aliases.append((s.phrase.text, self.vocab.relation(s.relation.text), s.line))
            except ValidationError as exc:
                self.error(s, str(exc))
        for s in doc.statements:
            try:
                if isinstance(s, ast.RelationDecl) and s.kind == "inverse":
                    self.vocab.add_inverse(s.relation.text, s.other.text)
            except ValidationError as exc:
                self.error(s, str(exc))

    def statement(self, s: ast.Statement) -> None:
        p = self.program
        if isinstance(s, ast.Fact):
            subj, rel, obj = self.vocab.orient(s.subject.text, s.relation.text, s.object.text)
            self.symbol(s.subject), self.symbol(s.object)
            p.facts.append((Fact(subj, rel, obj, 1.0 if s.confidence is None else s.confidence), s.line))
        elif isinstance(s, ast.RelationDecl):
            rel = self.vocab.relation(s.relation.text)
            other = None if s.other is None else self.vocab.relation(s.other.text)
            if s.kind == "inverse":  # stored as: facts of `other` flip to `rel`
                p.declarations.append((Declaration(rel, "inverse", other), s.line))
            else:
                p.declarations.append((Declaration(rel, s.kind, other), s.line))
        elif isinstance(s, ast.RuleDecl):
            premises = tuple(self.atom(a) for a in s.premises)
            p.rules.append((Rule(s.name, premises, self.atom(s.head), 1.0 if s.weight is None else s.weight), s.line))
        elif isinstance(s, ast.Query):
            p.queries.append(Query(tuple(QueryPattern(self.term(x.subject), self.path(x.path), self.term(x.object))
                                         for x in s.patterns)))
        elif isinstance(s, ast.Why):
            p.whys.append(Triple(*self.vocab.orient(s.subject.text, s.relation.text, s.object.text)))


def compile_document(doc: ast.Document, text: str, vocab: Vocabulary | None = None) -> Program:
    """Normalize a parsed document. ``vocab`` (aliases, inverses) is extended in place."""
    comp = _Compiler(doc.source, text, vocab if vocab is not None else Vocabulary())
    comp.declarations(doc)
    for s in doc.statements:
        try:
            comp.statement(s)
        except ValidationError as exc:
            comp.error(s, str(exc))
    if comp.errors:
        raise ParseError(comp.errors)
    return comp.program


def compile_source(text: str, source: str = "<string>", vocab: Vocabulary | None = None) -> Program:
    """Parse and normalize ThinkingDB source.

    >>> p = compile_source('"Secure Execution" is_a goal. x dependsOn y. relation part_of inverse has_part. w has_part c.')
    >>> [str(f.triple) for f, _ in p.facts]
    ['secure_execution is_a goal', 'x depends_on y', 'c part_of w']
    """
    return compile_document(parse_source(text, source), text, vocab)


def parse_query(text: str, vocab: Vocabulary | None = None) -> Query:
    """Parse one query; the leading ``?`` is optional.

    >>> str(parse_query("nginx dependsOn+ ?x").patterns[0].path)
    'depends_on+'
    """
    body = text.strip()
    if not body.startswith("?") or (len(body) > 1 and not body[1].isspace()):
        body = "? " + body
    return _single(body, "<query>", vocab, "queries", "expected exactly one query")


def parse_fact(text: str, vocab: Vocabulary | None = None) -> Triple:
    """Parse ``subject relation object`` (for ``why``); a leading ``why`` and final period are optional."""
    body = text.strip()
    if not body.startswith("why ") and body != "why":
        body = "why " + body
    return _single(body, "<fact>", vocab, "whys", "expected exactly one fact: subject relation object")


def _single(body: str, source: str, vocab: Vocabulary | None, kind: str, message: str):
    """Compile one statement (the final period is optional) and return the one item of ``kind`` it holds."""
    program = compile_source(body if body.endswith(".") else body + ".", source, vocab)
    items = getattr(program, kind)
    if len(items) != 1:
        raise ParseError([Diagnostic(source, 1, 1, message)])
    return items[0]
