"""The Spark engine against the in-process closure (the reference): the same derived facts, scores
to the bit, depths and best derivations; the CLI's materialize/export round; errors named.

Needs the ``spark`` extra and a Java runtime; without them the module is skipped with the reason.
Generated programs are run many at a time (each over its own relations) to keep Spark jobs few.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed (pip install 'thinkingdb[spark]')")
pytest.importorskip("pyarrow", reason="the spark extra is not installed (pyarrow missing)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime: Spark needs java on PATH or JAVA_HOME", allow_module_level=True)

from strategies import declarations, facts, rule_sets  # noqa: E402

from thinkingdb.cli import main  # noqa: E402
from thinkingdb.engine.closure import closure  # noqa: E402
from thinkingdb.engine.graph import FactGraph  # noqa: E402
from thinkingdb.engine.rules import compile_declarations  # noqa: E402
from thinkingdb.errors import IngestError, ValidationError  # noqa: E402
from thinkingdb.model import Atom, Declaration, Fact, Limits, Rule, Var  # noqa: E402
from thinkingdb.spark import spark_closure  # noqa: E402

UNBOUNDED = Limits(max_depth=None, max_nodes=None, max_derived=None, timeout_ms=None)


@pytest.fixture(scope="module")
def spark():
    from thinkingdb.spark.materialize import spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                         "spark.sql.adaptive.enabled": "true",
                                         "spark.default.parallelism": "2"})
    yield session


def frame(spark, fs):
    return spark.createDataFrame([(f.subject, f.relation, f.object, f.confidence) for f in fs],
                                 "s string, r string, o string, c double")


def spark_rows(run) -> dict:
    return {(x.s, x.r, x.o): (x.score, x.depth, x.rule, tuple((p.s, p.r, p.o) for p in x.prem))
            for x in run.derived().collect()}


def reference_rows(fs, rules, max_depth=None) -> tuple[dict, str | None]:
    lim = UNBOUNDED if max_depth is None else Limits(max_depth=max_depth, max_nodes=None, max_derived=None,
                                                     timeout_ms=None)
    res = closure(FactGraph(fs), rules, limits=lim)
    rows = {}
    for t, proof in res.derived.items():
        rows[(t.subject, t.relation, t.object)] = (
            proof.score, proof.depth, proof.rule,
            tuple((p.conclusion.subject, p.conclusion.relation, p.conclusion.object) for p in proof.premises))
    return rows, res.truncated


def test_hand_computed_chain(spark):
    """a p b @0.9, b p c @0.8, c p d @0.5 under `p transitive`: a p c = 0.9 × 0.8 and b p d = 0.8 × 0.5
    at depth 1; a p d at depth 2 by the better of its two splits, (a p b, b p d) or (a p c, c p d)."""
    fs = [Fact("a", "p", "b", 0.9), Fact("b", "p", "c", 0.8), Fact("c", "p", "d", 0.5)]
    rules = compile_declarations([Declaration("p", "transitive")])
    got = spark_rows(spark_closure(spark, frame(spark, fs), rules))
    ac, bd = 1.0 * 0.9 * 0.8, 1.0 * 0.8 * 0.5
    ad = max(1.0 * 0.9 * bd, 1.0 * ac * 0.5)   # weight first, then the premises in rule order
    assert {k: (v[0], v[1]) for k, v in got.items()} == {
        ("a", "p", "c"): (ac, 1), ("b", "p", "d"): (bd, 1), ("a", "p", "d"): (ad, 2)}
    assert got == reference_rows(fs, rules)[0]


def test_asserted_fact_is_never_replaced_and_improvement_propagates(spark):
    # a q c is asserted at 0.1: a derivation at 0.9 must not replace it
    fs = [Fact("a", "p", "b", 0.9), Fact("b", "p", "c"), Fact("a", "q", "c", 0.1), Fact("c", "p", "d", 0.5)]
    x, y, z = Var("x"), Var("y"), Var("z")
    rules = (Rule("two", (Atom(x, "p", y), Atom(y, "p", z)), Atom(x, "q", z)),
             Rule("up", (Atom(x, "q", y),), Atom(x, "t", y), 0.5))
    got = spark_rows(spark_closure(spark, frame(spark, fs), rules))
    assert ("a", "q", "c") not in got            # asserted: never a derived row
    assert got[("a", "t", "c")][:2] == (0.05, 1)  # from the asserted 0.1 × 0.5
    assert got == reference_rows(fs, rules)[0]


def namespaced(i: int, fs, rules, decls):
    """Program ``i`` over its own relations (``g{i}_r``), so many programs share one Spark run."""
    ren = lambda r: f"g{i}_{r}"  # noqa: E731
    atom = lambda a: Atom(a.subject, ren(a.relation), a.object)  # noqa: E731
    fs2 = [Fact(f.subject, ren(f.relation), f.object, f.confidence) for f in fs]
    rs2 = tuple(Rule(f"g{i}_{r.name}", tuple(atom(p) for p in r.premises), atom(r.head), r.weight) for r in rules)
    ds2 = [Declaration(ren(d.relation), d.kind, None if d.other is None else ren(d.other)) for d in decls]
    return fs2, rs2 + compile_declarations(ds2)


programs = st.tuples(facts(max_size=10), rule_sets(max_rules=3), declarations())


@settings(max_examples=3)
@given(st.lists(programs, min_size=6, max_size=6), st.sampled_from([None, None, 1, 2]))
def test_generated_programs_equal_the_reference(spark, progs, max_depth):
    all_facts, all_rules = [], ()
    for i, (fs, rules, decls) in enumerate(progs):
        f2, r2 = namespaced(i, fs, rules, decls)
        all_facts += f2
        all_rules += r2
    run = spark_closure(spark, frame(spark, all_facts), all_rules, max_depth=max_depth)
    want, truncated = reference_rows(all_facts, all_rules, max_depth)
    assert spark_rows(run) == want
    assert run.truncated == truncated


def test_rounds_run_the_shared_plan(spark):
    """Round 1 reads every fact; round 2 reads only the deltas of the relations that changed, one
    pipeline per premise on a changed relation (the plan of thinkingdb.engine.plan, which the columnar
    engine runs too)."""
    fs = [Fact("a", "p", "b"), Fact("b", "p", "c"), Fact("c", "p", "d"), Fact("x", "q", "y")]
    x, y, z = Var("x"), Var("y"), Var("z")
    rules = (Rule("tc", (Atom(x, "p", y), Atom(y, "p", z)), Atom(x, "p", z)),
             Rule("qq", (Atom(x, "q", y),), Atom(y, "q", x)))
    run = spark_closure(spark, frame(spark, fs), rules)
    assert [r.new for r in run.rounds] == [3, 1]        # a-c, b-d, y-x; then a-d
    assert "tc [all]" in run.rounds[0].plan and "qq [all]" in run.rounds[0].plan
    second = run.rounds[1].plan.splitlines()[1:]
    assert sorted(line.split(":")[0].strip() for line in second) == ["qq [delta q]", "tc [delta p]", "tc [delta p]"]


def test_negation_is_refused_by_name(spark):
    x, y = Var("x"), Var("y")
    rule = Rule("lacks", (Atom(x, "requires", y),), Atom(x, "lacks", y), negated=(Atom(x, "has", y),))
    with pytest.raises(ValidationError, match="lacks.*negated premises are not supported by the Spark engine"):
        spark_closure(spark, frame(spark, [Fact("a", "requires", "b")]), (rule,))


# -- the command line: export a store, materialize on both engines, compare ----------------------------
def run_cli(*argv) -> int:
    return main(list(argv))


def read_parquet_dir(path) -> dict:
    import pyarrow.parquet as pq

    rows = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".parquet"):
            t = pq.read_table(os.path.join(path, name)).to_pylist()
            for x in t:
                rows[(x["s"], x["r"], x["o"])] = (x["score"], x["depth"], x["rule"],
                                                  tuple((p["s"], p["r"], p["o"]) for p in x["prem"]))
    return rows


def test_cli_export_then_materialize_on_both_engines(tmp_path, spark, capsys):
    src = tmp_path / "kb.tdb"
    src.write_text("Harbor depends_on Kestrel-OS. Kestrel-OS depends_on libc @0.9. libc depends_on kernel @0.5.\n"
                   "a part_of b. b part_of c.\n", encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    assert run_cli("--db", db, "-q", "ingest", str(src)) == 0
    facts_dir = tmp_path / "facts"
    assert run_cli("--db", db, "export", "--format", "parquet", "-o", str(facts_dir)) == 0
    rules = tmp_path / "rules.tdb"
    rules.write_text("relation depends_on transitive.\nrelation part_of transitive.\n", encoding="utf-8")
    outs = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"closure-{engine}"
        code = run_cli("--json", "materialize", "--engine", engine, "--in", str(facts_dir), "--out", str(out),
                       "--rules", str(rules), "--no-default-rules")
        assert code == 0
        report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert report["derived"] == 4 and report["engine"] == engine
        outs[engine] = read_parquet_dir(out)
    assert outs["spark"] == outs["local"]
    # hand-computed: harbor → kestrel_os → libc → kernel
    assert outs["spark"][("harbor", "depends_on", "kernel")][:2] == (0.9 * 0.5, 2)
    assert set(outs["spark"]) == {("harbor", "depends_on", "libc"), ("kestrel_os", "depends_on", "kernel"),
                                  ("harbor", "depends_on", "kernel"), ("a", "part_of", "c")}
    # an existing output folder is refused, nothing is overwritten
    assert run_cli("materialize", "--engine", "local", "--in", str(facts_dir), "--out", str(tmp_path / "closure-local"),
                   "--no-default-rules") == 2
    assert "exists" in capsys.readouterr().err


def test_tsv_input_is_normalized_and_bad_confidence_named(tmp_path, spark):
    from thinkingdb.spark.io import read_facts
    from thinkingdb.spark.materialize import load_rules

    d = tmp_path / "in"
    d.mkdir()
    (d / "part1.tsv").write_text("# comment\nSecure Execution\thasPart\tSandbox\t0.5\nx\tdepends on\ty\n",
                                 encoding="utf-8")
    rules, vocab = load_rules([], default_rules=False)
    got = sorted(tuple(r) for r in read_facts(spark, str(d), vocab).collect())
    assert got == [("secure_execution", "has_part", "sandbox", 0.5), ("x", "depends_on", "y", 1.0)]
    (d / "part2.tsv").write_text("a\tr\tb\t1.5\n", encoding="utf-8")
    with pytest.raises(IngestError, match="part2.tsv.*confidence"):
        read_facts(spark, str(d), vocab)


def test_depth_bound_is_reported(tmp_path, spark):
    fs = [Fact(f"n{i}", "next", f"n{i + 1}") for i in range(6)]
    rules = compile_declarations([Declaration("next", "transitive")])
    run = spark_closure(spark, frame(spark, fs), rules, max_depth=1)
    assert run.truncated == "depth"
    assert len(spark_rows(run)) == 5       # only the 2-step pairs n_i next n_{i+2}
    full = spark_closure(spark, frame(spark, fs), rules)
    assert full.truncated is None and len(spark_rows(full)) == 15   # 7 nodes in a chain: 21 pairs − 6 asserted
