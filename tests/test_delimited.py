"""CSV and TSV as people write them, and standard input (issue 17): header rows detected or declared,
columns named in any order, stdlib quoting, any delimiter; ``-`` reads stdin."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb import IngestError, open_kb, symbol_key
from thinkingdb.cli import main


def ingest(tmp_path, name, text, **kw):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    kb = open_kb(str(tmp_path / "kb.sqlite"))
    report = kb.ingest([str(path)], **kw)
    rows = sorted(kb.store.fact_rows())
    labels = kb.labels()
    kb.close()
    return rows, labels, report


def test_csv_quoting_and_a_detected_header(tmp_path):
    rows, labels, report = ingest(tmp_path, "a.csv", 'subject,relation,object,confidence\n'
                                  '"Smith, John",worksAt,"ACME ""Labs""",0.5\n'
                                  'nginx,dependsOn,openssl,\n')
    assert rows == [("nginx", "depends_on", "openssl", 1.0), ("smith,_john", "works_at", 'acme_"labs', 0.5)]
    assert labels["smith,_john"] == "Smith, John" and labels['acme_"labs'] == 'ACME "Labs"'
    assert dict(report.notes) == {"header rows": 1}


def test_a_tsv_header_row_is_not_a_fact(tmp_path):
    rows, _, report = ingest(tmp_path, "a.tsv", "subject\trelation\tobject\nnginx\tdepends_on\topenssl\n")
    assert rows == [("nginx", "depends_on", "openssl", 1.0)]
    assert dict(report.notes) == {"header rows": 1}


def test_columns_in_any_order_and_ignored_columns(tmp_path):
    rows, _, _ = ingest(tmp_path, "a.csv", "openssl,ignored,nginx,dependsOn,0.25\n", columns="o,-,s,r,c")
    assert rows == [("nginx", "depends_on", "openssl", 0.25)]


@pytest.mark.parametrize("delimiter", [";", "|", "\t", " "])
def test_any_delimiter(tmp_path, delimiter):
    rows, _, _ = ingest(tmp_path, "a.csv", delimiter.join(["a", "r", "b", "0.5"]) + "\n", delimiter=delimiter)
    assert rows == [("a", "r", "b", 0.5)]


def test_header_declared_either_way(tmp_path):
    text = "s,r,o\na,r,b\n"
    assert ingest(tmp_path, "a.csv", text)[0] == [("a", "r", "b", 1.0)]
    assert ingest(tmp_path, "b.csv", text, header=False)[0] == [("a", "r", "b", 1.0), ("s", "r", "o", 1.0)]
    assert ingest(tmp_path, "c.csv", "x,r,y\na,r,b\n", header=True)[0] == [("a", "r", "b", 1.0), ("s", "r", "o", 1.0)]


@pytest.mark.parametrize("text,line,column,reason", [
    ("a,r,b\nc,r,d,2\n", 2, 7, "confidence must be in [0, 1]"),
    ("a,r,b\nc,r,d,high\n", 2, 7, "confidence must be a number"),
    ('a,r,b\n"multi\nline",r,x\nc,r\n', 4, 1, "expected 3 or 4 fields"),
    ('a,r,b\n"",r,x\n', 2, 1, "empty symbol"),
])
def test_bad_rows_name_line_and_column_and_nothing_is_written(tmp_path, text, line, column, reason):
    with pytest.raises(IngestError) as err:
        ingest(tmp_path, "bad.csv", text)
    d = err.value.diagnostics[0]
    assert (d.line, d.column) == (line, column) and reason in d.reason
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        assert kb.store.fact_rows() == []


def test_a_quoted_field_across_lines_keeps_the_line_of_its_row(tmp_path):
    (tmp_path / "a.csv").write_text('"two\nlines",r,b\nc,r,d\n', encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "a.csv")])
        from thinkingdb.model import Triple
        assert kb.store.provenance(Triple("c", "r", "d"))[0]["line"] == 3


