"""Rule names in a store: a name identifies a rule, so a second rule of one name (in one file, or beside
one already stored) is refused at its line, naming the first; before, the store kept one of the two
(rules keyed by name and source, read one per name) while the ingest counted both and the in-memory
closure applied both, and the other rule's answers vanished silently."""
import pytest

from thinkingdb.api import open_kb
from thinkingdb.errors import IngestError


def _answers(kb, q):
    return [a.bindings for a in kb.query(q).answers]


def test_a_second_rule_of_one_name_in_a_file_is_refused_at_its_line(tmp_path):
    (tmp_path / "one.tdb").write_text("n1 a n2.\nn1 b n2.\nrule r0: ?x a ?y => ?x h ?y.\n  rule r0: ?x b ?y => ?x g ?y.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        with pytest.raises(IngestError) as exc:
            kb.ingest([str(tmp_path / "one.tdb")])
        (d,) = exc.value.diagnostics
        assert (d.source.endswith("one.tdb"), d.line, d.column) == (True, 4, 3)
        assert "a second rule named r0: the first is at line 3" in d.reason
        assert kb.stats()["rules"] == 0 and kb.stats()["facts"] == 0   # an ingest is atomic


def test_skip_invalid_keeps_the_first_rule_and_reports_the_second(tmp_path):
    (tmp_path / "one.tdb").write_text("n1 a n2.\nn1 b n2.\nrule r0: ?x a ?y => ?x h ?y.\nrule r0: ?x b ?y => ?x g ?y.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        report = kb.ingest([str(tmp_path / "one.tdb")], skip_invalid=True)
        assert (report.rules, report.rejected) == (1, 1)
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]
        assert _answers(kb, "? ?x g ?y.") == []
        assert kb.stats()["rules"] == 1


def test_a_rule_of_a_name_already_stored_is_refused_naming_its_source(tmp_path):
    (tmp_path / "a.tdb").write_text("n1 a n2.\nrule r0: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "b.tdb").write_text("n1 b n2.\nrule r0: ?x b ?y => ?x g ?y.\n")
    for together in (True, False):
        with open_kb(str(tmp_path / f"kb{together}.sqlite"), default_rules=False) as kb:
            if not together:
                kb.ingest([str(tmp_path / "a.tdb")])
            files = [str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")] if together else [str(tmp_path / "b.tdb")]
            with pytest.raises(IngestError, match=r"rule r0 is already in the store from .*a\.tdb:2") as exc:
                kb.ingest(files)
            (d,) = exc.value.diagnostics
            assert (d.source.endswith("b.tdb"), d.line, d.column) == (True, 2, 1)
            if not together:   # the store as it was: a's rule answers, b's facts are not in
                assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]
                assert kb.stats()["rules"] == 1 and kb.stats()["facts"] == 1


def test_re_ingesting_a_source_replaces_its_rules(tmp_path):
    f = tmp_path / "a.tdb"
    f.write_text("n1 a n2.\nrule r0: ?x a ?y => ?x h ?y.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(f)])
        f.write_text("n1 a n2.\nrule r0: ?x a ?y => ?x g ?y.\n")
        kb.ingest([str(f)])
        assert _answers(kb, "? ?x g ?y.") == [{"x": "n1", "y": "n2"}] and _answers(kb, "? ?x h ?y.") == []
        assert kb.stats()["rules"] == 1


def test_statement_node_rules_of_one_statement_are_not_duplicates(tmp_path):
    # an n-ary head gives r/1, r/2 from one statement; a second statement of that name is refused
    (tmp_path / "a.tdb").write_text("n1 a n2.\nrule r: ?x a ?y => link(?x, ?y).\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        assert kb.ingest([str(tmp_path / "a.tdb")]).rules == 2
        (tmp_path / "b.tdb").write_text("rule r: ?x a ?y => link(?y, ?x).\n")
        with pytest.raises(IngestError, match="rule r is already in the store"):
            kb.ingest([str(tmp_path / "b.tdb")])


def test_normalize_refuses_two_rules_of_one_name():
    from thinkingdb.errors import ParseError
    from thinkingdb.store.canonical import normalize_tdb
    with pytest.raises(ParseError, match="a second rule named r0: the first is at line 1") as exc:
        normalize_tdb("rule r0: ?x a ?y => ?x h ?y.\nrule r0: ?x b ?y => ?x g ?y.\n", "x.tdb")
    assert [(d.line, d.column) for d in exc.value.diagnostics] == [(2, 1)]


def test_the_same_rule_again_is_not_a_conflict(tmp_path):
    rule = "rule r0: ?x a ?y => ?x h ?y.\n"
    (tmp_path / "a.tdb").write_text("n1 a n2.\n" + rule + rule)
    (tmp_path / "b.tdb").write_text(rule)
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp_path / "a.tdb"), str(tmp_path / "b.tdb")])
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}] and kb.stats()["rules"] == 1


