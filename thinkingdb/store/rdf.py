"""RDF in and out: N-Triples, Turtle, N-Quads, TriG and JSON-LD read through pyoxigraph; N-Triples and
Turtle written by hand (no extra needed to export).

Reading (the optional ``rdf`` extra, ``pip install 'thinkingdb[rdf]'``):

* IRIs are symbol keys kept exactly (in a store whose symbol mode folds everything, they are folded
  like any word); the symbols and relations ThinkingDB itself exported (``urn:thinkingdb:``) come back
  as the keys they were.
* ``rdfs:label`` / ``skos:prefLabel`` with a literal become the subject's display label, not a fact.
* ``rdfs:subPropertyOf``, ``owl:inverseOf`` and ``rdf:type owl:TransitiveProperty`` /
  ``owl:SymmetricProperty`` become the matching relation declarations.
* Other literals become symbols (their lexical form; language tag and datatype are dropped and counted),
  or with ``literals="skip"`` are skipped and counted.
* Blank nodes get fresh ids per ingest (``_:`` keys), so two files never share one by accident.
* The graph of an N-Quads or TriG statement is kept as provenance (``graph`` in ``kb.provenance``).
* A reified statement carrying ``urn:thinkingdb:confidence`` is the fact with that confidence (this is
  how an export keeps confidences below 1).

Measured on 1M N-Triples lines (benchmarks/ingest.py): pyoxigraph parses them into Python objects in
1.7 s, rdflib's parser takes 30 s, so pyoxigraph is the parser.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from itertools import compress, repeat
from typing import Iterator
from urllib.parse import unquote

from ..errors import Diagnostic, IngestError
from ..model import Declaration
from ..normalize import _IRI, _QUOTES, Vocabulary
from .rdfwrite import CONFIDENCE, OWL, RDF, RDFS, RELATION_NS, SYMBOL_NS, XSD
from .records import CHUNK, MAX_DIAGNOSTICS, Batch, _reject as reject

LABELS = (RDFS + "label", "http://www.w3.org/2004/02/skos/core#prefLabel")
_REIFY = {RDF + "subject": 0, RDF + "predicate": 1, RDF + "object": 2}
_PLAIN_TYPES = (XSD + "string", RDF + "langString")
_EDGES = frozenset(_QUOTES + "<>")   # first or last characters that vocab.symbol would strip
_SPECIAL = frozenset({*_REIFY, CONFIDENCE, RDF + "type", *LABELS, RDFS + "subPropertyOf", OWL + "inverseOf"})

FORMATS = {".nt": "N_TRIPLES", ".ttl": "TURTLE", ".nq": "N_QUADS", ".trig": "TRIG", ".jsonld": "JSON_LD"}
"""RDF file extensions and the pyoxigraph format each is read as."""
_LINE_FORMATS = ("N_TRIPLES", "N_QUADS")


def _oxigraph(source: str):
    try:
        import pyoxigraph
    except ImportError:
        raise IngestError([Diagnostic(source, 0, 0, "reading RDF needs pyoxigraph: pip install 'thinkingdb[rdf]'")]) \
            from None
    return pyoxigraph


class _Reader:
    """The state of one RDF file being read: key memos, pending reifications, counts."""

    def __init__(self, source: str, vocab: Vocabulary, literals: str):
        self.source, self.vocab, self.literals = source, vocab, literals
        self.skeys: dict[str, str] = {}
        self.rkeys: dict[str, tuple[str, bool]] = {}
        self.reified: dict[str, list] = {}  # node -> [s, p, o, confidence, graph]
        self.reified_rest: list = []  # rdf:subject/predicate/object triples of nodes without a confidence
        self.counts: dict[str, int] = {}
        self.blank = "_:" + secrets.token_hex(4) + "."  # blank nodes are local to one reading of one file
        self.exact = vocab.mode != "folded"   # IRIs are their own keys (see thinkingdb.normalize.symbol_key)

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def symbol(self, term, batch: Batch) -> str | None:
        """The key of a subject or object term (None: a literal that is skipped)."""
        kind = type(term).__name__
        value = term.value
        if kind == "NamedNode":
            key = self.skeys.get(value)
            return self.named(value) if key is None else key
        if kind == "BlankNode":
            return self.blank + value
        if kind == "Literal":
            if self.literals == "skip":
                self.count("literals skipped")
                return None
            if term.language or term.datatype.value not in _PLAIN_TYPES:
                self.count("literal tags and datatypes dropped")
            if not value.strip():
                self.count("empty literals skipped")
                return None
            key = self.vocab.symbol(value)
            batch.labels.setdefault(key, value.strip())
            return key
        self.count("quoted triples skipped")
        return None

    def relation_key(self, iri: str) -> str:
        """The relation key of a predicate IRI, before inverses orient it."""
        return unquote(iri[len(RELATION_NS):]) if iri.startswith(RELATION_NS) else self.vocab.relation(iri)

    def relation(self, iri: str) -> tuple[str, bool]:
        """The stored relation of a predicate and whether subject and object swap."""
        rel = self.rkeys.get(iri)
        if rel is None:
            k = self.relation_key(iri)
            rel = self.rkeys[iri] = (self.vocab.inverses.get(k, k), k in self.vocab.inverses)
        return rel

    def schema(self, s, p: str, o, batch: Batch) -> bool:
        """A declaration triple: record it and return True."""
        if type(s).__name__ != "NamedNode":
            return False
        key = self.relation_key
        if p == RDFS + "subPropertyOf" and type(o).__name__ == "NamedNode":
            decl = Declaration(self.relation(s.value)[0], "subrelation_of", self.relation(o.value)[0])
        elif p == OWL + "inverseOf" and type(o).__name__ == "NamedNode":
            decl = Declaration(key(s.value), "inverse", key(o.value))
        elif p == RDF + "type" and o.value in (OWL + "TransitiveProperty", OWL + "SymmetricProperty"):
            kind = "transitive" if o.value.endswith("TransitiveProperty") else "symmetric"
            decl = Declaration(self.relation(s.value)[0], kind)
        else:
            return False
        if decl.relation != decl.other:
            batch.declarations.append((decl, 0))
        return True

    def fast(self, ox):
        """The per-statement function: an IRI-to-IRI triple in the default graph (the common case) is
        handled inline, everything else by :meth:`triple`."""
        named, default = ox.NamedNode, ox.DefaultGraph
        skeys, relation, special, triple = self.skeys, self.relation, _SPECIAL, self.triple

        def one(q, batch: Batch, line: int) -> None:
            p = q.predicate.value
            s, o = q.subject, q.object
            if p in special or type(s) is not named or type(o) is not named or type(q.graph_name) is not default:
                triple(q, batch, line)
                return
            ks = skeys.get(s.value)
            if ks is None:
                ks = self.named(s.value)
            ko = skeys.get(o.value)
            if ko is None:
                ko = self.named(o.value)
            rel, flip = relation(p)
            batch.rows.append((ko, rel, ks, 1.0, line, None, None) if flip else (ks, rel, ko, 1.0, line, None, None))
        return one

    def simple(self, ox, current: list[Batch], columnar: bool = False):
        """The handler of a block of whole lines for :func:`_line_quads`: ``current[0]`` is the batch to fill.

        It takes the block's bytes and its first line number, adds a row for every line of three IRIs
        it can key, and returns ``(line number, text)`` of the other statement lines (for pyoxigraph),
        or None, changing nothing, when the block is not UTF-8. Lines written exactly ``<s> <p> <o> .``
        are found and split with array operations over the whole block (:func:`_plain_lines`); the
        others go through :data:`_SIMPLE_LINES`. With ``columnar``, the rows of a block whose every IRI
        and predicate could be keyed are kept as :attr:`Batch.columns` instead of row tuples."""
        check, special, skeys, named, relation = ox.NamedNode, _SPECIAL, self.skeys, self.named, self.relation

        def key(iri: str) -> str | None:
            try:
                check(iri)  # the same IRI rules as the parser
            except ValueError:
                return None
            return named(iri)

        plain: dict[str, str] = {}   # predicates seen that are not special: their relation
        flipped: set[str] = set()    # those of them stored reversed (an inverse was declared)

        def keyed(S: list[str], P: list[str], O: list[str], idx, text_of) -> list[tuple[int, str]]:
            """Rows of the triples of lines ``idx``; the lines that cannot be keyed here are returned."""
            if not idx:
                return []
            KS, KO, RL = list(map(skeys.get, S)), list(map(skeys.get, O)), list(map(plain.get, P))
            if None in KS or None in KO or None in RL:          # first sight of an IRI or a predicate
                for j in range(len(idx)):
                    if KS[j] is None:
                        KS[j] = key(S[j])
                    if KO[j] is None:
                        KO[j] = key(O[j])
                    if RL[j] is None and P[j] not in special and key(P[j]) is not None:
                        RL[j], flip = relation(P[j])
                        plain[P[j]] = RL[j]
                        if flip:
                            flipped.add(P[j])
            batch = current[0]
            rows = batch.rows
            known = not (None in KS or None in KO or None in RL)
            flips = list(map(flipped.__contains__, P)) if flipped else None
            if flips is not None and not any(flips):
                flips = None
            if columnar and known:
                if flips is not None:   # a predicate declared an inverse: its lines are stored reversed
                    KS, KO = [o if f else s for s, o, f in zip(KS, KO, flips)], \
                        [s if f else o for s, o, f in zip(KS, KO, flips)]
                batch.columns.append((len(rows), KS, RL, KO, idx))
                return []
            if not known or flips is not None:
                slow = []
                for j, (i, ks, rel, ko) in enumerate(zip(idx, KS, RL, KO)):
                    if ks is None or ko is None or rel is None:
                        slow.append((i, text_of(j)))
                    else:
                        rows.append((ko, rel, ks, 1.0, i, None, None) if flips is not None and flips[j] else
                                    (ks, rel, ko, 1.0, i, None, None))
                return slow
            rows.extend(zip(KS, RL, KO, repeat(1.0), idx, repeat(None), repeat(None)))
            return []

        def block(data: bytes, first: int) -> list[tuple[int, str]] | None:
            if not data.endswith(b"\n"):
                data += b"\n"
            split = _plain_lines(data)
            if split is None:
                return None
            (flat, plain_idx), (rest, rest_idx) = split
            slow = keyed(flat[0::3], flat[1::3], flat[2::3], [first + i for i in plain_idx],
                         lambda j: "<" + "> <".join(flat[3 * j:3 * j + 3]) + "> .")
            if rest_idx:
                found = _SIMPLE_LINES.findall(rest)[:len(rest_idx)]
                texts = rest.split("\n")
                S, P, O, X = zip(*found)
                lines = [first + i for i in rest_idx]
                where = list(compress(range(len(lines)), S))   # the lines of three IRIs
                idx = [lines[j] for j in where]
                slow += keyed(list(compress(S, S)), list(compress(P, S)), list(compress(O, S)), idx,
                              lambda j: texts[where[j]])
                slow += [(i, x) for i, x in zip(compress(lines, X), compress(X, X)) if x.strip() and
                         x.lstrip()[0] != "#"]
                slow.sort()
            return slow
        return block

    def named(self, value: str) -> str:
        """The key of an IRI (memoized; the memo is cleared when it grows past 2**18 entries)."""
        if len(self.skeys) > 1 << 18:
            self.skeys.clear()
        if value.startswith(SYMBOL_NS):
            key = unquote(value[len(SYMBOL_NS):])
        elif self.exact and value[:1] not in _EDGES and value[-1:] not in _EDGES and not value[0].isspace() \
                and not value[-1].isspace() and _IRI.fullmatch(value):
            key = value   # what vocab.symbol gives (symbol_key: an IRI is kept exactly), without its steps
        else:
            key = self.vocab.symbol(value)
        self.skeys[value] = key
        return key

    def triple(self, q, batch: Batch, line: int) -> None:
        s, p, o = q.subject, q.predicate.value, q.object
        if p in _REIFY or p == CONFIDENCE or (p == RDF + "type" and o.value == RDF + "Statement"):
            if type(s).__name__ != "Literal":
                self._reify(q, batch, line)
                return
        if p in LABELS and type(o).__name__ == "Literal":
            key = self.symbol(s, batch)
            if key is not None and o.value.strip():
                batch.labels[key] = o.value.strip()
                self.count("labels")
            return
        if self.schema(s, p, o, batch):
            return
        ks, ko = self.symbol(s, batch), self.symbol(o, batch)
        if ks is None or ko is None:
            return
        rel, flip = self.relation(p)
        detail = None if q.graph_name is None or type(q.graph_name).__name__ == "DefaultGraph" else \
            '{"graph": ' + _json_str(_term_text(q.graph_name)) + "}"
        batch.rows.append((ko, rel, ks, 1.0, line, None, detail) if flip else (ks, rel, ko, 1.0, line, None, detail))

    def _reify(self, q, batch: Batch, line: int) -> None:
        node = _term_text(q.subject)
        entry = self.reified.setdefault(node, [None, None, None, None, q, line])
        p = q.predicate.value
        if p in _REIFY:
            entry[_REIFY[p]] = q.object
        elif p == CONFIDENCE:
            try:
                entry[3] = float(q.object.value)
            except ValueError:
                entry[3] = -1.0
        self.reified_rest.append((node, q, line))

    def finish(self, batch: Batch) -> None:
        """Reified statements with a confidence become facts; other reification triples plain facts."""
        done = set()
        for node, (s, p, o, conf, q, line) in self.reified.items():
            if None in (s, p, o, conf) or type(p).__name__ != "NamedNode":
                continue
            if not 0.0 <= conf <= 1.0:
                batch.rejects.append(reject(self.source, line, 1, f"confidence of statement {node} must be a "
                                            f"number in [0, 1], got {conf}", node))
                continue
            ks, ko = self.symbol(s, batch), self.symbol(o, batch)
            if ks is None or ko is None:
                continue
            rel, flip = self.relation(p.value)
            batch.rows.append((ko, rel, ks, conf, line, None, None) if flip else (ks, rel, ko, conf, line, None, None))
            done.add(node)
        for node, q, line in self.reified_rest:
            if node in done:
                continue
            ks, ko = self.symbol(q.subject, batch), self.symbol(q.object, batch)
            if ks is not None and ko is not None:
                rel, flip = self.relation(q.predicate.value)
                batch.rows.append((ko, rel, ks, 1.0, line, None, None) if flip else
                                  (ks, rel, ko, 1.0, line, None, None))


def _term_text(term) -> str:
    return ("_:" if type(term).__name__ == "BlankNode" else "") + term.value


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)



_IRREGULAR = re.compile(rb"(?m)^[ \t]*(?:#|\r?$)")  # a comment or blank line: line numbers need a map


def _statement_lines(data: bytes) -> list[int] | None:
    """1-based numbers of the lines holding a statement, or None when every line does."""
    if not _IRREGULAR.search(data):
        return None
    return [i for i, ln in enumerate(data.split(b"\n"), 1) if ln.strip() and not ln.lstrip().startswith(b"#")]


def _blocks(fh) -> Iterator[bytes]:
    """Whole lines, about 1 MiB at a time."""
    rest = b""
    while True:
        data = fh.read(1 << 20)
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]


_IRIREF = r'<([^\x00-\x20<>"{}|^`\\]+)>'
_SIMPLE_LINES = re.compile(r"(?m)^" + _IRIREF + r"[ \t]+" + _IRIREF + r"[ \t]+" + _IRIREF
                           + r"[ \t]*\.[ \t]*(?:#.*)?\r?$|^(.*)$")
"""Every line of a block: ``(s, p, o, "")`` for an N-Triples line of three IRIs without escapes (read
without building pyoxigraph objects; each distinct IRI is still checked by pyoxigraph once), else
``("", "", "", line)``."""


_WEIGHTS = None
_PLAIN = 3 + (3 << 16) + (3 << 32)   # a line of exactly three '<', three '>', three spaces, nothing forbidden


def _plain_lines(data: bytes):
    """The lines of ``data`` (whole lines, ending with a newline) written exactly ``<s> <p> <o> .``, split
    with array operations: ``((flat, plain), (rest, others))``: ``flat`` the three IRIs of each such
    line in turn, ``plain`` their line indexes (0-based in the block), ``rest`` the text of the other
    lines joined by newlines and ``others`` their indexes. None when the block is not UTF-8.

    A line is plain when it starts with ``<``, ends with ``> .``, holds exactly three ``<``, three ``>``
    and three spaces and no other whitespace, control character or ``"{}|^`\\`` (IRIs with escapes and
    literals are left to the parser). Such a line splits at ``> <`` into exactly three IRIs holding none
    of ``<``, ``>`` and space, exactly when it holds ``> <`` twice: the count of the pieces checks it.

    >>> _plain_lines(b'<a> <b> <c> .\\n_:x <b> "y" .\\n<d> <b> <e:f> .\\n')
    ((['a', 'b', 'c', 'd', 'b', 'e:f'], [0, 2]), ('_:x <b> "y" .', [1]))
    >>> _plain_lines(b'<a> .<b> <c> .\\n')   # three '<', '>' and spaces, but one '> <'
    (([], []), ('<a> .<b> <c> .', [0]))
    """
    import numpy as np
    global _WEIGHTS
    if _WEIGHTS is None:
        w = np.zeros(256, np.int64)
        w[:33] = 1 << 48          # control characters and whitespace other than a space
        w[ord(" ")] = 1 << 32
        w[ord("<")], w[ord(">")] = 1, 1 << 16
        for ch in b'"{}|^`\\':
            w[ch] = 1 << 48
        w[ord("\n")] = 0         # never inside a line
        _WEIGHTS = w
    arr = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    length = ends - starts
    cum = np.zeros(len(arr) + 1, np.int64)
    np.cumsum(_WEIGHTS[arr], out=cum[1:])
    sel = np.flatnonzero((length >= 10) & (length < 1 << 16))   # short enough for the counts not to carry
    s, e = starts[sel], ends[sel]
    sel = sel[(arr[s] == 60) & (arr[e - 1] == 46) & (arr[e - 2] == 32) & (arr[e - 3] == 62)
              & (cum[e] - cum[s] == _PLAIN)]
    flat: list[str] = []
    if len(sel):
        keep = np.zeros(len(ends), dtype=bool)
        keep[sel] = True
        mask = np.repeat(keep, length + 1)
        try:
            text = arr[mask].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
        flat = text[1:-4].replace("> .\n<", "> <").split("> <")
        if len(flat) != 3 * len(sel):   # some line holds '> <' less than twice: leave them all to the rest
            flat, sel = [], sel[:0]
            keep[:] = False
    if len(sel) == len(ends):
        return (flat, sel.tolist()), ("", [])
    if not len(sel):
        try:
            return ([], []), (data[:-1].decode("utf-8"), list(range(len(ends))))
        except UnicodeDecodeError:
            return None
    try:
        rest = arr[~mask].tobytes()[:-1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return (flat, sel.tolist()), (rest, np.flatnonzero(~keep).tolist())


def _line_quads(ox, fmt, fh, source: str, simple=None) -> Iterator[tuple[object, int, object, int]]:
    """``(quad, line, None, bytes)`` per statement of an N-Triples/N-Quads stream, or
    ``(None, line, reject, bytes)`` for a bad line; reading goes on with the next line.

    ``simple(block, first line)``, when given, takes a block of whole lines and returns ``(line number,
    text)`` of the lines it did not handle (None: it handled none, the block is not UTF-8); after each
    such block ``(None, 0, None, bytes)`` marks the progress."""
    line_no = 0
    for block in _blocks(fh):
        data, base, size = block, line_no, len(block)
        line_no += block.count(b"\n") + (not block.endswith(b"\n"))
        if simple is not None:
            slow = simple(block, base + 1)
            if slow is not None:
                yield None, 0, None, size
                if slow:
                    yield from _mapped_quads(ox, fmt, [ln for _, ln in slow], [i for i, _ in slow], source)
                continue
        while data:
            stmts = _statement_lines(data)
            k = 0
            try:
                for q in ox.parse(data, fmt):
                    yield q, base + (stmts[k] if stmts is not None else k + 1), None, size
                    size = 0
                    k += 1
                data = b""
            except SyntaxError as exc:
                bad, column = max(exc.lineno or 1, 1), exc.offset or 1
                lines = data.split(b"\n")
                while bad > 1 and (bad > len(lines) or not lines[bad - 1].strip()):  # an end of input: the
                    bad -= 1                                                       # statement left open
                    column = len(lines[bad - 1]) + 1
                text = lines[bad - 1].decode("utf-8", "replace") if bad <= len(lines) else ""
                yield None, base + bad, reject(source, base + bad, column, _message(exc), text), size
                size = 0
                data = b"\n".join(lines[bad:])
                base += bad


def _mapped_quads(ox, fmt, lines: list[str], where: list[int], source: str):
    """The statements of ``lines`` (one each; ``where[k]`` is the file line of ``lines[k]``), going on
    after a bad line."""
    while lines:
        k = 0
        try:
            for q in ox.parse("\n".join(lines).encode("utf-8"), fmt):
                yield q, where[k], None, 0
                k += 1
            return
        except SyntaxError as exc:
            bad = min(max(exc.lineno or 1, 1), len(lines))
            yield None, where[bad - 1], reject(source, where[bad - 1], exc.offset or 1, _message(exc),
                                               lines[bad - 1]), 0
            lines, where = lines[bad:], where[bad:]


def _stream_quads(ox, fmt, fh, source: str) -> Iterator[tuple[object, int, object, int]]:
    """Turtle, TriG, JSON-LD: the whole stream through the parser; the first syntax error ends it."""
    try:
        for q in ox.parse(fh, fmt):
            yield q, 0, None, 0
    except SyntaxError as exc:
        yield None, exc.lineno or 0, reject(source, exc.lineno or 0, exc.offset or 0, _message(exc), ""), 0


def _message(exc: SyntaxError) -> str:
    msg = str(exc)
    return "invalid RDF: " + (msg.split(": ", 1)[-1] if msg.startswith("Parser error") else msg)


def _inverse_declarations(ox, fmt, line_based: bool, path: str, reader: _Reader) -> None:
    """A first pass over a file that mentions owl:inverseOf, so that every fact of the file is stored
    in its one direction whichever line declares the inverse."""
    with open(path, "rb") as fh:
        quads = _line_quads(ox, fmt, fh, reader.source) if line_based else _stream_quads(ox, fmt, fh, "")
        for q, _, bad, _ in quads:
            if bad is None and q.predicate.value == OWL + "inverseOf" and type(q.subject).__name__ == "NamedNode" \
                    and type(q.object).__name__ == "NamedNode":
                try:
                    reader.vocab.add_inverse(q.subject.value, q.object.value)
                except ValueError:
                    pass  # the second pass reports the conflict on its line


def _mentions(path: str, needle: bytes) -> bool:
    with open(path, "rb") as fh:
        tail = b""
        for block in iter(lambda: fh.read(1 << 22), b""):
            if needle in tail + block[:len(needle)] or needle in block:
                return True
            tail = block[-len(needle):]
    return False


def read_rdf(path: str, source: str, vocab: Vocabulary, *, literals: str = "symbols",
             columnar: bool = False) -> Iterator[Batch]:
    """An RDF file (by extension, see :data:`FORMATS`) as batches of facts, labels and declarations.

    ``literals``: ``"symbols"`` (a literal object becomes a symbol) or ``"skip"`` (skipped, counted).
    ``columnar``: N-Triples and N-Quads lines of three IRIs may come as :attr:`Batch.columns` (the
    ingest's fact writer takes them without a tuple per row); otherwise every row is in ``rows``.
    """
    ox = _oxigraph(source)
    ext = os.path.splitext(path)[1].lower()
    fmt = getattr(ox.RdfFormat, FORMATS[ext])
    line_based = FORMATS[ext] in _LINE_FORMATS
    reader = _Reader(source, vocab, literals)
    from .nesting import MAX_NESTING, too_deep
    deep = None if line_based else too_deep(path, FORMATS[ext])
    if deep is not None:   # the parser takes quadratic time in the nesting: refused before it runs
        batch = Batch(source)
        batch.rejects.append(reject(source, deep[0], deep[1], f"nested deeper than {MAX_NESTING:,} brackets; "
                                    "refused before parsing (thinkingdb.store.nesting.MAX_NESTING)", ""))
        yield batch
        return
    if _mentions(path, b"inverseOf"):
        _inverse_declarations(ox, fmt, line_based, path, reader)
    batch = Batch(source)
    current = [batch]
    any_statement = False
    one = reader.fast(ox)
    with open(path, "rb") as fh:
        quads = _line_quads(ox, fmt, fh, source, reader.simple(ox, current, columnar)) if line_based else \
            _stream_quads(ox, fmt, fh, source)
        for q, line, bad, size in quads:
            batch.size += size
            if q is None and bad is None:  # progress after a block read on the simple path
                any_statement = any_statement or bool(batch.rows) or bool(batch.columns)
                if batch.fact_count >= CHUNK:
                    yield batch
                    batch = current[0] = Batch(source)
                continue
            if bad is not None:
                batch.rejects.append(bad)
                if len(batch.rejects) > MAX_DIAGNOSTICS:
                    break
                continue
            any_statement = True
            one(q, batch, line)
            if len(batch.rows) >= CHUNK:
                yield batch
                batch = current[0] = Batch(source)
    reader.finish(batch)
    if not any_statement and not batch.rejects:
        batch.rejects.append(reject(source, 1, 1, "the file holds no RDF statements", ""))
    batch.notes = dict(reader.counts)
    yield batch
