"""RDF statements into ThinkingDB rows, one file's worth at a time (:class:`Reader`, for
:func:`thinkingdb.store.rdf.read_rdf`): IRIs, blank nodes and literals to symbol keys (memoized),
predicates to relation keys oriented by inverses, ``rdfs:subPropertyOf`` / ``owl:inverseOf`` /
``owl:TransitiveProperty`` / ``owl:SymmetricProperty`` to declarations, ``rdfs:label`` /
``skos:prefLabel`` to display labels, and reified statements with ``urn:thinkingdb:confidence`` to
facts with that confidence. An IRI-to-IRI triple in the default graph takes the inline path of
:meth:`Reader.fast`.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from ..model import Declaration
from ..normalize import _IRI, _QUOTES, Vocabulary
from .rdfwrite import CONFIDENCE, OWL, RDF, RDFS, RELATION_NS, SYMBOL_NS, XSD
from .records import Batch, _reject as reject

__all__ = ["LABELS", "SPECIAL", "Reader"]

LABELS = (RDFS + "label", "http://www.w3.org/2004/02/skos/core#prefLabel")
_REIFY = {RDF + "subject": 0, RDF + "predicate": 1, RDF + "object": 2}
_PLAIN_TYPES = (XSD + "string", RDF + "langString")
_EDGES = frozenset(_QUOTES + "<>")   # first or last characters that vocab.symbol would strip
SPECIAL = frozenset({*_REIFY, CONFIDENCE, RDF + "type", *LABELS, RDFS + "subPropertyOf", OWL + "inverseOf"})
"""Predicates that are not plain facts: what the inline and block paths hand to :meth:`Reader.triple`."""


class Reader:
    """The state of one RDF file being read: key memos, pending reifications, counts."""

    def __init__(self, source: str, vocab: Vocabulary, literals: str, blank: str):
        self.source, self.vocab, self.literals = source, vocab, literals
        self.skeys: dict[str, str] = {}
        self.rkeys: dict[str, tuple[str, bool]] = {}
        self.reified: dict[str, list] = {}  # node -> [s, p, o, confidence, graph]
        self.reified_rest: list = []  # rdf:subject/predicate/object triples of nodes without a confidence
        self.counts: dict[str, int] = {}
        self.blank = blank   # the prefix of blank nodes' keys: local to one reading of one file
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
            return self.literal(value, bool(term.language) or term.datatype.value not in _PLAIN_TYPES, batch)
        self.count("quoted triples skipped")
        return None

    def literal(self, value: str, tagged: bool, batch: Batch) -> str | None:
        """The key of a literal object (None: skipped); ``tagged``: it has a language tag or a datatype
        other than a plain string's."""
        if self.literals == "skip":
            self.count("literals skipped")
            return None
        if tagged:
            self.count("literal tags and datatypes dropped")
        if not value.strip():
            self.count("empty literals skipped")
            return None
        key = self.vocab.symbol(value)
        batch.labels.setdefault(key, value.strip())
        return key

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
        skeys, relation, special, triple = self.skeys, self.relation, SPECIAL, self.triple

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
