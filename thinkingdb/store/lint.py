"""``thinkingdb lint``: check source files without writing anything.

Findings, each with a code, the file and line, and a message:

========================  ==========================================================================
code                      meaning
========================  ==========================================================================
``syntax``                a statement or record that does not parse or validate (every one is listed)
``duplicate-fact``        the same fact (after normalization) asserted more than once
``conflicting-confidence`` the same fact asserted with different confidences
``undeclared-relation``   a relation used but never declared (``relation …``) nor an alias target
``similar-symbols``       symbols written differently that are probably one entity: the same key
                          written with different case or punctuation, keys equal once punctuation
                          is removed, or keys one edit apart (edits on digits are not counted, so
                          ``GO:0000001`` / ``GO:0000002`` are not flagged)
``unused-rule``           a rule whose head relation no fact, other rule, query or declaration uses
========================  ==========================================================================

All files of one call are checked together (a relation declared in one file counts for the others).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

import grammar

from ..errors import Diagnostic, ThinkingDBError
from .ingest import reader_for
from ..language import compile_document, parse_source
from ..engine.rules import library_rules
from ..model import PathRel, Rule
from ..normalize import Vocabulary, symbol_key

__all__ = ["Finding", "lint_files", "lint_text"]

MAX_FINDINGS_PER_CODE = 500


@dataclass(frozen=True, order=True)
class Finding:
    """One lint finding, ordered by file and line."""

    source: str
    line: int
    code: str
    message: str
    column: int = 0

    def render(self) -> str:
        col = f":{self.column}" if self.column else ""
        return f"{self.source}:{self.line}{col}: {self.code}: {self.message}"

    def to_json(self) -> dict:
        return {"source": self.source, "line": self.line, "column": self.column, "code": self.code,
                "message": self.message}


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.facts: dict[tuple[str, str, str], list[tuple[str, int, float]]] = defaultdict(list)
        self.spellings: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)  # key -> spelling -> where
        self.used_relations: dict[str, tuple[str, int]] = {}
        self.declared: set[str] = set()
        self.rules: list[tuple[Rule, str, int]] = []
        self.premise_relations: dict[str, set[str]] = defaultdict(set)  # relation -> rule names using it
        self.query_relations: set[str] = set()

    def syntax(self, diags: Iterable[Diagnostic]) -> None:
        for d in diags:
            self.findings.append(Finding(d.source, d.line, "syntax", d.reason, d.column))

    def spelling(self, text: str, source: str, line: int) -> None:
        try:
            key = symbol_key(text)
        except ThinkingDBError:
            return
        self.spellings[key].setdefault(text.strip(), (source, line))

    def fact(self, s: str, r: str, o: str, c: float, source: str, line: int) -> None:
        self.facts[(s, r, o)].append((source, line, c))
        self.used_relations.setdefault(r, (source, line))

    def vocabulary(self, declarations, aliases, rules, source: str) -> None:
        """Declared relations (declarations and alias targets) and the rules with their premises'
        relations, from a compiled program or an ingest batch (both carry these as ``(item, line)``)."""
        for d, _ in declarations:
            self.declared.update(x for x in (d.relation, d.other) if x)
        self.declared.update(rel for _, rel, _ in aliases)
        for r, line in rules:
            self.rules.append((r, source, line))
            for p in r.premises:
                self.premise_relations[p.relation].add(r.name)


def _collect_tdb(col: _Collector, text: str, source: str, vocab: Vocabulary) -> None:
    try:
        doc = parse_source(text, source)
    except ThinkingDBError as exc:
        col.syntax(getattr(exc, "diagnostics", [Diagnostic(source, 1, 1, str(exc))]))
        return
    try:
        program = compile_document(doc, text, vocab, library=library_rules)   # as ingest checks it
    except ThinkingDBError as exc:
        col.syntax(getattr(exc, "diagnostics", [Diagnostic(source, 1, 1, str(exc))]))
        return
    for s in doc.statements:
        if isinstance(s, (grammar.Fact, grammar.Why)):
            col.spelling(s.subject.text, source, s.line)
            col.spelling(s.object.text, source, s.line)
    for f, line in program.facts:
        col.fact(f.subject, f.relation, f.object, f.confidence, source, line)
    col.vocabulary(program.declarations, program.aliases, program.rules, source)
    for q in program.queries:
        for p in q.patterns:
            col.query_relations.update(_path_relations(p.path))
    for w in program.whys:
        col.query_relations.add(w.relation)


def _path_relations(path) -> set[str]:
    if isinstance(path, PathRel):
        return {path.relation}
    parts = getattr(path, "parts", None) or getattr(path, "options", None) or (path.path,)
    return set().union(*(_path_relations(x) for x in parts))


def _collect_tsv(col: _Collector, path: str, source: str, vocab: Vocabulary) -> None:
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            parts = raw.decode("utf-8", "replace").rstrip("\r\n").split("\t")
            if len(parts) in (3, 4) and not parts[0].lstrip().startswith("#"):
                col.spelling(parts[0], source, line_no)
                col.spelling(parts[2], source, line_no)
    _collect_reader(col, path, source, vocab, spellings=False)


def _collect_reader(col: _Collector, path: str, source: str, vocab: Vocabulary, spellings: bool = True) -> None:
    for batch in reader_for(path)(path, source, vocab):
        col.syntax(r.diagnostic for r in batch.rejects)
        for s, r, o, c, line, *_ in batch.rows:
            col.fact(s, r, o, c, source, line)
        if spellings:
            for key, label in batch.labels.items():
                col.spelling(label, source, 0)
        col.vocabulary(batch.declarations, batch.aliases, batch.rules, source)


def _squash(key: str) -> str:
    return re.sub(r"[\W_]+", "", key)


def _deletions(key: str) -> Iterable[str]:
    """``key`` with one non-digit character removed (symmetric-delete candidates)."""
    for i, ch in enumerate(key):
        if not ch.isdigit():
            yield key[:i] + key[i + 1:]


def _one_edit(a: str, b: str) -> bool:
    """Whether a and b are one substitution, insertion or deletion apart, not on a digit."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] and not (a[i].isdigit() or b[i].isdigit())
    return a[i:] == b[i + 1:] and not b[i].isdigit()


