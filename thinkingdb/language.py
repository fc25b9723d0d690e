"""From the syntax tree to the normalized model: canonical keys, aliases, inverses, rules, queries.

:func:`compile_source` parses and compiles one source in two passes — declarations and aliases first,
so they apply to the whole file wherever they stand — and reports every problem at once.
"""

from __future__ import annotations

import grammar
from grammar import ast

from .arith import ASSIGN, Arith, Constraint
from .errors import Diagnostic, ParseError, ValidationError, translate
from .model import (Atom, Declaration, Fact, Node, Path, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                    QueryPattern, Rule, Term, Triple, Var, node_key, role)
from .normalize import Vocabulary, orient_rules, relation_key
from .values import Record

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


class _Problem(ValidationError):
    """A compile problem with its kind (``Diagnostic.code``) and, when known, the node to point at."""

    def __init__(self, message: str, code: str, node=None):
        super().__init__(message)
        self.code, self.node = code, node


class Program(Record):
    """The normalized content of one source; ``lines`` keep where each item was written."""

    _fields = ("source", "facts", "labels", "rules", "declarations", "aliases", "queries", "whys", "why_nots")
    source: str
    facts: list[tuple[Fact, int]]
    labels: dict[str, str]
    rules: list[tuple[Rule, int]]
    declarations: list[tuple[Declaration, int]]
    aliases: list[tuple[str, str, int]]
    queries: list[Query]
    whys: list[Triple]
    why_nots: list[Triple]

    def __init__(self, source: str, facts=None, labels=None, rules=None, declarations=None, aliases=None,
                 queries=None, whys=None, why_nots=None) -> None:
        self.source = source
        self.facts = [] if facts is None else facts
        self.labels = {} if labels is None else labels
        self.rules = [] if rules is None else rules
        self.declarations = [] if declarations is None else declarations
        self.aliases = [] if aliases is None else aliases
        self.queries = [] if queries is None else queries
        self.whys = [] if whys is None else whys
        self.why_nots = [] if why_nots is None else why_nots


def parse_source(text: str, source: str = "<string>") -> ast.Document:
    """Parse with the language package, translating its errors to :class:`ParseError`."""
    try:
        return grammar.parse(text, source)
    except grammar.GrammarError as exc:
        raise translate(exc) from exc


