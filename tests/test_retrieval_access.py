"""Hidden units never reach results, proofs, traces or scores; validity dates are honoured."""

from __future__ import annotations

import json

import pytest

from thinkingdb.retrieval.pipeline import search

from kbfiles import make_kb

PROFILES = ("kb-fast", "kb-balanced", "kb-thinkingdb")
CLERK = {"tags": ["claims:west"], "region": "WEST"}
AUDITOR = {"tags": ["claims:west", "audit:gold"], "region": "WEST"}

UNITS = [
    {"id": "flood-rule-v3", "role": "policy", "topic": "Basement flooding claims",
     "claim": "Rule FLD-31: basement flooding from a burst pipe is covered up to the deductible.",
     "acl": ["claims:west"], "region": "WEST", "effective_from": "2026-01-01",
     "triples": [["basement flooding", "covered_by", "rule FLD-31"]]},
    {"id": "flood-rule-v2", "role": "policy", "topic": "Basement flooding claims",
     "claim": "Rule FLD-31: basement flooding is covered only with a sump pump rider.",
     "acl": ["claims:west"], "region": "WEST", "effective_from": "2024-01-01", "effective_to": "2025-12-31"},
    {"id": "gold-override", "role": "policy", "topic": "Gold tier overrides",
     "claim": "Override GLD-9: gold tier customers skip the flooding deductible entirely.",
     "acl": ["audit:gold"], "region": "WEST",
     "triples": [["gold tier", "exempt_from", "flooding deductible"], ["Quarkbox", "provides", "process isolation"]]},
    {"id": "east-rule", "role": "policy", "topic": "Basement flooding east",
     "claim": "Rule FLD-77: eastern basements need a flood survey first.", "region": "EAST"},
    {"id": "ide-profile", "topic": "AchillesIDE workspace", "claim": "AchillesIDE runs cells inside Quarkbox.",
     "triples": [["AchillesIDE", "uses", "Quarkbox"]]},
    {"id": "isolation-goal", "topic": "Why isolate processes",
     "claim": "Process isolation matters for secure execution.",
     "triples": [["process isolation", "relevant_for", "secure execution"]]},
]
HIDDEN_FROM_CLERK = {"gold-override", "east-rule"}




@pytest.fixture
def kb(tmp_path):
    with make_kb(tmp_path, UNITS) as kb:
        yield kb


@pytest.mark.parametrize("profile", PROFILES)
def test_restricted_unit_never_returned_even_for_its_own_code(kb, profile):
    res = search(kb, "GLD-9", profile=profile, caller=CLERK, as_of="2026-03-01")
    assert res.ids() == []
    assert "gold-override" not in json.dumps(res.to_json())
    # the control: a caller with the tag gets it, so the test above can fail
    assert search(kb, "GLD-9", profile=profile, caller=AUDITOR, as_of="2026-03-01").ids()[:1] == ["gold-override"]


@pytest.mark.parametrize("profile", PROFILES)
def test_hidden_units_never_appear_anywhere(kb, profile):
    for query in ("gold tier flooding deductible override", "basement flooding", "FLD-77 flood survey",
                  "why is AchillesIDE relevant for secure execution"):
        doc = json.dumps(search(kb, query, profile=profile, caller=CLERK, as_of="2026-03-01").to_json())
        for uid in HIDDEN_FROM_CLERK:
            assert uid not in doc, (query, uid)
        for u in UNITS:   # never any unit's text in a trace
            assert u["claim"] not in doc


@pytest.mark.parametrize("profile", PROFILES)
def test_superseded_unit_never_returned_after_its_end_date(kb, profile):
    after = search(kb, "FLD-31 basement flooding", profile=profile, caller=CLERK, as_of="2026-03-01")
    assert "flood-rule-v2" not in after.ids() and after.ids()[0] == "flood-rule-v3"
    on_last_day = search(kb, "FLD-31 basement flooding", profile=profile, caller=CLERK, as_of="2025-12-31")
    assert on_last_day.ids()[0] == "flood-rule-v2" and "flood-rule-v3" not in on_last_day.ids()