@pytest.mark.parametrize("spec,message", [("s,r", "no object"), ("s,r,o,x", "unknown column"),
                                          ("s,s,r,o", "named twice")])
def test_bad_column_specs(tmp_path, spec, message):
    from thinkingdb import ThinkingDBError
    with pytest.raises(ThinkingDBError, match=message):
        ingest(tmp_path, "a.csv", "a,r,b\n", columns=spec)


# a field the writer quotes as needed and that names a symbol: its key is not empty (NFKC folds
# U+00A0 to a space, so '\xa0' alone names nothing and is refused, as it should be)
def _names_a_symbol(text: str) -> bool:
    try:
        symbol_key(text)
    except ValueError:   # ValidationError: the text folds to an empty key
        return False
    return not text.lstrip().startswith("#")


FIELD = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8).filter(_names_a_symbol)


@settings(max_examples=30)
@given(st.lists(st.tuples(FIELD, st.sampled_from(["r", "dependsOn", "part of"]), FIELD), min_size=1, max_size=8),
       st.sampled_from([",", ";", "\t", "|"]))
def test_what_csv_writer_writes_is_read_back(tmp_path_factory, triples, delimiter):
    d = tmp_path_factory.mktemp("csv")
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter).writerows(triples)
    (d / "a.csv").write_text(buf.getvalue(), encoding="utf-8", newline="")
    with open_kb(str(d / "kb.sqlite")) as kb:
        kb.ingest([str(d / "a.csv")], delimiter=delimiter, header=False)
        got = {(s, r, o) for s, r, o, _ in kb.store.fact_rows()}
    from thinkingdb import relation_key
    assert got == {(symbol_key(s), relation_key(r), symbol_key(o)) for s, r, o in triples}


# -- standard input -----------------------------------------------------------------------------------------
class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_stdin_with_a_format(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"nginx\tdependsOn\topenssl\n"))
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "--json", "ingest", "-", "--format", "tsv"]) == 0
    assert json.loads(capsys.readouterr().out)["sources"] == ["<stdin>"]
    with open_kb(db) as kb:
        assert kb.store.fact_rows() == [("nginx", "depends_on", "openssl", 1.0)]
        assert kb.store.provenance(next(kb.store.facts()).triple)[0]["source"] == "<stdin>"


def test_stdin_rdf_and_csv(tmp_path, monkeypatch):
    pytest.importorskip("pyoxigraph")
    db = str(tmp_path / "kb.sqlite")
    monkeypatch.setattr(sys, "stdin", _Stdin(b"<http://e.org/a> <http://e.org/p> <http://e.org/b> .\n"))
    assert main(["--db", db, "-q", "ingest", "-", "--format", "nt"]) == 0
    monkeypatch.setattr(sys, "stdin", _Stdin(b"x;r;y\n"))
    assert main(["--db", db, "-q", "ingest", "-", "--format", "csv", "--delimiter", "semicolon"]) == 0
    with open_kb(db) as kb:  # the second stdin ingest replaced the first: one source, "<stdin>"
        assert kb.store.fact_rows() == [("x", "r", "y", 1.0)]


@pytest.mark.parametrize("data,rows", [
    (b"# deps\nNginx dependsOn OpenSSL.\n", [("nginx", "depends_on", "openssl", 1.0)]),  # .tdb
    (b"nginx\tdependsOn\topenssl\t0.5\n", [("nginx", "depends_on", "openssl", 0.5)]),  # a tab: TSV
])
def test_stdin_without_a_format_is_told_by_its_first_line(tmp_path, monkeypatch, data, rows):
    monkeypatch.setattr(sys, "stdin", _Stdin(data))
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", "-"]) == 0
    with open_kb(db) as kb:
        assert kb.store.fact_rows() == rows


def test_stdin_read_twice_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"a r b.\n"))
    assert main(["--db", str(tmp_path / "kb.sqlite"), "ingest", "-", "-"]) == 2
    assert "only once" in capsys.readouterr().err
