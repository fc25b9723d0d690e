"""RDF in and out (issue 17): N-Triples, Turtle, N-Quads and JSON-LD written here, W3C-style edge cases
(blank nodes, language tags, escaped IRIs), declarations from RDFS/OWL, and export-then-ingest round
trips checked against the store they came from."""

from __future__ import annotations

import io
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb import IngestError, open_kb
from thinkingdb.model import Declaration, Fact
from thinkingdb.store import Store
from thinkingdb.store.rdf import read_rdf
from thinkingdb.store.records import Interner
from thinkingdb.normalize import Vocabulary

pytest.importorskip("pyoxigraph")

EX = "http://example.org/"


def load(tmp_path, name: str, text: str, **kw):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    kb = open_kb(str(tmp_path / "kb.sqlite"))
    report = kb.ingest([str(path)], **kw)
    return kb, report


def facts(kb) -> set[tuple[str, str, str, float]]:
    return set(kb.store.fact_rows())


def test_ntriples_blank_nodes_language_tags_and_escaped_iris(tmp_path):
    kb, report = load(tmp_path, "a.nt", "\n".join([
        "# a comment line",
        f"<{EX}Paris> <{EX}locatedIn> <{EX}France> .",
        f"<{EX}paris> <{EX}locatedIn> <{EX}Texas> .   # trailing comment",
        "",
        f"<{EX}\\u0041lice> <{EX}knows> _:bob .",          # \u0041 is A
        f"_:bob <{EX}name> \"Bob \\\"the\\\" builder\"@en .",
        f"<{EX}Paris> <http://www.w3.org/2000/01/rdf-schema#label> \"Paris\"@fr .",
        f"<{EX}Paris> <{EX}population> \"2100000\"^^<http://www.w3.org/2001/XMLSchema#integer> .",
    ]) + "\n")
    rows = facts(kb)
    # case kept: Paris and paris are two symbols, each in its own place
    assert (f"{EX}Paris", f"{EX}locatedIn", f"{EX}France", 1.0) in rows
    assert (f"{EX}paris", f"{EX}locatedIn", f"{EX}Texas", 1.0) in rows
    bob = [o for s, r, o, _ in rows if s == f"{EX}Alice" and r == f"{EX}knows"]
    assert len(bob) == 1 and bob[0].startswith("_:")
    assert (bob[0], f"{EX}name", 'bob_"the"_builder', 1.0) in rows
    assert (f"{EX}Paris", f"{EX}population", "2100000", 1.0) in rows
    assert len(rows) == 5  # the label is a label, not a fact
    labels = kb.labels()
    assert labels[f"{EX}Paris"] == "Paris" and labels['bob_"the"_builder'] == 'Bob "the" builder'
    assert dict(report.notes) == {"labels": 1, "literal tags and datatypes dropped": 2}
    # provenance has the line of each statement (comment and blank lines counted)
    assert kb.store.provenance(_t(f"{EX}paris", f"{EX}locatedIn", f"{EX}Texas"))[0]["line"] == 3
    assert kb.store.provenance(_t(f"{EX}Alice", f"{EX}knows", bob[0]))[0]["line"] == 5


def _t(s, r, o):
    from thinkingdb.model import Triple
    return Triple(s, r, o)


def test_blank_nodes_of_two_files_are_two_nodes(tmp_path):
    for name in ("a.nt", "b.nt"):
        (tmp_path / name).write_text(f"_:x <{EX}p> <{EX}{name[0]}> .\n", encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "a.nt"), str(tmp_path / "b.nt")])
        subjects = {s for s, _, _, _ in kb.store.fact_rows()}
    assert len(subjects) == 2