class _Compiler:
    def __init__(self, source: str, text: str, vocab: Vocabulary, library=None):
        self.source, self.text, self.vocab, self.library = source, text, vocab, library
        self.errors: list[Diagnostic] = []
        self.program = Program(source)
        self.fresh = 0
        self.arity: dict[str, tuple[int, int]] = {}   # n-ary relation -> (arity, line first seen)

    def error(self, node, reason: str, code: str = "") -> None:
        line, col = getattr(node, "line", 0), getattr(node, "column", 0)
        self.errors.append(grammar.errors.make_diagnostic(self.text, self.source, line, col, reason, code))

    def symbol(self, sym: ast.Symbol) -> str:
        key = self.vocab.symbol(sym.text, sym.quoted)
        self.program.labels.setdefault(key, sym.text.strip())
        return key

    def var(self) -> Var:
        self.fresh += 1
        return Var(f"_#{self.fresh}")

    def term(self, t: ast.Term) -> Term:
        if isinstance(t, ast.Variable):
            return self.var() if t.name == "_" else Var(t.name)
        return self.symbol(t)

    # -- relation phrases ------------------------------------------------------------------------
    def split(self, s: ast.Term, rel: ast.Relation, o: ast.Term) -> tuple[ast.Term, str, ast.Term]:
        """Subject, relation name and object of ``s <words> o``: the longest declared alias phrase among
        the words; the words before it join the subject, those after it the object."""
        if not rel.phrase:
            return s, rel.text, o
        words = rel.text.split(" ")
        known = self.vocab.aliases
        longest_alias = max((k.count("_") + 1 for k in known), default=0)   # spans longer match nothing
        spans = [(i, j) for i in range(len(words)) for j in range(i + 1, min(len(words), i + longest_alias) + 1)
                 if relation_key(" ".join(words[i:j])) in known
                 and (i == 0 or not isinstance(s, ast.Variable))
                 and (j == len(words) or not isinstance(o, ast.Variable))]
        if not spans:
            raise _Problem(f"'{rel.text}' is not a declared relation phrase: a statement is subject, relation "
                           f"and object; declare the phrase (alias \"{rel.text}\" => relation.) or quote "
                           "names of several words", "unknown_phrase", rel)
        longest = max(j - i for i, j in spans)
        best = [(i, j) for i, j in spans if j - i == longest]
        if len(best) > 1:
            shown = " or ".join(f"'{' '.join(words[i:j])}'" for i, j in best)
            raise _Problem(f"ambiguous relation phrase in '{s.text if isinstance(s, ast.Symbol) else '?' + s.name} "
                           f"{rel.text} {o.text if isinstance(o, ast.Symbol) else '?' + o.name}': {shown}; quote the "
                           "subject or the object to decide", "ambiguous_phrase", rel)
        i, j = best[0]
        if i:
            s = ast.Symbol(" ".join([s.text] + words[:i]), s.line, s.column)
        if j < len(words):
            o = ast.Symbol(" ".join(words[j:] + [o.text]), o.line, o.column)
        return s, " ".join(words[i:j]), o

    # -- rules and queries -----------------------------------------------------------------------
    def expr(self, e: ast.Expr):
        """An arithmetic expression of the syntax tree as a model value (symbols become keys)."""
        if isinstance(e, ast.Arith):
            return Arith(e.op, self.expr(e.left), self.expr(e.right))
        return self.term(e)

    def constraints(self, s: ast.RuleDecl) -> list[Constraint]:
        """The rule's comparisons in the order they run, assignments as ``:=``."""
        from grammar.safety import order_comparisons   # only a rule's compile: not a question's
        ordered, _, _ = order_comparisons(s.premises)
        out = []
        for c, target in ordered:
            if target is None:
                out.append(Constraint(c.op, self.expr(c.left), self.expr(c.right)))
            else:
                other = c.right if target is c.left else c.left
                out.append(Constraint(ASSIGN, Var(target.name), self.expr(other)))
        return out

    def atom(self, a: ast.Atom) -> Atom:
        sub, rel_text, obj = self.split(a.subject, a.relation, a.object)
        s, o = self.term(sub), self.term(obj)
        rel = self.vocab.relation(rel_text)
        if rel in self.vocab.inverses:
            return Atom(o, self.vocab.inverses[rel], s)
        return Atom(s, rel, o)

    def check_arity(self, rel: str, n: int, node) -> None:
        seen = self.arity.setdefault(rel, (n, node.line))
        if seen[0] != n:
            raise _Problem(f"n-ary relation {rel} has {n} argument{'s' * (n != 1)} here but {seen[0]} at line "
                           f"{seen[1]}", "arity_mismatch", node)

    def nary(self, a: ast.NaryAtom) -> tuple[str, list[Term]]:
        rel = relation_key(a.relation.text)
        self.check_arity(rel, len(a.args), a)
        return rel, [self.term(t) for t in a.args]

    def premise_atoms(self, a: ast.NaryAtom) -> list[Atom]:
        """A positive n-ary premise: one atom per role edge, joined on a fresh node variable."""
        rel, args = self.nary(a)
        node = self.var()
        return [Atom(node, role(rel, i), t) for i, t in enumerate(args, 1)]

    def rule(self, s: ast.RuleDecl) -> list[Rule]:
        weight = 1.0 if s.weight is None else s.weight
        premises: list[Atom] = []
        negated: list[Atom] = []
        extra: list[Rule] = []
        for p in s.premises:
            if isinstance(p, ast.Comparison):
                continue
            if isinstance(p, ast.Atom):
                (negated if p.negated else premises).append(self.atom(p))
            elif not p.negated:
                premises.extend(self.premise_atoms(p))
            else:
                rel, args = self.nary(p)
                if any(isinstance(t, Var) and t.anonymous for t in args):
                    # not name(?x, ?_): "no name(...) with these arguments" -- an auxiliary n-ary relation
                    # of the bound arguments, derived from the positive premise, is negated instead
                    kept = [t for t in args if not (isinstance(t, Var) and t.anonymous)]
                    aux = f"{rel}.not.{len(extra) + 1}.{s.name}"
                    node = self.var()
                    body = tuple(Atom(node, role(rel, i), t) for i, t in enumerate(args, 1))
                    head_node = Node(aux, tuple(kept))
                    extra += [Rule(f"{s.name}.not.{len(extra) + 1}/{i}", body, Atom(head_node, role(aux, i), t))
                              for i, t in enumerate(kept, 1)] or [Rule(f"{s.name}.not.{len(extra) + 1}", body,
                                                                      Atom(Node(aux, ()), role(aux, 0), "true"))]
                    negated.append(Atom(head_node, role(aux, 1), kept[0]) if kept
                                   else Atom(Node(aux, ()), role(aux, 0), "true"))
                else:
                    negated.append(Atom(Node(rel, tuple(args)), role(rel, 1), args[0]))
        if isinstance(s.head, ast.Atom):
            heads = [self.atom(s.head)]
        else:
            rel, args = self.nary(s.head)
            heads = [Atom(Node(rel, tuple(args)), role(rel, i), t) for i, t in enumerate(args, 1)]
        names = [s.name] if len(heads) == 1 else [f"{s.name}/{i}" for i in range(1, len(heads) + 1)]
        constraints = tuple(self.constraints(s))
        return extra + [Rule(n, tuple(premises), h, weight, tuple(negated), constraints)
                        for n, h in zip(names, heads)]

    def pattern(self, x) -> list[QueryPattern]:
        if isinstance(x, ast.NaryAtom):
            return [QueryPattern(a.subject, PathRel(a.relation), a.object) for a in self.premise_atoms(x)]
        if isinstance(x.path, ast.Step) and x.path.relation.phrase:
            sub, rel_text, obj = self.split(x.subject, x.path.relation, x.object)
            return [QueryPattern(self.term(sub), self.path(ast.Step(ast.Relation(rel_text))), self.term(obj))]
        return [QueryPattern(self.term(x.subject), self.path(x.path), self.term(x.object))]

    def path(self, p: ast.PathExpr) -> Path:
        if isinstance(p, ast.Step):
            if p.relation.phrase and relation_key(p.relation.text) not in self.vocab.aliases:
                raise _Problem(f"'{p.relation.text}' is not a declared relation phrase", "unknown_phrase", p.relation)
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

    def triple(self, s: ast.Fact | ast.Why) -> Triple:
        sub, rel_text, obj = self.split(s.subject, s.relation, s.object)
        ks, ko = self.symbol(sub), self.symbol(obj)   # as Vocabulary.orient, with quoted symbols kept
        rel = self.vocab.relation(rel_text)
        if rel in self.vocab.inverses:
            return Triple(ko, self.vocab.inverses[rel], ks)
        return Triple(ks, rel, ko)

    def statement(self, s: ast.Statement) -> None:
        p = self.program
        if isinstance(s, ast.Fact):
            t = self.triple(s)
            p.facts.append((Fact(t.subject, t.relation, t.object, 1.0 if s.confidence is None else s.confidence), s.line))
        elif isinstance(s, ast.NaryFact):
            rel = relation_key(s.relation.text)
            self.check_arity(rel, len(s.args), s)
            keys = [self.symbol(a) for a in s.args]
            node = node_key(rel, keys)
            p.labels.setdefault(node, f"{s.relation.text}({', '.join(a.text.strip() for a in s.args)})")
            conf = 1.0 if s.confidence is None else s.confidence
            for i, k in enumerate(keys, 1):
                p.facts.append((Fact(node, role(rel, i), k, conf if i == 1 else 1.0), s.line))
        elif isinstance(s, ast.RelationDecl):
            rel = self.vocab.relation(s.relation.text)
            other = None if s.other is None else self.vocab.relation(s.other.text)
            if s.kind == "inverse":  # stored as: facts of `other` flip to `rel`
                p.declarations.append((Declaration(rel, "inverse", other), s.line))
            else:
                p.declarations.append((Declaration(rel, s.kind, other), s.line))
        elif isinstance(s, ast.RuleDecl):
            p.rules.extend((r, s.line) for r in self.rule(s))
        elif isinstance(s, ast.Query):
            p.queries.append(Query(tuple(q for x in s.patterns for q in self.pattern(x))))
        elif isinstance(s, ast.Why):
            (p.why_nots if s.negated else p.whys).append(self.triple(s))

    def rule_names(self) -> None:
        """A name identifies a rule (proofs name rules; a store keeps one per name): a second, different
        rule of one name is an error at its line, naming the first, as a store's ingest says. A statement
        is one rule by its name: an n-ary head's rules are ``r/1``, ``r/2``, a ``not`` premise's helpers
        ``r.not.1``, so ``rule r: ... => t(?x, ?y).`` after ``rule r: ... => ?x h ?y.`` is a second r."""
        lines = self.text.split("\n")
        first: dict[str, tuple[int, tuple[Rule, ...]]] = {}
        for (name, line), rules in _statements(self.program.rules).items():
            line0, earlier = first.setdefault(name, (line, rules))
            if line0 != line and earlier != rules:   # the same rule again is harmless
                self.errors.append(_at_statement(
                    self.text, self.source, line, f"a second rule named {name}: the first is at line {line0}; rule "
                    "names identify rules, rename one", "duplicate_rule", lines))
        if self.library is None or not self.program.rules:
            return
        # nor may a rule take the name of a different rule of the default library, which every question
        # applies with it: both would hold, and a proof naming the rule would not say which one it was
        library = {name: rules for (name, _), rules in _statements((r, 0) for r in self.library_rules()).items()}
        flagged = {d.line for d in self.errors}
        for (name, line), rules in _statements(self.program.rules).items():
            theirs = library.get(name)
            if theirs is not None and theirs != rules and line not in flagged:
                flagged.add(line)
                self.errors.append(_at_statement(
                    self.text, self.source, line, f"rule {name} is a different rule of the default rule library "
                    "(thinkingdb/data/default_rules.tdb), which every question applies unless it is turned off; "
                    "rule names identify rules, rename this one", "duplicate_rule", lines))

    def library_rules(self) -> tuple[Rule, ...]:
        """The default library's rules read with this file's inverses, as a question reads them with the
        store's (api.KnowledgeBase._rules): this file's rules are compiled so (``relation capable_of inverse
        has_capability.`` turns the library's own ``capability`` head to ``?z capable_of ?x``)."""
        return orient_rules(self.library(), self.vocab.inverses)

    def stratify(self) -> None:
        rules = [r for r, _ in self.program.rules]
        if not any(r.negated for r in rules):   # nothing can cycle through `not`: stratify need not load
            return
        from .stratify import StratificationError, strata
        # a declaration is a rule too (engine.rules.compile_declaration, same names): `relation b
        # subrelation_of c.` closes the cycle of `rule r: ..., not ?x c ?y => ?x b ?y.`
        # (over b of `relation c inverse b` read as c reversed, as engine.rules.compile_declarations does)
        x, y = Var("x"), Var("y")
        for d, _ in self.program.declarations:
            head = d.other if d.kind in ("inverse", "subrelation_of") else d.relation
            rule = Rule(f"{d.relation}_{d.kind}" + (f"_{d.other}" if d.other else ""), (Atom(x, d.relation, y),),
                        Atom(x, head, y))
            rules.append(rule if d.kind == "inverse" else orient_rules([rule], self.vocab.inverses)[0])
        mine = {r.name for r in rules}
        if self.library is not None:
            # the default rule library applies to every question of a store that does not turn it
            # off: a `not` of this file that cycles with it would make all those questions fail
            rules += list(self.library_rules())
        try:
            strata(rules)
        except StratificationError as exc:
            # the library has no `not`: the rule holding the cycle's `not` premise is this file's
            line = next(ln for r, ln in self.program.rules if r.name == exc.rule)
            reason = str(exc)
            if any(name not in mine for _, name, _, _ in exc.cycle):
                reason += (" (with the default rule library, thinkingdb/data/default_rules.tdb, which every "
                           "question applies unless it is turned off)")
            self.errors.append(grammar.errors.make_diagnostic(self.text, self.source, line, 1, reason,
                                                              "cyclic_negation"))