NOTE = "---\nacl: [{tag}]\n---\n# Note {tag}\nSome text.\n\n```tdb\nrule x: ?a r ?b => ?a {head} ?b.\n```\n"


def test_a_restricted_note_s_other_rule_of_a_stored_name_is_refused(tmp_path):
    # rx.tdb's public rule x, then a note (acl x) with another rule x: stored, the note's replaced the
    # public one (read one per name, the latest source's), so `? a t ?y.` lost b for every caller; the
    # note is now refused at its rule's line, naming rx.tdb:2, and the public rule still answers
    (tmp_path / "rx.tdb").write_text("a r b.\nrule x: ?a r ?b => ?a t ?b.\n")
    (tmp_path / "note.md").write_text(NOTE.format(tag="x", head="s"))
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp_path / "rx.tdb")])
        with pytest.raises(IngestError) as exc:
            kb.ingest([str(tmp_path / "note.md")])
        (d,) = exc.value.diagnostics
        assert (d.source.endswith("note.md"), d.line, d.column) == (True, 8, 1)
        assert "rule x is already in the store from" in d.reason and "rx.tdb:2" in d.reason
        assert _answers(kb, "? a t ?y.") == [{"y": "b"}]
        assert kb.stats()["rules"] == 1 and kb.stats()["units"] == 0


def test_the_same_rule_in_a_public_file_and_in_restricted_notes_holds_for_each_caller(tmp_path):
    # the same `rule x` scoped to note x, to note y, and public in rx.tdb (ingested last): each row is
    # kept and read; before, the latest source's row alone was read, so the notes' callers lost theirs
    # (here: before rx.tdb came, only one note's caller had x)
    from thinkingdb.store.access import Caller
    (tmp_path / "n1.md").write_text(NOTE.format(tag="x", head="t"))
    (tmp_path / "n2.md").write_text(NOTE.format(tag="y", head="t"))
    (tmp_path / "facts.tdb").write_text("a r b @0.5.\n")
    (tmp_path / "rx.tdb").write_text("rule x: ?a r ?b => ?a t ?b.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp_path / "facts.tdb"), str(tmp_path / "n1.md"), str(tmp_path / "n2.md")])

        def seen(tags):
            return [a.bindings for a in kb.query("? a t ?y.", caller=Caller(tags=tags), as_of="2026-06-01").answers]
        assert (seen(("x",)), seen(("y",)), seen(())) == ([{"y": "b"}], [{"y": "b"}], [])
        # a caller of both notes gets the rule once: noisy-or over two copies would say 0.75, not 0.5
        both = kb.query("? a t ?y.", caller=Caller(tags=("x", "y")), as_of="2026-06-01", aggregate="noisy-or", k=2)
        assert [(a.bindings, a.score) for a in both.answers] == [({"y": "b"}, 0.5)]
        kb.ingest([str(tmp_path / "rx.tdb")])
        assert (seen(("x",)), seen(("y",)), seen(())) == ([{"y": "b"}], [{"y": "b"}], [{"y": "b"}])


# the default rule library (thinkingdb/data/default_rules.tdb) holds, among others,
#   rule capability @0.95: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
LIBRARY_CAPABILITY = "rule capability @0.95: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.\n"


def test_a_rule_named_like_a_different_library_rule_is_refused_at_its_line(tmp_path):
    """Before, both held under one name: '? ?a has_capability ?b.' gave (p, q) from the file's rule and
    (x, z) from the library's, and each proof said 'rule capability'."""
    (tmp_path / "a.tdb").write_text("x uses y. y provides z. p r q.\n\n   rule capability: ?a r ?b => ?a has_capability ?b.\n")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        with pytest.raises(IngestError) as exc:
            kb.ingest([str(tmp_path / "a.tdb")])
        (d,) = exc.value.diagnostics
        assert (d.source.endswith("a.tdb"), d.line, d.column) == (True, 3, 4)
        assert "rule capability is a different rule of the default rule library" in d.reason
        assert kb.stats()["rules"] == 0 and kb.stats()["facts"] == 0   # atomic


def test_the_library_s_own_rule_stated_again_is_no_conflict_and_holds_once(tmp_path):
    (tmp_path / "a.tdb").write_text("x uses y. y provides z.\n" + LIBRARY_CAPABILITY)
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "a.tdb")])
        res = kb.query("? x has_capability ?c.", aggregate="noisy-or", k=5)
        assert [(a.bindings, a.score) for a in res.answers] == [({"c": "z"}, 0.95)]   # one proof, not two