def test_turtle_declarations_and_inverse_declared_after_its_facts(tmp_path):
    kb, report = load(tmp_path, "a.ttl", f"""
@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
ex:France ex:hasPart ex:Paris .
ex:Paris ex:partOf ex:Europe .
ex:partOf owl:inverseOf ex:hasPart .
ex:locatedIn a owl:TransitiveProperty .
ex:borders a owl:SymmetricProperty .
ex:capitalOf rdfs:subPropertyOf ex:locatedIn .
ex:Paris ex:capitalOf ex:France .
""")
    assert set(kb.store.declarations()) == {
        Declaration(f"{EX}partOf", "inverse", f"{EX}hasPart"), Declaration(f"{EX}locatedIn", "transitive"),
        Declaration(f"{EX}borders", "symmetric"), Declaration(f"{EX}capitalOf", "subrelation_of", f"{EX}locatedIn")}
    # hasPart is stored as partOf, reversed, although the inverse is declared two lines later
    assert facts(kb) == {(f"{EX}Paris", f"{EX}partOf", f"{EX}France", 1.0),
                         (f"{EX}Paris", f"{EX}partOf", f"{EX}Europe", 1.0),
                         (f"{EX}Paris", f"{EX}capitalOf", f"{EX}France", 1.0)}
    # the subrelation declaration is in force for queries
    answers = kb.query(f'? "{EX}Paris" "{EX}locatedIn" ?x').answers
    assert [a.bindings["x"] for a in answers] == [f"{EX}France"]
    assert report.declarations == 4


def test_nquads_keep_the_graph_as_provenance(tmp_path):
    kb, _ = load(tmp_path, "a.nq", f"<{EX}a> <{EX}p> <{EX}b> <{EX}g1> .\n<{EX}a> <{EX}p> <{EX}c> .\n")
    assert kb.store.provenance(_t(f"{EX}a", f"{EX}p", f"{EX}b"))[0]["graph"] == f"{EX}g1"
    assert "graph" not in kb.store.provenance(_t(f"{EX}a", f"{EX}p", f"{EX}c"))[0]


def test_jsonld(tmp_path):
    kb, _ = load(tmp_path, "a.jsonld", '{"@context": {"ex": "http://example.org/"}, "@id": "ex:a", '
                                       '"ex:knows": {"@id": "ex:b"}, "ex:name": "A"}')
    assert facts(kb) == {(f"{EX}a", f"{EX}knows", f"{EX}b", 1.0), (f"{EX}a", f"{EX}name", "a", 1.0)}


def test_literals_can_be_skipped_and_are_counted(tmp_path):
    path = tmp_path / "a.nt"
    path.write_text(f'<{EX}a> <{EX}p> "x" .\n<{EX}a> <{EX}p> "y"@en .\n<{EX}a> <{EX}q> <{EX}b> .\n')
    batches = list(read_rdf(str(path), "a.nt", Vocabulary(), literals="skip"))
    assert [r[:3] for b in batches for r in b.rows] == [(f"{EX}a", f"{EX}q", f"{EX}b")]
    assert batches[-1].notes == {"literals skipped": 2}