def compile_document(doc: ast.Document, text: str, vocab: Vocabulary | None = None, *,
                     library: Callable[[], Iterable[Rule]] | None = None) -> Program:
    """Normalize a parsed document. ``vocab`` (aliases, inverses) is extended in place.

    ``library``: gives the rules (declarations compiled) of the default rule library, called only when
    the document has a ``not`` premise; a ``not`` that cycles with them is an error
    (``cyclic_negation``, at the rule), as a cycle among the document's own rules and declarations
    always is. Left out, the document is checked alone."""
    comp = _Compiler(doc.source, text, vocab if vocab is not None else Vocabulary(), library)
    comp.declarations(doc)
    for s in doc.statements:
        try:
            comp.statement(s)
        except _Problem as exc:
            comp.error(exc.node if exc.node is not None else s, str(exc), exc.code)
        except ValidationError as exc:
            comp.error(s, str(exc))
    if not comp.errors:
        comp.rule_names()
    if not comp.errors:
        comp.stratify()
    if comp.errors:
        raise ParseError(comp.errors)
    return comp.program


def compile_source(text: str, source: str = "<string>", vocab: Vocabulary | None = None, *,
                   library: Callable[[], Iterable[Rule]] | None = None) -> Program:
    """Parse and normalize ThinkingDB source (``library``: see :func:`compile_document`).

    >>> p = compile_source('"Secure Execution" is_a goal. x dependsOn y. relation part_of inverse has_part. w has_part c.')
    >>> [str(f.triple) for f, _ in p.facts]
    ['secure_execution is_a goal', 'x depends_on y', 'c part_of w']
    """
    try:
        return compile_document(parse_source(text, source), text, vocab, library=library)
    except RecursionError:   # a statement nested thousands deep (^^^^…r, ((((…))))): name its line
        lines = text.split("\n")
        deepest = max(range(len(lines)), key=lambda i: sum(map(lines[i].count, "^(")))
        raise ParseError([Diagnostic(source, deepest + 1, 1, "this statement is nested too deeply to read "
                                     "(thousands of nested parentheses or ^)", lines[deepest][:80], 1)]) from None


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


