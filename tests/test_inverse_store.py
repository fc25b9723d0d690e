"""Inverse declarations in a store (``relation c inverse b``: facts of b are stored as c, reversed):
declarations and rules over either name hold as they do in the language's meaning, whenever they were
stored, and an inverse declared after facts of its name is refused at the declaration.

The oracle is a naive fixpoint written here over the program as stated (no orientation): the inverse is
two rules, ``?x c ?y => ?y b ?x`` and back.
"""

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.api import open_kb
from thinkingdb.errors import IngestError


def _kb(tmp_path, *files):
    kb = open_kb(str(tmp_path / "kb.sqlite"), default_rules=False)
    for i, text in enumerate(files):
        (tmp_path / f"f{i}.tdb").write_text(text)
        kb.ingest([str(tmp_path / f"f{i}.tdb")])
    return kb


def _answers(kb, q):
    return sorted(tuple(a.bindings.values()) for a in kb.query(q).answers)


@pytest.mark.parametrize("text, question, want", [
    # `n2 c n1` means n1 b n2, so n1 h n2
    ("n2 c n1.\nrelation c inverse b.\nrelation b subrelation_of h.\n", "? n1 h ?x.", [("n2",)]),
    # n2 b n1, n3 b n2, b transitive: n3 b n1 too
    ("n1 c n2.\nn2 c n3.\nrelation c inverse b.\nrelation b transitive.\n", "? n3 b ?x.", [("n1",), ("n2",)]),
    ("n1 c n2.\nrelation c inverse b.\nrelation h subrelation_of b.\nn5 h n6.\n", "? n5 b ?x.", [("n6",)]),
    ("n1 c n2.\nrelation c inverse b.\nrelation h subrelation_of b.\nn5 h n6.\n", "? ?x c n5.", [("n6",)]),
    ("n1 b n2.\nrelation c inverse b.\nrelation b symmetric.\n", "? n2 c ?x.", [("n1",)]),
    ("n1 b n2.\nrule r: ?x b ?y => ?x g ?y.\nrelation c inverse b.\n", "? ?x g ?y.", [("n1", "n2")]),
])
def test_declarations_and_rules_over_an_inverse_name(tmp_path, text, question, want):
    kb = _kb(tmp_path, text)
    assert _answers(kb, question) == want
    kb.close()