@pytest.mark.parametrize("text,line,column", [
    (f"<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}p> \"unterminated .\n", 2, None),
    (f"<{EX}a> <{EX}p> <{EX}b> .\n\n<relative> <{EX}p> <{EX}b> .\n", 3, 1),
    (f"<{EX}a> <{EX}p> <{EX}b>\n", 1, None),  # no final dot
])
def test_ntriples_errors_name_the_line_and_nothing_is_written(tmp_path, text, line, column):
    path = tmp_path / "bad.nt"
    path.write_text(text, encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        with pytest.raises(IngestError) as err:
            kb.ingest([str(path)])
        d = err.value.diagnostics[0]
        assert (d.source.endswith("bad.nt"), d.line) == (True, line)
        if column is not None:
            assert d.column == column
        assert "invalid RDF" in d.reason
        assert kb.store.fact_rows() == []


def test_skip_invalid_keeps_the_good_lines_after_a_bad_one(tmp_path):
    kb, report = load(tmp_path, "a.nt", f"<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}p> oops .\n"
                                        f"<{EX}c> <{EX}p> <{EX}d> .\n<{EX}e> <{EX}p> .\n<{EX}f> <{EX}p> <{EX}g> .\n",
                      skip_invalid=True)
    assert {(s, o) for s, _, o, _ in facts(kb)} == {(f"{EX}a", f"{EX}b"), (f"{EX}c", f"{EX}d"), (f"{EX}f", f"{EX}g")}
    assert report.rejected == 2
    assert kb.store.provenance(_t(f"{EX}f", f"{EX}p", f"{EX}g"))[0]["line"] == 5


@pytest.mark.parametrize("bad_bytes", [False, True])   # True: a block that is not UTF-8 goes whole to pyoxigraph
def test_a_line_with_an_error_contributes_nothing(tmp_path, bad_bytes):
    """pyoxigraph gives the triple of ``<a> <p> <b> .<c>`` before it reports the error on that line: the
    triple must not be kept, with --skip-invalid or without."""
    lines = [f"<{EX}a> <{EX}p> <{EX}b> .<{EX}c>", f"<{EX}d> <{EX}p> <{EX}e> .",
             f"<{EX}f> <{EX}p> <{EX}g> . <{EX}f> <{EX}p> <{EX}h> .", f'<{EX}i> <{EX}p> "x" .junk',
             f"<{EX}j> <{EX}p> <{EX}k> ."]
    path = tmp_path / "a.nt"
    path.write_bytes("\n".join(lines).encode("utf-8") + (b'\n<x> <y> "\xff" .\n' if bad_bytes else b"\n"))
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        with pytest.raises(IngestError) as err:
            kb.ingest([str(path)])
        assert [d.line for d in err.value.diagnostics] == [1, 3, 4] + ([6] if bad_bytes else [])
        report = kb.ingest([str(path)], skip_invalid=True)
        assert {(s, o) for s, _, o, _ in facts(kb)} == {(f"{EX}d", f"{EX}e"), (f"{EX}j", f"{EX}k")}
        assert report.rejected == 3 + bad_bytes


def test_turtle_error_names_line(tmp_path):
    path = tmp_path / "bad.ttl"
    path.write_text("@prefix ex: <http://example.org/> .\nex:a ex:p ex:b .\nex:a ex:p ex:c ;\n", encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb, pytest.raises(IngestError) as err:
        kb.ingest([str(path)])
    assert err.value.diagnostics[0].line in (3, 4)


# -- export and round trips ---------------------------------------------------------------------------
WORDS = ["nginx", "OpenSSL", "Secure Execution", "café", 'say "hi"', "a\\b", "50%", "x{y}", "GO:0000001",
         "ex:Paris", "http://example.org/Paris", "urn:isbn:0451450523", "ÅNGSTRÖM", "tab<b>"]
RELS = ["depends_on", "partOf", "ex:locatedIn", "http://schema.org/knows", "rdf:type"]


def build(path, facts_, decls):
    with Store(path) as st:
        vocab = st.vocabulary()
        with st.transaction():
            rows = []
            for s, r, o, c in facts_:
                ks, kr, ko = vocab.symbol(s), vocab.relation(r), vocab.symbol(o)
                rows.append((Fact(ks, kr, ko, c), "src.tdb", 1, None))
                st.add_labels({ks: s.strip(), ko: o.strip()}, "src.tdb")
            st.add_facts(rows)
            st.add_declarations((Declaration(vocab.relation(a), k, vocab.relation(b) if b else None), "src.tdb", 1)
                                for a, k, b in decls)


def state(kb):
    rows = kb.store.fact_rows()
    labels = kb.labels()
    keys = {s for s, _, _, _ in rows} | {o for _, _, o, _ in rows}
    return sorted(rows), {k: labels.get(k, k) for k in keys}, sorted(kb.store.declarations())


facts_strategy = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(RELS), st.sampled_from(WORDS),
                                    st.sampled_from([1.0, 0.5, 0.25, 0.9])), min_size=1, max_size=12)
decls_strategy = st.lists(st.one_of(
    st.tuples(st.sampled_from(RELS), st.sampled_from(["transitive", "symmetric"]), st.none()),
    st.tuples(st.sampled_from(RELS[:2]), st.just("subrelation_of"), st.sampled_from(RELS[2:]))), max_size=3)


@settings(max_examples=25)
@given(facts_strategy, decls_strategy, st.sampled_from(["nt", "ttl", "tsv"]))
def test_export_then_ingest_gives_the_same_store(tmp_path_factory, facts_, decls, fmt):
    d = tmp_path_factory.mktemp("rt")
    build(str(d / "a.sqlite"), facts_, decls)
    with open_kb(str(d / "a.sqlite")) as kb:
        before = state(kb)
        (d / f"out.{fmt}").write_text(kb.export(fmt), encoding="utf-8")
    with open_kb(str(d / "b.sqlite")) as kb:
        kb.ingest([str(d / f"out.{fmt}")])
        after = state(kb)
    if fmt == "tsv":  # TSV carries no declarations
        before = before[:2]
        after = after[:2]
    assert after == before