def test_question_time_rules_named_like_library_or_stored_rules(tmp_path):
    """KnowledgeBase.add_rules_file (the command line's --rules) checks the same names."""
    (tmp_path / "lib.tdb").write_text("\nrule capability: ?a r ?b => ?a has_capability ?b.\n")
    (tmp_path / "stored.tdb").write_text("n1 a n2.\nrule mine: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "other.tdb").write_text("rule mine: ?x a ?y => ?y h ?x.\n")
    (tmp_path / "again.tdb").write_text("rule mine: ?x a ?y => ?x h ?y.\n")
    from thinkingdb.errors import ParseError
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.add_facts([("p", "r", "q")])
        kb.ingest([str(tmp_path / "stored.tdb")])
        with pytest.raises(ParseError) as exc:
            kb.add_rules_file(str(tmp_path / "lib.tdb"))
        (d,) = exc.value.diagnostics
        assert (d.line, d.column) == (2, 1) and "default rule library" in d.reason
        with pytest.raises(ParseError) as exc:
            kb.add_rules_file(str(tmp_path / "other.tdb"))
        (d,) = exc.value.diagnostics
        assert (d.source.endswith("other.tdb"), d.line) == (True, 1) and "rule mine is a different rule" in d.reason
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]   # the refused files changed nothing
        kb.add_rules_file(str(tmp_path / "again.tdb"))   # the same rule: no conflict
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:   # no library: the name is free
        kb.add_rules_file(str(tmp_path / "lib.tdb"))
        assert _answers(kb, "? ?a has_capability ?b.") == [{"a": "p", "b": "q"}]


def test_a_question_time_rule_is_not_checked_against_a_restricted_note_s_rule_name(tmp_path):
    """The check names public rules only: refusing a name held by a restricted note would tell a caller
    who may not see the note that it exists."""
    (tmp_path / "note.md").write_text("---\nacl: [\"hr:secret\"]\n---\n# Vault\n\n```tdb\nalice knows vault.\n"
                                      "rule hidden: ?x uses vault => ?x knows vault.\n```\n", encoding="utf-8")
    (tmp_path / "q.tdb").write_text("rule hidden: ?x a ?y => ?x h ?y.\n", encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp_path / "note.md")])
        assert kb.stats()["rules"] == 1   # the note's rule is stored
        kb.add_facts([("n1", "a", "n2")])
        kb.add_rules_file(str(tmp_path / "q.tdb"))   # accepted: nothing said about the hidden name
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]


def test_the_library_s_own_rule_under_an_inverse_of_its_head_is_no_conflict(tmp_path):
    """'relation capable_of inverse has_capability.' turns the file's copy of the library's rule to
    '=> ?z capable_of ?x' (as a question turns the library's): it was compared with the library's rule
    unturned and refused as a different rule, on ingest, by lint and by add_rules_file."""
    (tmp_path / "decl.tdb").write_text("relation capable_of inverse has_capability.\nx uses y. y provides z.\n")
    (tmp_path / "both.tdb").write_text("relation capable_of inverse has_capability.\n" + LIBRARY_CAPABILITY)
    (tmp_path / "lib.tdb").write_text(LIBRARY_CAPABILITY)
    (tmp_path / "other.tdb").write_text("relation capable_of inverse has_capability.\n"
                                        "rule capability @0.9: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.\n")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "decl.tdb")])
        kb.add_rules_file(str(tmp_path / "lib.tdb"))
        kb.ingest([str(tmp_path / "both.tdb")])
        res = kb.query("? z capable_of ?c.", aggregate="noisy-or", k=5)
        assert [(a.bindings, a.score) for a in res.answers] == [({"c": "x"}, 0.95)]   # one proof, not two
        with pytest.raises(IngestError) as exc:   # a different rule of that name is still refused
            kb.ingest([str(tmp_path / "other.tdb")])
        (d,) = exc.value.diagnostics
        assert d.line == 2 and "different rule of the default rule library" in d.reason


