"""Facts, labels and declarations as N-Triples or Turtle, written so that reading them back
(:mod:`thinkingdb.store.rdf`) gives the same store.

* A symbol key that is an IRI or CURIE (kept exactly, see :mod:`thinkingdb.normalize`) is written as
  that IRI; any other key as ``urn:thinkingdb:symbol:`` plus the key with ``%``-escapes for the
  characters an IRI cannot hold. Relations likewise under ``urn:thinkingdb:relation:``.
* Every label is written as ``rdfs:label`` (labels are never lost); a label equal to an IRI key is left
  out, since the IRI says it.
* A fact with confidence 1 is a plain triple. A fact below 1 is written as a reified statement with
  ``urn:thinkingdb:confidence`` instead, since asserting it plainly would claim it for certain.
* Declarations become ``rdfs:subPropertyOf``, ``owl:inverseOf``, ``owl:TransitiveProperty`` and
  ``owl:SymmetricProperty``. Rules have no RDF form and are counted by :func:`write_rdf`.

>>> import io
>>> out = io.StringIO()
>>> write_rdf(out, "nt", [("nginx", "depends_on", "openssl", 1.0)], {"nginx": "Nginx"}, [])
0
>>> print(out.getvalue(), end="")
<urn:thinkingdb:symbol:nginx> <urn:thinkingdb:relation:depends_on> <urn:thinkingdb:symbol:openssl> .
<urn:thinkingdb:symbol:nginx> <http://www.w3.org/2000/01/rdf-schema#label> "Nginx" .
"""

from __future__ import annotations

import re
from typing import Iterable, TextIO

from ..model import Declaration
from ..normalize import exact_name, relation_key, symbol_key

SYMBOL_NS = "urn:thinkingdb:symbol:"
RELATION_NS = "urn:thinkingdb:relation:"
CONFIDENCE = "urn:thinkingdb:confidence"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = {"tdb": SYMBOL_NS, "rel": RELATION_NS, "rdf": RDF, "rdfs": RDFS, "owl": OWL, "xsd": XSD}

_NOT_IN_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\%]')
_LOCAL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_\-])?")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_iri(text: str) -> str:
    return _NOT_IN_IRI.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), text)


def symbol_iri(key: str) -> str:
    """The IRI a symbol key is written as.

    >>> symbol_iri("http://example.org/Paris"), symbol_iri("GO:0000001"), symbol_iri("new_york"), symbol_iri('a"b')
    ('http://example.org/Paris', 'GO:0000001', 'urn:thinkingdb:symbol:new_york', 'urn:thinkingdb:symbol:a%22b')
    """
    if exact_name(key) == key and symbol_key(key) == key:
        return key
    return SYMBOL_NS + _escape_iri(key)


def relation_iri(key: str) -> str:
    """The IRI a relation key is written as.

    >>> relation_iri("depends_on"), relation_iri("http://schema.org/knows")
    ('urn:thinkingdb:relation:depends_on', 'http://schema.org/knows')
    """
    if exact_name(key) == key and relation_key(key) == key:
        return key
    return RELATION_NS + _escape_iri(key)


def literal(text: str) -> str:
    """An N-Triples / Turtle string literal.

    >>> literal('say "hi"\\n')
    '"say \\\\"hi\\\\"\\\\n"'
    """
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def _statements(rows: Iterable[tuple[str, str, str, float]], labels: dict[str, str],
                declarations: Iterable[Declaration]) -> Iterable[tuple[str, str, str]]:
    """``(subject IRI, predicate IRI, object term)`` in N-Triples term syntax, objects already written."""
    seen: set[str] = set()
    n = 0
    for s, r, o, c in rows:
        si, ri, oi = symbol_iri(s), relation_iri(r), symbol_iri(o)
        seen.add(s)
        seen.add(o)
        if c >= 1.0:
            yield si, ri, f"<{oi}>"
        else:
            n += 1
            node = f"_:s{n}"
            yield node, RDF + "type", f"<{RDF}Statement>"
            yield node, RDF + "subject", f"<{si}>"
            yield node, RDF + "predicate", f"<{ri}>"
            yield node, RDF + "object", f"<{oi}>"
            yield node, CONFIDENCE, f'"{c!r}"^^<{XSD}double>'
    for key in sorted(seen):
        label = labels.get(key)
        if label is not None and label != symbol_iri(key):
            yield symbol_iri(key), RDFS + "label", literal(label)
    for d in declarations:
        ri = relation_iri(d.relation)
        if d.kind == "transitive":
            yield ri, RDF + "type", f"<{OWL}TransitiveProperty>"
        elif d.kind == "symmetric":
            yield ri, RDF + "type", f"<{OWL}SymmetricProperty>"
        elif d.kind == "inverse":
            yield ri, OWL + "inverseOf", f"<{relation_iri(d.other)}>"
        else:
            yield ri, RDFS + "subPropertyOf", f"<{relation_iri(d.other)}>"


def _nt_subject(term: str) -> str:
    return term if term.startswith("_:") else f"<{term}>"


def _ttl_name(iri: str) -> str:
    for prefix, ns in PREFIXES.items():
        if iri.startswith(ns) and _LOCAL.fullmatch(iri[len(ns):]):
            return f"{prefix}:{iri[len(ns):]}"
    return f"<{iri}>"


def _ttl_term(term: str) -> str:
    if term.startswith("<") and term.endswith(">"):
        return _ttl_name(term[1:-1])
    if "^^<" in term and term.endswith(">"):
        value, _, dtype = term.rpartition("^^<")
        return f"{value}^^{_ttl_name(dtype[:-1])}"
    return term


def write_rdf(out: TextIO, fmt: str, rows: Iterable[tuple[str, str, str, float]], labels: dict[str, str],
              declarations: Iterable[Declaration]) -> int:
    """Write ``rows`` (subject, relation, object, confidence keys) as ``nt`` or ``ttl``; returns how many
    declarations had no RDF form (none today: every declaration kind has one)."""
    statements = _statements(rows, labels, declarations)
    if fmt == "nt":
        for s, p, o in statements:
            out.write(f"{_nt_subject(s)} <{p}> {o} .\n")
        return 0
    for prefix, ns in PREFIXES.items():
        out.write(f"@prefix {prefix}: <{ns}> .\n")
    out.write("\n")
    for s, p, o in statements:
        subject = s if s.startswith("_:") else _ttl_name(s)
        out.write(f"{subject} {'a' if p == RDF + 'type' else _ttl_name(p)} {_ttl_term(o)} .\n")
    return 0