def test_export_nt_by_hand(tmp_path):
    import os
    d = str(tmp_path)
    build(os.path.join(d, "kb.sqlite"), [("nginx", "depends_on", "ex:SSL", 1.0), ("a", "r", "b", 0.5)],
          [("depends_on", "transitive", None)])
    with open_kb(os.path.join(d, "kb.sqlite")) as kb:
        text = kb.export("nt")
    T, L = "urn:thinkingdb:symbol:", "http://www.w3.org/2000/01/rdf-schema#label"
    R, RDF = "urn:thinkingdb:relation:", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    assert sorted(text.splitlines()) == sorted([
        f"<{T}nginx> <{R}depends_on> <ex:SSL> .",
        f"_:s1 <{RDF}type> <{RDF}Statement> .",
        f"_:s1 <{RDF}subject> <{T}a> .",
        f"_:s1 <{RDF}predicate> <{R}r> .",
        f"_:s1 <{RDF}object> <{T}b> .",
        f'_:s1 <urn:thinkingdb:confidence> "0.5"^^<http://www.w3.org/2001/XMLSchema#double> .',
        f'<{T}a> <{L}> "a" .', f'<{T}b> <{L}> "b" .', f'<{T}nginx> <{L}> "nginx" .',
        f"<{R}depends_on> <{RDF}type> <http://www.w3.org/2002/07/owl#TransitiveProperty> .",
    ])


def test_turtle_export_is_valid_turtle_for_an_independent_parser(tmp_path):
    rdflib = pytest.importorskip("rdflib")
    build(str(tmp_path / "kb.sqlite"), [(w, "depends_on", WORDS[(i + 1) % len(WORDS)], 1.0)
                                        for i, w in enumerate(WORDS)], [])
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        ttl, nt = kb.export("ttl"), kb.export("nt")
    g1, g2 = rdflib.Graph().parse(data=ttl, format="turtle"), rdflib.Graph().parse(data=nt, format="nt")
    assert len(g1) == len(g2) == len(WORDS) + 10  # a fact each, and a label for each non-IRI word
    from rdflib.compare import isomorphic
    assert isomorphic(g1, g2)


# -- symbol modes ----------------------------------------------------------------------------------------
def test_a_new_store_keeps_curies_exact_and_a_folded_store_folds_them(tmp_path):
    src = tmp_path / "a.tsv"
    src.write_text("GO:0000001\tis_a\tGO:0000002\nex:New_York\tex:sameAs\tex:New-York\n", encoding="utf-8")
    with open_kb(str(tmp_path / "new.sqlite")) as kb:
        kb.ingest([str(src)])
        assert kb.store.symbol_mode == "iris"
        assert sorted(facts(kb)) == [("GO:0000001", "is_a", "GO:0000002", 1.0),
                                     ("ex:New_York", "ex:sameAs", "ex:New-York", 1.0)]
        assert [a.bindings["x"] for a in kb.query("? GO:0000001 is_a ?x").answers] == ["GO:0000002"]
    with open_kb(str(tmp_path / "old.sqlite"), symbols="folded") as kb:
        kb.ingest([str(src)])
        assert sorted(facts(kb)) == [("ex:new_york", "ex:same_as", "ex:new_york", 1.0),
                                     ("go:0000001", "is_a", "go:0000002", 1.0)]
        assert [a.bindings["x"] for a in kb.query("? GO:0000001 is_a ?x").answers] == ["go:0000002"]


def test_quoted_mode_keeps_quoted_symbols_in_ingest_query_and_format(tmp_path):
    import grammar
    src = tmp_path / "a.tdb"
    src.write_text('"Paris" located_in "France".\n"paris" located_in "Texas".\nex:Lyon located_in France.\n'
                   'rule r: ?x located_in "France" => ?x in_eu yes.\n', encoding="utf-8")
    with open_kb(str(tmp_path / "q.sqlite"), symbols="quoted") as kb:
        kb.ingest([str(src)])
        assert kb.store.symbol_mode == "quoted"
        assert sorted(facts(kb)) == [("Paris", "located_in", "France", 1.0), ("ex:Lyon", "located_in", "france", 1.0),
                                     ("paris", "located_in", "Texas", 1.0)]
        assert [a.bindings["x"] for a in kb.query('? "Paris" located_in ?x').answers] == ["France"]
        assert [a.bindings["x"] for a in kb.query("? Paris located_in ?x").answers] == ["Texas"]   # bare: folded
        assert sorted(a.bindings["x"] for a in kb.query("? ?x in_eu yes").answers) == ["Paris"]
    with open_kb(str(tmp_path / "i.sqlite")) as kb:   # the default: quoted symbols fold like words
        kb.ingest([str(src)])
        assert sorted(facts(kb))[:2] == [("ex:Lyon", "located_in", "france", 1.0),
                                         ("paris", "located_in", "france", 1.0)]
    doc = grammar.parse('"nginx" uses "Open SSL".\nnginx uses x.\n')
    assert [grammar.format_statement(s) for s in doc.statements] == ['"nginx" uses "Open SSL".', "nginx uses x."]
    assert [s.subject.quoted for s in grammar.parse(grammar.format_document(doc)).statements] == [True, False]


