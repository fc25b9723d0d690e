"""Canonical form of ``.tdb`` and TSV files (``thinkingdb normalize``), so files can be diffed and reviewed.

Canonical form: canonical symbol and relation keys, aliases and inverse declarations applied,
duplicate facts merged (highest confidence), everything sorted, one statement per line, comments
dropped. For ``.tdb`` the order is aliases, relation declarations, rules (by name), facts, then any
queries and ``why`` lines as written. A confidence of 1 is left out. The rewrite is idempotent:
``normalize(normalize(x)) == normalize(x)``.
"""

from __future__ import annotations

import os
import tempfile

import grammar
from grammar import ast
from grammar.format import format_name

from ..errors import Diagnostic, IngestError, ParseError
from .ingest import read_tsv
from ..language import compile_document, parse_source
from ..model import Atom, Declaration, Rule, Term, Var
from ..normalize import Vocabulary, relation_key

__all__ = ["normalize_file", "normalize_tdb", "normalize_tsv"]


def _conf(c: float) -> str:
    return "" if c == 1.0 else f" @{c!r}"


def _term(t: Term) -> str:
    return f"?{t.name}" if isinstance(t, Var) else format_name(t)


def _atom(a: Atom) -> str:
    return f"{_term(a.subject)} {format_name(a.relation)} {_term(a.object)}"


def _rule(r: Rule) -> str:
    weight = "" if r.weight == 1.0 else f" @{r.weight!r}"
    return f"rule {r.name}{weight}: {', '.join(_atom(p) for p in r.premises)} => {_atom(r.head)}."


def _decl(d: Declaration) -> str:
    other = f" {format_name(d.other)}" if d.other else ""
    return f"relation {format_name(d.relation)} {d.kind}{other}."


def _merge(rows) -> dict[tuple[str, str, str], float]:
    merged: dict[tuple[str, str, str], float] = {}
    for s, r, o, c in rows:
        key = (s, r, o)
        if c > merged.get(key, -1.0):
            merged[key] = c
    return merged


def normalize_tdb(text: str, source: str = "<string>", vocab: Vocabulary | None = None) -> str:
    """The canonical form of ThinkingDB source.

    >>> print(normalize_tdb('alias requires => depends_on. B requires "Open SSL" @0.5.\\nb depends_on open-ssl.'), end="")
    alias requires => depends_on.
    b depends_on open_ssl.
    """
    doc = parse_source(text, source)
    program = compile_document(doc, text, vocab if vocab is not None else Vocabulary())
    out: list[str] = []
    aliases = {}
    for phrase, rel, _ in program.aliases:
        key = relation_key(phrase)
        if key != rel:
            aliases[key] = rel
    out += [f"alias {format_name(k)} => {format_name(v)}." for k, v in sorted(aliases.items())]
    out += sorted({_decl(d) for d, _ in program.declarations})
    rules: dict[str, Rule] = {}
    first: dict[str, int] = {}
    problems = []
    lines = text.split("\n")
    for r, line in program.rules:   # a name identifies a rule, as a store's ingest requires
        if first.setdefault(r.name, line) != line and rules[r.name] != r:   # the same rule again is harmless
            snippet = lines[line - 1] if 0 < line <= len(lines) else ""
            col = len(snippet) - len(snippet.lstrip()) + 1
            problems.append(Diagnostic(source, line, col, f"a second rule named {r.name.split('/')[0]}: the first "
                                       f"is at line {first[r.name]}; rule names identify rules, rename one",
                                       snippet[:200], col))
        rules[r.name] = r
    if problems:
        raise ParseError(problems)
    out += [_rule(rules[n]) for n in sorted(rules)]
    merged = _merge((f.subject, f.relation, f.object, f.confidence) for f, _ in program.facts)
    out += [f"{format_name(s)} {format_name(r)} {format_name(o)}{_conf(c)}." for (s, r, o), c in sorted(merged.items())]
    out += [grammar.format_statement(s) for s in doc.statements if isinstance(s, (ast.Query, ast.Why))]
    return "".join(line + "\n" for line in out)


def normalize_tsv(path: str, source: str | None = None, vocab: Vocabulary | None = None) -> str:
    """The canonical form of a TSV file: ``subject<TAB>relation<TAB>object[<TAB>confidence]`` sorted."""
    source = source or path
    rows, rejects = [], []
    for batch in read_tsv(path, source, vocab if vocab is not None else Vocabulary()):
        rejects += batch.rejects
        rows += [(s, r, o, c) for s, r, o, c, *_ in batch.rows]
    if rejects and not (len(rejects) == 1 and not rows and "holds no triples" in rejects[0].diagnostic.reason):
        raise IngestError([r.diagnostic for r in rejects])
    merged = _merge(rows)
    return "".join(f"{s}\t{r}\t{o}" + ("" if c == 1.0 else f"\t{c!r}") + "\n" for (s, r, o), c in sorted(merged.items()))


def normalize_file(path: str, output: str | None = None, vocab: Vocabulary | None = None) -> str:
    """Rewrite ``path`` (``.tdb`` or ``.tsv``) in canonical form into ``output`` (default: in place,
    atomically through a temporary file). Returns the canonical text."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".tsv":
        text = normalize_tsv(path, path, vocab)
    elif ext == ".tdb":
        try:
            with open(path, encoding="utf-8") as fh:
                src = fh.read()
        except UnicodeDecodeError as exc:
            raise IngestError([Diagnostic(path, 1, 1, f"not UTF-8 text: {exc.reason}")]) from None
        except OSError as exc:
            raise IngestError([Diagnostic(path, 0, 0, exc.strerror or str(exc))]) from None
        try:
            text = normalize_tdb(src, path, vocab)
        except ParseError as exc:
            raise IngestError(exc.diagnostics) from None
    else:
        raise IngestError([Diagnostic(path, 0, 0, f"normalize rewrites .tdb and .tsv files, not {ext or 'this'!r}")])
    target = output or path
    if target != "-":
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(target)) or ".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, target)
    return text