def test_question_time_copy_of_a_rule_stored_before_an_inverse_of_its_head(tmp_path):
    """A rule stored before 'relation k inverse h.' keeps its row unturned (a question turns it); the
    same rule given by add_rules_file is compiled turned (=> ?y k ?x), and was refused as a different
    rule of the store's. A different rule of a stored rule's name is refused once per statement, by
    the name the statement gave (an n-ary head's rules are mine/1 and mine/2)."""
    (tmp_path / "st.tdb").write_text("n1 a n2.\nrule mine: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "inv.tdb").write_text("relation k inverse h.\n")
    (tmp_path / "again.tdb").write_text("rule mine: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "nary.tdb").write_text("rule pair: ?x a ?y => t(?x, ?y).\n")
    (tmp_path / "other.tdb").write_text("\nrule pair: ?x a ?y => t(?y, ?x).\n")
    from thinkingdb.errors import ParseError
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "st.tdb")])
        kb.ingest([str(tmp_path / "nary.tdb")])
        kb.ingest([str(tmp_path / "inv.tdb")])
        kb.add_rules_file(str(tmp_path / "again.tdb"))
        res = kb.query("? ?x k ?y.", aggregate="noisy-or", k=5)
        assert [(a.bindings, a.score) for a in res.answers] == [({"x": "n2", "y": "n1"}, 1.0)]
        with pytest.raises(ParseError) as exc:
            kb.add_rules_file(str(tmp_path / "other.tdb"))
        (d,) = exc.value.diagnostics
        assert (d.line, d.column) == (2, 1) and d.reason.startswith("rule pair is a different rule of the store's")


def test_question_time_rules_of_two_files_of_one_name(tmp_path):
    """'query --rules r1.tdb --rules r2.tdb' with 'rule r: ?x a ?y => ?x h ?y.' and 'rule r: ?x a ?y =>
    ?y h ?x.' held both (n1 h n2 and n2 h n1), where one file holding both is refused: the second file
    is refused at its line. The same rule again is no conflict, nor is a copy of a stored rule after an
    earlier file declared an inverse of its head (all are read turned, as a question reads them)."""
    (tmp_path / "r1.tdb").write_text("rule r: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "r2.tdb").write_text("\n  rule r: ?x a ?y => ?y h ?x.\n")
    (tmp_path / "st.tdb").write_text("n1 a n2.\nrule s: ?x a ?y => ?x g ?y.\n")
    (tmp_path / "inv.tdb").write_text("relation k inverse g.\n")
    (tmp_path / "s.tdb").write_text("rule s: ?x a ?y => ?x g ?y.\n")
    from thinkingdb.errors import ParseError
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "st.tdb")])
        kb.add_rules_file(str(tmp_path / "r1.tdb"))
        kb.add_rules_file(str(tmp_path / "r1.tdb"))
        with pytest.raises(ParseError) as exc:
            kb.add_rules_file(str(tmp_path / "r2.tdb"))
        (d,) = exc.value.diagnostics
        assert (d.source.endswith("r2.tdb"), d.line, d.column) == (True, 2, 3)
        assert d.reason.startswith("rule r is a different rule given earlier")
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}]
        kb.add_rules_file(str(tmp_path / "inv.tdb"))
        kb.add_rules_file(str(tmp_path / "s.tdb"))
        res = kb.query("? ?x k ?y.", aggregate="noisy-or", k=5)
        assert [(a.bindings, a.score) for a in res.answers] == [({"x": "n2", "y": "n1"}, 1.0)]


def test_a_statement_is_one_rule_by_the_name_it_gave(tmp_path):
    """An n-ary head's rules are named r/1, r/2 (and a 'not' premise's helpers r.not.1): 'rule r: ?x a ?y
    => ?x h ?y.' then 'rule r: ?x a ?y => t(?x, ?y).' were both stored (r, r/1, r/2), and 'rule
    capability: ... => cap(?x, ?z).' held beside the library's capability; both are refused at their
    line now. 'a.not.b' is a name of its own."""
    (tmp_path / "rn.tdb").write_text("n1 a n2.\nrule r: ?x a ?y => ?x h ?y.\n rule r: ?x a ?y => t(?x, ?y).\n")
    (tmp_path / "lib.tdb").write_text("rule capability: ?x uses ?y, ?y provides ?z => cap(?x, ?z).\n")
    (tmp_path / "ok.tdb").write_text("n1 p n2.\nrule a: ?x p ?y => ?x q ?y.\nrule a.not.b: ?x p ?y => ?y q ?x.\n"
                                     "rule m: ?x p ?y => t(?x, ?y).\nrule m: ?x p ?y => t(?x, ?y).\n")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        for name, line, reason in (("rn.tdb", 3, "a second rule named r: the first is at line 2"),
                                   ("lib.tdb", 1, "rule capability is a different rule of the default rule library")):
            with pytest.raises(IngestError) as exc:
                kb.ingest([str(tmp_path / name)])
            (d,) = exc.value.diagnostics
            assert (d.line, reason in d.reason) == (line, True)
        assert kb.stats()["rules"] == 0
        kb.ingest([str(tmp_path / "ok.tdb")])
        assert _answers(kb, "? ?x q ?y.") == [{"x": "n1", "y": "n2"}, {"x": "n2", "y": "n1"}]