def test_a_store_with_facts_keeps_its_symbol_mode(tmp_path):
    from thinkingdb import StoreError
    src = tmp_path / "a.tsv"
    src.write_text("a\tr\tb\n", encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(src)])
    with pytest.raises(StoreError, match="cannot change"):
        open_kb(str(tmp_path / "kb.sqlite"), symbols="folded")
    with pytest.raises(StoreError, match="unknown symbol mode"):
        open_kb(str(tmp_path / "kb2.sqlite"), symbols="lower")


# -- the plain-IRI fast path against pyoxigraph itself ----------------------------------------------------
IRIS = ["http://e.org/a", "http://e.org/B", "urn:x:1", "http://e.org/%41", "http://e.org/%zz", "relative",
        "http://e.org:8080/p", "http://e.org:x/p", "http://e.org/é", "http://e.org/a'"]
LINES = st.one_of(
    st.tuples(st.sampled_from(IRIS), st.sampled_from(IRIS), st.sampled_from(IRIS)).map(
        lambda t: "<{}> <{}> <{}> .".format(*t)),
    st.sampled_from(["", "# a comment", "<http://e.org/\\u0041> <http://e.org/p> <http://e.org/c> .",
                     '<http://e.org/a> <http://e.org/p> "lit" .', "<http://e.org/a>   <http://e.org/p>\t<urn:x:2>  . # c",
                     # near misses of the array split of '<s> <p> <o> .' lines (thinkingdb.store.ntlines.plain_lines)
                     "<http://e.org/a> .<http://e.org/p> <http://e.org/c> .", "<urn:x:1> <urn:x:2> <urn:x:3> .\r",
                     "<urn:x:1> <urn:x:2> <urn:x:3>.", "<urn:x:1> <urn:x:2> <urn:x:3> . ", "<urn:x 1> <urn:x:2> <urn:x:3> .",
                     "<urn:x:1>> <urn:x:2> <urn:x:3> .", "<urn:x:1> <urn:x:2> <urn:x:3> <urn:x:4> .",
                     "<urn:x:1> <urn:x:2> <urn:x:<3> .",
                     "<urn:x:1> <urn:x:2> <urn:x:3> .#c", "<> <urn:x:2> <urn:x:3> .",
                     "<urn:x:1> <urn:x:2> <urn:x:3> .<urn:x:4>", "<urn:x:1> <urn:x:2> <urn:x:3> . <urn:x:1> <urn:x:2> <urn:x:4> .",
                     # lines of blank nodes and literals (thinkingdb.store.ntlines.TERM_LINE) and near misses
                     '_:b1 <urn:x:2> "v w"@en-GB .', '<urn:x:1> <urn:x:2> _:b_2 .', '_:b1 <urn:x:2> _:3 . # c',
                     '<urn:x:1> <urn:x:2> "v"@en-a .', '<urn:x:1> <urn:x:2> "v"@abcdefghi .', '<urn:x:1> <urn:x:2> "x"@ .',
                     '<urn:x:1> <urn:x:2> "a\\"b" .', '<urn:x:1> <urn:x:2> "7"^^<http://www.w3.org/2001/XMLSchema#int> .',
                     '<urn:x:1> <urn:x:2> "tab\there é" .', '<urn:x 1> <urn:x:2> "v" .', '_:b-1 <urn:x:2> "v" .',
                     '<urn:x:1> <urn:x:2> "v" "w" .', '<urn:x:1> <urn:x:2> "v .', '<urn:x:1> _:p "v" .',
                     '_:b1 <urn:x:2> <urn:x:3> .junk']))