def _at_statement(text: str, source: str, line: int, reason: str, code: str,
                  lines: list[str] | None = None) -> Diagnostic:
    """A diagnostic at the first non-blank column of ``line`` of ``text`` (``lines``: its lines, if split)."""
    lines = text.split("\n") if lines is None else lines
    snippet = lines[line - 1] if 0 < line <= len(lines) else ""
    return grammar.errors.make_diagnostic(text, source, line, len(snippet) - len(snippet.lstrip()) + 1, reason, code)


def _statements(rules) -> dict[tuple[str, int], tuple[Rule, ...]]:
    """``(rule, line)`` pairs grouped by statement: (the name it gave, its line) -> its rules, in order
    (``r/2`` and ``r.not.1`` are rule r's)."""
    out: dict[tuple[str, int], tuple[Rule, ...]] = {}
    for r, line in rules:
        key = (_stated(r.name), line)
        out[key] = out.get(key, ()) + (r,)
    return out


def _stated(name: str) -> str:
    """The name a rule statement gave: ``r`` of ``r/2``, ``r.not.1`` and ``r.not.1/2`` (a name such as
    ``a.not.b``, which a symbol may be, stays whole).

    >>> [_stated(n) for n in ("r", "r/2", "r.not.1", "r.not.2/1", "a.not.b", "GO:1.not.b/3")]
    ['r', 'r', 'r', 'r', 'a.not.b', 'GO:1.not.b']
    """
    head, slash, n = name.rpartition("/")
    if slash and n.isdigit():
        name = head
    head, sep, n = name.rpartition(".not.")
    return head if sep and n.isdigit() else name
