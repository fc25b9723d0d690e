"""lint: every finding kind on a seeded messy file, and a clean file."""

import json

import pytest

from thinkingdb.store.lint import lint_files, lint_text

MESSY = """\
relation depends_on transitive.
alias requires => depends_on.
nginx depends_on OpenSSL.
nginx requires openssl.
nginx depends_on libc @0.5.
nginx depends_on libc @0.9.
"Node.js" uses libuv.
nodejs uses v8.
kubernetes depends_on etcd.
kubernets depends_on docker.
rule orphan: ?x depends_on ?y => ?x needs ?y.
rule chain: ?x uses ?y => ?x calls ?y.
rule consumer: ?x calls ?y => ?x touches ?y.
? ?x touches ?y.
broken line without period
GO:0000001 is_a GO:0000002.
"""


@pytest.fixture
def messy(tmp_path):
    p = tmp_path / "messy.tdb"
    p.write_text(MESSY, encoding="utf-8")
    return str(p)


def test_seeded_messy_file(messy, tmp_path):
    found = {(f.line, f.code) for f in lint_files([messy])}
    # the syntax error hides the rest of the compile; fix it and lint again for the other findings
    assert found == {(15, "syntax")}
    clean = tmp_path / "messy2.tdb"
    clean.write_text(MESSY.replace("broken line without period\n", ""), encoding="utf-8")
    findings = lint_files([str(clean)])
    got = sorted((f.line, f.code) for f in findings)
    assert got == sorted([
        (4, "duplicate-fact"),              # nginx requires openssl == nginx depends_on OpenSSL
        (4, "similar-symbols"),             # OpenSSL / openssl
        (6, "conflicting-confidence"),      # libc @0.5 and @0.9
        (7, "undeclared-relation"),         # uses
        (8, "similar-symbols"),             # node.js / nodejs: punctuation only
        (10, "similar-symbols"),            # kubernetes / kubernets: one edit
        (11, "unused-rule"),                # needs: nobody uses it
        (15, "undeclared-relation"),        # is_a
    ])
    by_code = {f.code: f for f in findings}
    assert "0.5, 0.9" in by_code["conflicting-confidence"].message
    # GO:0000001 / GO:0000002 differ by a digit only: not flagged
    assert not any("go:0000001" in f.message for f in findings)


def test_clean_file_has_no_findings(tmp_path):
    p = tmp_path / "ok.tdb"
    p.write_text("relation uses transitive.\na uses b.\nb uses c.\n", encoding="utf-8")
    assert lint_files([str(p)]) == []


def test_tsv_and_jsonl_findings(tmp_path):
    t = tmp_path / "e.tsv"
    t.write_text("a\tuses\tb\nA\tuses\tb\t0.5\nonly\ttwo\n", encoding="utf-8")
    j = tmp_path / "u.jsonl"
    j.write_text(json.dumps({"id": "u1", "triples": [["x", "uses", "y"]]}) + "\n{bad json\n", encoding="utf-8")
    decl = tmp_path / "d.tdb"
    decl.write_text("relation uses transitive.\n", encoding="utf-8")
    got = sorted((f.source.rsplit("/", 1)[-1], f.line, f.code) for f in lint_files([str(t), str(j), str(decl)]))
    assert got == [("e.tsv", 2, "conflicting-confidence"), ("e.tsv", 2, "similar-symbols"),
                   ("e.tsv", 3, "syntax"), ("u.jsonl", 2, "syntax")]


def test_every_error_of_a_file_is_listed():
    found = lint_text("a b c.\nb c.\nx y z.\nd e f @2.\n")
    assert [(f.line, f.code) for f in found] == [(2, "syntax"), (4, "syntax")]


def test_missing_and_unsupported_files(tmp_path):
    (tmp_path / "x.xlsx").write_text("a,b\n")
    found = lint_files([str(tmp_path / "nope.tdb"), str(tmp_path / "x.xlsx")])
    assert [f.code for f in found] == ["syntax", "syntax"]
    assert "unsupported file type" in found[1].message or "unsupported file type" in found[0].message