@settings(max_examples=60)
@given(st.lists(LINES, min_size=1, max_size=12), st.booleans(), st.booleans())
def test_plain_iri_lines_read_as_pyoxigraph_reads_them(tmp_path_factory, lines, columnar, last_newline):
    import pyoxigraph as ox
    d = tmp_path_factory.mktemp("nt")
    (d / "a.nt").write_text("\n".join(lines) + ("\n" if last_newline else ""), encoding="utf-8")
    vocab = Vocabulary()
    want_rows, want_bad = set(), []
    key = lambda t: "_:00000000." + t.value if type(t) is ox.BlankNode else vocab.symbol(t.value)  # noqa: E731
    for n, line in enumerate(lines, 1):  # the oracle: pyoxigraph on each line alone
        try:
            quads = list(ox.parse(line.encode("utf-8"), ox.RdfFormat.N_TRIPLES))
        except SyntaxError:
            want_bad.append(n)
            continue
        for q in quads:
            want_rows.add((key(q.subject), vocab.relation(q.predicate.value), key(q.object), n))
    if not want_rows and not want_bad:
        want_bad = [1]  # "the file holds no RDF statements"
    with mock.patch("thinkingdb.store.rdf.secrets.token_hex", lambda n: "0" * (2 * n)):   # blank node keys
        batches = list(read_rdf(str(d / "a.nt"), "a.nt", Vocabulary(), ids=Interner() if columnar else None))
    got_rows = {(r[0], r[1], r[2], r[4]) for b in batches for r in b.all_rows()}
    got_bad = [x.diagnostic.line for b in batches for x in b.rejects]
    assert (got_rows, got_bad) == (want_rows, want_bad)


def test_plain_iri_lines_with_special_predicates_stay_declarations(tmp_path):
    """rdf:type seen first as a plain fact must not make a later owl:TransitiveProperty line a fact,
    and an inverse predicate flips its plain lines."""
    rdf, owl = "http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://www.w3.org/2002/07/owl#"
    text = (f"<{EX}a> <{rdf}type> <{EX}C> .\n"
            f"<{EX}p> <{rdf}type> <{owl}TransitiveProperty> .\n"
            f"<{EX}x> <{EX}p> <{EX}y> .\n"
            f"<{EX}y> <{EX}p> <{EX}z> .\n"
            f"<{EX}hasPart> <{owl}inverseOf> <{EX}partOf> .\n"
            f"<{EX}wheel> <{EX}partOf> <{EX}car> .\n" * 2)
    batches = list(read_rdf(_write(tmp_path, "t.nt", text), "t.nt", Vocabulary()))
    rows = sorted(((r[0], r[1], r[2], r[4]) for b in batches for r in b.rows), key=lambda r: r[3])
    decls = {d for b in batches for d, _ in b.declarations}
    assert rows == [(f"{EX}a", f"{rdf}type", f"{EX}C", 1), (f"{EX}x", f"{EX}p", f"{EX}y", 3),
                    (f"{EX}y", f"{EX}p", f"{EX}z", 4), (f"{EX}car", f"{EX}hasPart", f"{EX}wheel", 6),
                    (f"{EX}a", f"{rdf}type", f"{EX}C", 7), (f"{EX}x", f"{EX}p", f"{EX}y", 9),
                    (f"{EX}y", f"{EX}p", f"{EX}z", 10), (f"{EX}car", f"{EX}hasPart", f"{EX}wheel", 12)]
    assert decls == {Declaration(f"{EX}p", "transitive"), Declaration(f"{EX}hasPart", "inverse", f"{EX}partOf")}
    # the same after the reader's first block (1 MiB): rdf:type and owl:TransitiveProperty are known by then
    filler = f"<{EX}b> <{EX}q> <{owl}TransitiveProperty> .\n" + "".join(f"<{EX}f{i}> <{EX}q> <{EX}g> .\n"
                                                                        for i in range(30_000))
    batches = list(read_rdf(_write(tmp_path, "u.nt", text + filler + text), "u.nt", Vocabulary()))
    n = text.count("\n") + filler.count("\n")
    rows = {(r[0], r[1], r[2], r[4] - n) for b in batches for r in b.rows if r[4] > n}
    decls = {d for b in batches for d, _ in b.declarations}
    assert (f"{EX}p", f"{rdf}type", f"{owl}TransitiveProperty", 2) not in rows and len(rows) == 8
    assert Declaration(f"{EX}p", "transitive") in decls


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)