def test_rules_and_declarations_stored_before_the_inverse_read_it(tmp_path):
    kb = _kb(tmp_path, "rule r0: ?x b ?y => ?x h ?y.\nrelation b transitive.\n",
             "relation c inverse b.\nn2 c n1.\nn3 c n2.\n")
    assert _answers(kb, "? ?x h ?y.") == [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    kb.close()


def test_an_inverse_declared_after_facts_of_its_name_is_refused_and_changes_nothing(tmp_path):
    kb = _kb(tmp_path, "rule r0: ?x b ?y => ?x h ?y.\nn7 b n8.\n")
    (tmp_path / "f1.tdb").write_text("n2 c n1.\n\nrelation c inverse b.\n")
    with pytest.raises(IngestError) as exc:
        kb.ingest([str(tmp_path / "f1.tdb")])
    (d,) = exc.value.diagnostics
    assert (d.source.endswith("f1.tdb"), d.line, d.column, d.code) == (True, 3, 1, "inverse_after_facts")
    assert "n7 b n8" in d.reason and "f0.tdb:2" in d.reason
    assert _answers(kb, "? n7 b ?y.") == [("n8",)]
    assert kb.why("n7 b n8") is not None
    assert _answers(kb, "? ?x h ?y.") == [("n7", "n8")]
    assert kb.stats()["facts"] == 1
    kb.close()


def test_an_inverse_after_facts_of_its_name_in_one_ingest_is_refused(tmp_path):
    (tmp_path / "a.tdb").write_text("n7 b n8.\n")
    (tmp_path / "b.tdb").write_text("relation c inverse b.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        with pytest.raises(IngestError, match="inverse b comes after facts of b"):
            kb.ingest([str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")])
        kb.ingest([str(tmp_path / "b.tdb"), str(tmp_path / "a.tdb")])   # declared first: stored as n8 c n7
        assert _answers(kb, "? n7 b ?y.") == [("n8",)] and _answers(kb, "? ?x c n7.") == [("n8",)]


# -- store against a naive fixpoint on generated programs ---------------------------------------------

RELS = ["a", "b", "c", "h"]
SYMS = ["n1", "n2", "n3", "n4"]
_X, _Y, _Z = "?x", "?y", "?z"
TEMPLATES = [  # (premises, head) over relation slots 0, 1, 2
    (((_X, 0, _Y),), (_X, 2, _Y)),
    (((_X, 0, _Y),), (_Y, 2, _X)),
    (((_X, 0, _Y), (_Y, 1, _Z)), (_X, 2, _Z)),
    (((_X, 0, _Y), (_Z, 1, _Y)), (_X, 2, _Z)),
]


def _naive(facts, decls, rules):
    """Every fact that follows, by rounds of every rule until nothing is new."""
    rs = []
    for rel, kind, other in decls:
        if kind == "transitive":
            rs.append((((_X, rel, _Y), (_Y, rel, _Z)), (_X, rel, _Z)))
        elif kind == "symmetric":
            rs.append((((_X, rel, _Y),), (_Y, rel, _X)))
        elif kind == "subrelation_of":
            rs.append((((_X, rel, _Y),), (_X, other, _Y)))
        else:
            rs += [(((_X, rel, _Y),), (_Y, other, _X)), (((_X, other, _Y),), (_Y, rel, _X))]
    rs += rules
    known = set(facts)

    def match(prems, env):
        if not prems:
            yield env
            return
        (s, r, o), rest = prems[0], prems[1:]
        for fs, fr, fo in known:
            if fr != r:
                continue
            e = dict(env)
            if all(e.setdefault(t, v) == v for t, v in ((s, fs), (o, fo))):
                yield from match(rest, e)

    while True:
        new = {(env[h[0]], h[1], env[h[2]]) for prems, h in rs for env in match(prems, {})} - known
        if not new:
            return known
        known |= new


@st.composite
def programs(draw):
    facts = draw(st.lists(st.tuples(st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS)),
                          min_size=1, max_size=6))
    inv = draw(st.permutations(RELS))[:2]
    decls = [(inv[0], "inverse", inv[1])]
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["transitive", "symmetric", "subrelation_of"]))
        r = draw(st.sampled_from(RELS))
        other = draw(st.sampled_from([x for x in RELS if x != r])) if kind == "subrelation_of" else ""
        decls.append((r, kind, other))
    rules = []
    for _ in range(draw(st.integers(0, 2))):
        prems, head = draw(st.sampled_from(TEMPLATES))
        slots = [draw(st.sampled_from(RELS)) for _ in range(3)]
        rules.append((tuple((s, slots[i], o) for s, i, o in prems), (head[0], slots[head[1]], head[2])))
    statements = ([f"{s} {r} {o}." for s, r, o in facts]
                  + [f"relation {r} {k}{' ' + o if o else ''}." for r, k, o in decls]
                  + [f"rule r{i}: {', '.join(' '.join(p) for p in prems)} => {' '.join(h)}."
                     for i, (prems, h) in enumerate(rules)])
    where = draw(st.lists(st.integers(0, 1), min_size=len(statements), max_size=len(statements)))
    return facts, decls, rules, statements, where


@settings(max_examples=40, deadline=None)
@given(programs())
def test_store_answers_as_the_naive_fixpoint_with_inverses(tmp_path_factory, program):
    facts, decls, rules, statements, where = program
    tmp = tmp_path_factory.mktemp("inv")
    files = []
    for f in (0, 1):
        (tmp / f"f{f}.tdb").write_text("".join(s + "\n" for s, w in zip(statements, where) if w == f) or "# none\n")
        if f in where:
            files.append(str(tmp / f"f{f}.tdb"))
    canon, name = decls[0][0], decls[0][2]
    declared_in = where[len(facts)]
    refused = declared_in == 1 and any(r == name and w == 0 for (_, r, _), w in zip(facts, where))
    with open_kb(str(tmp / "kb.sqlite"), default_rules=False) as kb:
        if refused:
            with pytest.raises(IngestError, match=f"inverse {name} comes after facts of {name}"):
                kb.ingest(files)
            return
        kb.ingest(files)
        want = _naive(facts, decls, rules)
        for r in RELS:
            got = {(a.bindings["x"], a.bindings["y"]) for a in kb.query(f"? ?x {r} ?y.").answers}
            assert got == {(s, o) for s, rr, o in want if rr == r}, (r, canon, name, statements, where)


def test_a_negation_cycle_through_an_inverse_name_is_refused(tmp_path):
    # not ?x b ?y is not ?y c ?x once c inverse b: the rule's head c then depends on not c
    kb = _kb(tmp_path, "n1 a n2.\nrule r: ?x a ?y, not ?x b ?y => ?x c ?y.\n")
    (tmp_path / "f1.tdb").write_text("relation c inverse b.\n")
    with pytest.raises(IngestError, match="cyclic|cycle"):
        kb.ingest([str(tmp_path / "f1.tdb")])
    assert _answers(kb, "? ?x c ?y.") == [("n1", "n2")]
    kb.close()


@pytest.mark.parametrize("files", [
    ["n1 t n2.\nrelation c inverse a.\nrelation a inverse t.\n"],
    ["relation c inverse a.\n", "relation a inverse t.\nn1 t n2.\n"],
])
def test_chained_inverses_are_refused(tmp_path, files):
    # t is a reversed, a is c reversed: t means c, and `n1 t n2` would be stored as n2 a n1, read as nothing
    with pytest.raises(IngestError, match="so t means c: write alias t => c"):
        _kb(tmp_path, *files)


def _cli(capsys, db, *args):
    from thinkingdb.cli.main import main
    capsys.readouterr()
    code = main(["--db", db, "query", "--no-default-rules", *args[1:]] if args[0] == "query" else ["--db", db, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_retracting_the_last_inverse_declaration_while_turned_facts_stay_is_refused(tmp_path, capsys):
    # f2's `eve child_of fay` is stored as `fay parent_of eve`; retracting inv.tdb alone left it answering
    # only as parent_of, a name no longer meaning child_of reversed (`? ?x child_of ?y.`: nothing)
    (tmp_path / "inv.tdb").write_text("relation parent_of inverse child_of.\n")
    (tmp_path / "f2.tdb").write_text("eve child_of fay.\n")
    (tmp_path / "again.tdb").write_text("relation parent_of inverse child_of.\n")
    db = str(tmp_path / "kb.sqlite")
    assert _cli(capsys, db, "ingest", str(tmp_path / "inv.tdb"), str(tmp_path / "f2.tdb"))[0] == 0
    code, _, err = _cli(capsys, db, "retract", str(tmp_path / "inv.tdb"))
    assert code == 2 and "relation parent_of inverse child_of" in err and "f2.tdb" in err
    code, out, _ = _cli(capsys, db, "query", "? ?x child_of ?y.")   # nothing changed
    assert code == 0 and "?x = eve  ?y = fay" in out
    # declared by another source too: the retract keeps the meaning, so it goes through
    assert _cli(capsys, db, "ingest", str(tmp_path / "again.tdb"))[0] == 0
    assert _cli(capsys, db, "retract", str(tmp_path / "inv.tdb"))[0] == 0
    assert "?x = eve  ?y = fay" in _cli(capsys, db, "query", "? ?x child_of ?y.")[1]
    # the declaration with the facts it turned: nothing is left to misread
    assert _cli(capsys, db, "retract", str(tmp_path / "again.tdb"), str(tmp_path / "f2.tdb"))[0] == 0
    with open_kb(db, default_rules=False) as kb:
        assert kb.stats()["facts"] == 0


def test_ingesting_again_a_source_that_no_longer_declares_the_inverse_is_refused(tmp_path, capsys):
    # the same loss as a retract, through ingesting inv.tdb again without its declaration: refused in
    # the ingest's transaction; `eve child_of fay` still answers
    (tmp_path / "inv.tdb").write_text("relation parent_of inverse child_of.\n")
    (tmp_path / "f2.tdb").write_text("eve child_of fay.\n")
    db = str(tmp_path / "kb.sqlite")
    assert _cli(capsys, db, "ingest", str(tmp_path / "inv.tdb"), str(tmp_path / "f2.tdb"))[0] == 0
    (tmp_path / "inv.tdb").write_text("x r y.\n")
    code, _, err = _cli(capsys, db, "ingest", str(tmp_path / "inv.tdb"))
    assert code == 2 and "cannot ingest" in err and "relation parent_of inverse child_of" in err and "f2.tdb" in err
    assert "?x = eve  ?y = fay" in _cli(capsys, db, "query", "? ?x child_of ?y.")[1]