def test_region_is_enforced(kb):
    assert "east-rule" not in search(kb, "FLD-77 flood survey", profile="kb-balanced", caller=CLERK,
                                     as_of="2026-03-01").ids()
    east = {"tags": [], "region": "EAST"}
    assert search(kb, "FLD-77 flood survey", profile="kb-balanced", caller=east, as_of="2026-03-01").ids()[0] == "east-rule"


def test_anonymous_caller_sees_public_units_only(kb):
    res = search(kb, "basement flooding", profile="kb-balanced", as_of="2026-03-01")
    assert set(res.ids()) <= {"ide-profile", "isolation-goal"}


def test_facts_of_hidden_units_do_not_reach_the_closure(kb):
    # the Quarkbox → process isolation link is stated only by the gold unit
    q = "why is AchillesIDE relevant for secure execution"
    clerk = search(kb, q, profile="kb-thinkingdb", caller=CLERK, as_of="2026-03-01")
    auditor = search(kb, q, profile="kb-thinkingdb", caller=AUDITOR, as_of="2026-03-01")
    leaves = {str(t) for r in auditor.results if r.proof is not None for t in r.proof.leaves()}
    assert "quarkbox provides process_isolation" in leaves          # the control: the chain exists
    assert "gold-override" in auditor.ids()
    for r in clerk.results:
        assert r.proof is None or "quarkbox provides process_isolation" not in {str(t) for t in r.proof.leaves()}
        assert r.lanes.get("closure", {}).get("tier") != "exact"
    assert clerk.trace["lanes"]["closure"]["pinned"] == []


def _visible_units():
    return [{"id": "pump-a", "topic": "Pumps", "claim": "alder valve pumps need alder gaskets"},
            {"id": "pump-b", "topic": "Pumps", "claim": "birch valve pumps need a birch seal"},
            {"id": "pump-c", "topic": "Pumps", "claim": "valve pumps are tested yearly"}]


def _hidden_units():
    # many restricted units holding "alder": in a shared index they would lower idf(alder)
    return [{"id": f"secret-{i}", "topic": "Alder", "claim": "alder alder alder", "acl": ["vault"]} for i in range(30)]


@pytest.mark.parametrize("profile", PROFILES)
def test_hidden_text_changes_no_visible_score(tmp_path, profile):
    with make_kb(tmp_path, _visible_units(), "plain") as plain, \
            make_kb(tmp_path, _visible_units() + _hidden_units(), "mixed") as mixed:
        for q in ("alder birch valve", "alder gaskets", "valve pumps"):
            a = search(plain, q, profile=profile, as_of="2026-03-01")
            b = search(mixed, q, profile=profile, as_of="2026-03-01")
            assert [(r.unit_id, r.score) for r in a] == [(r.unit_id, r.score) for r in b], q
            assert a.trace["lanes"]["bm25"]["ranked"] == b.trace["lanes"]["bm25"]["ranked"]
        # the control: the hidden units are there and would be found by a caller who may see them
        assert search(mixed, "alder", profile=profile, caller={"tags": ["vault"]}, as_of="2026-03-01").ids()[0] \
            .startswith("secret-")


def test_shared_statistics_would_have_changed_the_order(tmp_path):
    """Why per-view indexes: with the idf of the whole corpus the order flips (the bar of issue 6)."""
    from lexical import BM25Index
    shared = BM25Index()
    shared.rebuild([(u["id"], {"topic": u["topic"], "claim": u["claim"]}) for u in _visible_units() + _hidden_units()])
    own = BM25Index()
    own.rebuild([(u["id"], {"topic": u["topic"], "claim": u["claim"]}) for u in _visible_units()])
    visible = {"pump-a", "pump-b", "pump-c"}
    order_shared = [h.doc_id for h in shared.search("alder birch valve", allowed=visible)]
    order_own = [h.doc_id for h in own.search("alder birch valve")]
    assert order_own[0] == "pump-a" and order_shared[0] == "pump-b"
