"""normalize: canonical sorted form of .tdb and TSV files; idempotent and meaning-preserving."""

import pytest
from hypothesis import given, strategies as st

from thinkingdb.store.canonical import normalize_file, normalize_tdb, normalize_tsv
from thinkingdb.errors import IngestError
from thinkingdb.language import compile_source

SYMBOLS = ["nginx", "OpenSSL", "open-ssl", "Open SSL", "libc", "Secure Execution", "secure_execution",
           "GO:0000001", "Ploinky", "x.y", "café", "ÅNGSTRÖM"]
RELATIONS = ["depends_on", "dependsOn", "depends on", "DEPENDS_ON", "uses", "part_of", "hasPart", "requires"]


def _name(s):
    return s if s.replace("_", "").replace(":", "").replace(".", "").isalnum() and " " not in s else f'"{s}"'


fact = st.tuples(st.sampled_from(SYMBOLS), st.sampled_from(RELATIONS), st.sampled_from(SYMBOLS),
                 st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0])))
header = st.lists(st.sampled_from([
    "relation part_of inverse has_part.", "alias requires => depends_on.", "relation depends_on transitive.",
    "rule r1 @0.5: ?x uses ?y, ?y depends_on ?z => ?x depends_on ?z.", "rule r0: ?x part_of ?y => ?y uses ?x.",
    "? nginx depends_on+ ?x.",
]), max_size=4)


def _doc(facts, head):
    lines = list(head)
    for s, r, o, c in facts:
        lines.append(f"{_name(s)} {_name(r)} {_name(o)}" + ("" if c is None else f" @{c}") + ".")
    return "\n".join(lines) + "\n"


def _meaning(text):
    p = compile_source(text)
    facts = {}
    for f, _ in p.facts:
        facts[f.triple] = max(facts.get(f.triple, -1), f.confidence)
    return facts, {r.name: r for r, _ in p.rules}, set(d for d, _ in p.declarations)


@given(st.lists(fact, min_size=1, max_size=25), header)
def test_tdb_normalize_is_idempotent_and_keeps_meaning(facts, head):
    text = _doc(facts, head)
    once = normalize_tdb(text)
    assert normalize_tdb(once) == once
    assert _meaning(once) == _meaning(text)


@given(st.lists(fact, min_size=1, max_size=25))
def test_tsv_normalize_is_idempotent(tmp_path_factory, facts):
    d = tmp_path_factory.mktemp("tsv")
    src = d / "a.tsv"
    src.write_text("# comment\n" + "".join(f"{s}\t{r}\t{o}" + ("" if c is None else f"\t{c}") + "\n"
                                           for s, r, o, c in facts), encoding="utf-8")
    once = normalize_tsv(str(src))
    (d / "b.tsv").write_text(once, encoding="utf-8")
    assert normalize_tsv(str(d / "b.tsv")) == once
    lines = once.splitlines()
    assert lines == sorted(lines, key=lambda ln: ln.split("\t")[:3]) and len(set(lines)) == len(lines)


def test_tdb_example_by_hand():
    text = ('# notes\nrelation part_of inverse has_part.\ncar hasPart Wheel.\n"Open SSL" dependsOn libc @0.5.\n'
            'open-ssl depends_on LIBC @0.7.\nrule b: ?x uses ?y => ?x depends_on ?y.\n'
            'rule a @0.5: ?x part_of ?y => ?y uses ?x.\n? ?x depends_on libc.\n')
    assert normalize_tdb(text) == (
        "relation part_of inverse has_part.\n"
        "rule a @0.5: ?x part_of ?y => ?y uses ?x.\n"
        "rule b: ?x uses ?y => ?x depends_on ?y.\n"
        "open_ssl depends_on libc @0.7.\n"
        "wheel part_of car.\n"
        "? ?x depends_on libc.\n")


def test_tsv_example_by_hand(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("B\tdependsOn\tA\t0.5\n# c\n\nb\tdepends_on\ta\t0.25\nA\tuses\tZ Z\n", encoding="utf-8")
    assert normalize_tsv(str(p)) == "a\tuses\tz_z\nb\tdepends_on\ta\t0.5\n"


def test_normalize_file_in_place_and_to_output(tmp_path):
    p = tmp_path / "x.tdb"
    p.write_text("B uses A. a uses c.\n", encoding="utf-8")
    out = tmp_path / "y.tdb"
    assert normalize_file(str(p), str(out)) == "a uses c.\nb uses a.\n"
    assert p.read_text() == "B uses A. a uses c.\n" and out.read_text() == "a uses c.\nb uses a.\n"
    normalize_file(str(p))
    assert p.read_text() == "a uses c.\nb uses a.\n"


@pytest.mark.parametrize("name,content,where", [
    ("bad.tdb", "a b c.\nbroken\n", (2,)),
    ("bad.tsv", "a\tb\tc\nonly\ttwo\n", (2,)),
    ("bad.md", "# x\n", None),
])
def test_normalize_refuses_bad_input(tmp_path, name, content, where):
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    with pytest.raises(IngestError) as err:
        normalize_file(str(p))
    if where:
        assert err.value.first.line == where[0]
    assert p.read_text() == content