def _similar(col: _Collector) -> None:
    out: list[Finding] = []
    for key, spellings in sorted(col.spellings.items()):
        if len(spellings) > 1:
            names = sorted(spellings)
            src, line = spellings[list(spellings)[1]]  # where the second spelling appears
            out.append(Finding(src, line, "similar-symbols", f"{key!r} is written in {len(names)} ways: "
                               + ", ".join(repr(n) for n in names)))
    keys = sorted(col.spellings)
    groups: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        groups[_squash(k)].append(k)
    flagged: set[tuple[str, str]] = set()
    for squashed, members in groups.items():
        if len(members) > 1 and squashed:
            for other in members[1:]:
                flagged.add((members[0], other))
    index: dict[str, list[str]] = defaultdict(list)
    for k in keys:
        if sum(ch.isalpha() for ch in k) >= 4:
            index[k].append(k)
            for d in _deletions(k):
                index[d].append(k)
    for k in keys:
        if sum(ch.isalpha() for ch in k) < 4:
            continue
        cands = set(index.get(k, ()))  # k equals another key minus one char
        for d in _deletions(k):
            cands.update(index.get(d, ()))
        for other in cands:
            if other > k and _one_edit(k, other):
                flagged.add((k, other))
    for a, b in sorted(flagged):
        src, line = next(iter(col.spellings[b].values()))
        why = "differ only by punctuation" if _squash(a) == _squash(b) else "are one edit apart"
        out.append(Finding(src, line, "similar-symbols", f"{a!r} and {b!r} {why}: probably the same entity"))
    col.findings += out[:MAX_FINDINGS_PER_CODE]


def _facts(col: _Collector) -> None:
    dup, conflict = [], []
    for (s, r, o), seen in col.facts.items():
        if len(seen) < 2:
            continue
        where = ", ".join(f"{src}:{ln}" for src, ln, _ in seen[:10])
        src, line, _ = seen[1]
        confs = sorted({c for *_, c in seen})
        if len(confs) > 1:
            conflict.append(Finding(src, line, "conflicting-confidence", f"{s} {r} {o} is asserted with "
                                    f"confidences {', '.join(f'{c:g}' for c in confs)} ({where}); the highest wins"))
        else:
            dup.append(Finding(src, line, "duplicate-fact", f"{s} {r} {o} is asserted {len(seen)} times ({where})"))
    col.findings += dup[:MAX_FINDINGS_PER_CODE] + conflict[:MAX_FINDINGS_PER_CODE]


def _relations(col: _Collector) -> None:
    for rel, (src, line) in sorted(col.used_relations.items()):
        if rel not in col.declared:
            col.findings.append(Finding(src, line, "undeclared-relation", f"relation {rel!r} is used but never "
                                        "declared (relation ...) or aliased"))


def _rules(col: _Collector) -> None:
    for r, src, line in col.rules:
        head = r.head.relation
        users = col.premise_relations.get(head, set()) - {r.name}
        if not users and head not in col.used_relations and head not in col.query_relations \
                and head not in col.declared:
            col.findings.append(Finding(src, line, "unused-rule", f"rule {r.name} derives {head!r}, which no fact, "
                                        "other rule, query or declaration uses"))


def lint_files(paths: Sequence[str], vocab: Vocabulary | None = None) -> list[Finding]:
    """Lint files together; returns the findings sorted by file and line (empty: all clean).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.tdb")
    >>> _ = open(p, "w").write("relation uses transitive.\\nnginx uses OpenSSL.\\nnginx uses openssl.\\n")
    >>> [(f.line, f.code) for f in lint_files([p])]
    [(3, 'duplicate-fact'), (3, 'similar-symbols')]
    """
    col = _Collector()
    for path in paths:
        source = os.path.normpath(path)
        if not os.path.isfile(path):
            col.findings.append(Finding(source, 0, "syntax", "no such file"))
            continue
        fresh = Vocabulary(dict(vocab.aliases), dict(vocab.inverses)) if vocab else Vocabulary()
        try:
            reader_for(path)
        except ThinkingDBError as exc:
            col.syntax(getattr(exc, "diagnostics", ()))
            continue
        ext = os.path.splitext(path)[1].lower()
        if ext == ".tdb":
            with open(path, "rb") as fh:
                data = fh.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                col.findings.append(Finding(source, data.count(b"\n", 0, exc.start) + 1, "syntax", "not UTF-8 text"))
                continue
            _collect_tdb(col, text, source, fresh)
        elif ext == ".tsv":
            _collect_tsv(col, path, source, fresh)
        else:
            _collect_reader(col, path, source, fresh)
    _facts(col)
    _relations(col)
    _similar(col)
    _rules(col)
    return sorted(col.findings)


def lint_text(text: str, source: str = "<string>") -> list[Finding]:
    """Lint ThinkingDB source text.

    >>> [f.code for f in lint_text("rule r: ?x a ?y => ?x b ?y. relation a symmetric. p a q.")]
    ['unused-rule']
    """
    col = _Collector()
    _collect_tdb(col, text, source, Vocabulary())
    _facts(col)
    _relations(col)
    _similar(col)
    _rules(col)
    return sorted(col.findings)
