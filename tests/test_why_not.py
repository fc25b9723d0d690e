"""``why not``: which premise failed, which ``not`` premise blocked, and the proof when it holds."""

from __future__ import annotations

from thinkingdb.cli.main import main
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.whynot import why_not
from thinkingdb.language import compile_source
from thinkingdb.model import Limits, Triple

TEXT = """harbor requires sandboxing. harbor requires logging. harbor uses ploinky. ploinky provides sandboxing.
rule cap: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
rule lacks: ?x requires ?c, not ?x has_capability ?c => ?x lacks ?c.
"""


def explain(fact: str, limits: Limits = Limits()):
    p = compile_source(TEXT)
    return why_not(Triple(*fact.split()), FactGraph([f for f, _ in p.facts]), [r for r, _ in p.rules],
                   limits=limits)


def test_blocked_by_a_not_premise_with_its_proof():
    ans = explain("harbor lacks sandboxing")
    assert not ans.holds
    (f,) = ans.failures
    assert (f.rule, f.kind, f.premise) == ("lacks", "blocked", "harbor has_capability sandboxing")
    assert f.blocker.rule == "cap" and [p.conclusion.relation for p in f.blocker.premises] == ["uses", "provides"]


def test_missing_premise_is_named_with_the_bindings_so_far():
    ans = explain("harbor has_capability logging")
    (f,) = ans.failures
    # harbor uses ploinky matched; nothing says ploinky provides logging
    assert (f.kind, f.premise) == ("missing", "ploinky provides logging")
    assert dict(f.bindings) == {"x": "harbor", "y": "ploinky", "z": "logging"}


def test_a_fact_that_holds_gets_its_proof():
    ans = explain("harbor lacks logging")
    assert ans.holds and ans.proof.premises[1].kind == "absent"
    assert ans.to_text().startswith("harbor lacks logging holds:")


def test_no_rule_and_not_asserted():
    ans = explain("harbor zz logging")
    assert ans.failures == () and "no rule concludes zz" in ans.to_text()


def test_truncated_closure_is_said():
    ans = explain("harbor lacks sandboxing", Limits(max_derived=0))
    assert ans.truncated == "derived" and "cut short" in ans.to_text()


def test_cli_why_not(tmp_path, capsys):
    src = tmp_path / "k.tdb"
    src.write_text(TEXT)
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "--quiet", "ingest", str(src)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "why", "not harbor lacks sandboxing"]) == 0
    out = capsys.readouterr().out
    assert "blocked by not harbor has_capability sandboxing" in out
