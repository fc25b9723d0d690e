"""The default rule library's precompiled form (``thinkingdb.engine.rulelib``) against the language
compiler (the oracle): the shipped module is current and gives the same rules and declarations as
compiling ``data/default_rules.tdb``; an edited library is compiled, never answered from the stale form;
the writer writes exactly the shipped module."""

from __future__ import annotations

from thinkingdb.engine import rulelib, rules
from thinkingdb.language import compile_source


def compiled(text: str):
    program = compile_source(text, "<default rules>")
    return tuple(r for r, _ in program.rules), tuple(d for d, _ in program.declarations)


def test_the_shipped_form_is_the_compiled_library():
    # fails when data/default_rules.tdb changed without `python -m thinkingdb.engine.rules`
    got = rules.precompiled_default_rules()
    assert got is not None, "engine/rulelib.py is stale: run python -m thinkingdb.engine.rules"
    assert got == compiled(rules.default_rules_text())
    assert [r.name for r in got[0]] == ["capability", "relevance", "provider", "dependency_support",
                                        "capability_through_dependency", "causal_chain"]
    assert rules.default_rule_set() == got


def test_an_edited_library_is_compiled_not_read_from_the_stale_form(monkeypatch):
    edited = rules.default_rules_text().replace("@0.95", "@0.5") + "relation causes transitive.\n"
    monkeypatch.setattr(rules, "default_rules_text", lambda: edited)
    assert rules.precompiled_default_rules() is None
    got = rules.default_rule_set()
    assert got == compiled(edited) != (rulelib.RULES, rulelib.DECLARATIONS)
    assert got[0][0].weight == 0.5 and len(got[1]) == 2
    assert [r.name for r in rules.default_rules()][-1] == "depends_on_transitive"


def test_the_writer_writes_the_shipped_module(tmp_path):
    path = tmp_path / "rulelib.py"
    text = rules.write_rulelib(str(path))
    assert path.read_text(encoding="utf-8") == text == open(rulelib.__file__, encoding="utf-8").read()