def test_question_time_rule_of_a_stored_name_with_an_n_ary_head(tmp_path):
    """Stored 'rule pair: ?x a ?y => ?x h ?y.'; add_rules_file's 'rule pair: ?x a ?y => t(?x, ?y).'
    (rules pair/1, pair/2) was compared name by name, found no 'pair' of its own, and both held."""
    (tmp_path / "st.tdb").write_text("n1 a n2.\nrule pair: ?x a ?y => ?x h ?y.\nrule duo: ?x a ?y => t(?x, ?y).\n")
    (tmp_path / "nary.tdb").write_text("rule pair: ?x a ?y => t(?x, ?y).\n")
    (tmp_path / "duo.tdb").write_text("rule duo: ?x a ?y => t(?x, ?y).\n\nrule duo2: ?x a ?y => ?y h ?x.\n")
    from thinkingdb.errors import ParseError
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "st.tdb")])
        with pytest.raises(ParseError) as exc:
            kb.add_rules_file(str(tmp_path / "nary.tdb"))
        (d,) = exc.value.diagnostics
        assert d.line == 1 and d.reason.startswith("rule pair is a different rule of the store's")
        kb.add_rules_file(str(tmp_path / "duo.tdb"))   # the stored n-ary statement again: no conflict
        assert _answers(kb, "? ?x h ?y.") == [{"x": "n1", "y": "n2"}, {"x": "n2", "y": "n1"}]


@pytest.mark.parametrize("front", ["", "---\nacl: [\"hr:secret\"]\n---\n"])
def test_a_note_s_rule_named_like_a_different_library_rule_is_refused(tmp_path, front):
    """A Markdown note's tdb block is checked against the library as a .tdb file is (before, the note
    was stored and its callers got two rules named capability)."""
    (tmp_path / "note.md").write_text(front + "# Tools\n\n```tdb\np r q.\nrule capability: ?a r ?b => ?a has_capability ?b.\n```\n",
                                      encoding="utf-8")
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        with pytest.raises(IngestError) as exc:
            kb.ingest([str(tmp_path / "note.md")])
        (d,) = exc.value.diagnostics
        assert d.line == front.count("\n") + 5 and "different rule of the default rule library" in d.reason
        assert kb.stats()["rules"] == 0 and kb.stats()["facts"] == 0


def test_ingest_compares_rules_by_statement_and_as_a_question_reads_them(tmp_path):
    """(1) A stored n-ary 'rule mine' (rows mine/1, mine/2) and a later file's binary 'rule mine' were
    both stored. (2) A rule stored before 'relation k inverse h.' keeps its row unturned; the same rule
    from another file, compiled after the declaration, was refused as 'already in the store'."""
    (tmp_path / "n.tdb").write_text("n1 a n2.\nrule mine: ?x a ?y => t(?x, ?y).\n")
    (tmp_path / "b.tdb").write_text("\nrule mine: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "st.tdb").write_text("n1 a n2.\nrule same: ?x a ?y => ?x h ?y.\n")
    (tmp_path / "inv.tdb").write_text("relation k inverse h.\n")
    (tmp_path / "again.tdb").write_text("rule same: ?x a ?y => ?x h ?y.\n")
    with open_kb(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(tmp_path / "n.tdb")])
        with pytest.raises(IngestError) as exc:
            kb.ingest([str(tmp_path / "b.tdb")])
        (d,) = exc.value.diagnostics
        assert d.line == 2 and "rule mine is already in the store from" in d.reason and "n.tdb:2" in d.reason
        kb.ingest([str(tmp_path / "st.tdb")])
        kb.ingest([str(tmp_path / "inv.tdb")])
        kb.ingest([str(tmp_path / "again.tdb")])   # the same rule: no conflict
        res = kb.query("? ?x k ?y.", aggregate="noisy-or", k=5)
        assert [(a.bindings, a.score) for a in res.answers] == [({"x": "n2", "y": "n1"}, 1.0)]
