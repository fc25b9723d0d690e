"""The retrieval pipeline on small stores of our own: codes, multi-hop chains, thresholds, escalation."""

from __future__ import annotations

import json

import pytest

from thinkingdb.retrieval.profiles import Profile, get_profile
from thinkingdb.retrieval.pipeline import search

import kbfiles

DAY = "2026-02-10"
AGENT = {"tags": ["helpdesk:nordics"], "region": "NORDICS"}

UNITS = [
    {"id": "warranty-wrn207", "role": "policy", "topic": "Cracked tablet screens",
     "claim": "Clause WRN-207: a cracked tablet screen reported within ten days is repaired at no charge.",
     "acl": ["helpdesk:nordics"], "region": "NORDICS"},
    {"id": "warranty-wrn118", "role": "policy", "topic": "Battery swelling",
     "claim": "Clause WRN-118: swollen phone batteries are swapped at any service point.",
     "acl": ["helpdesk:nordics"], "region": "NORDICS"},
    {"id": "shipping-note", "role": "note", "topic": "Courier delays",
     "claim": "Courier delays in winter can add two working days to tablet deliveries."},
    # the multi-hop chain: AchillesIDE uses Quarkbox, Quarkbox provides process isolation,
    # process isolation is relevant for secure execution
    {"id": "ide-profile", "role": "fact", "topic": "AchillesIDE workspace",
     "claim": "AchillesIDE runs every notebook cell inside a Quarkbox container.",
     "triples": [["AchillesIDE", "uses", "Quarkbox"]]},
    {"id": "quarkbox-profile", "role": "fact", "topic": "Quarkbox container runtime",
     "claim": "Quarkbox offers process isolation with seccomp filters and private mounts.",
     "triples": [["Quarkbox", "provides", "process isolation"]]},
    {"id": "isolation-goal", "role": "fact", "topic": "Why isolate processes",
     "claim": "Process isolation matters for secure execution of plugins from strangers.",
     "triples": [["process isolation", "relevant_for", "secure execution"]]},
    {"id": "ide-themes", "role": "note", "topic": "AchillesIDE colour themes",
     "claim": "AchillesIDE ships a dark theme and a high-contrast theme.",
     "triples": [["AchillesIDE", "has_feature", "dark theme"]]},
    {"id": "secure-exec-intro", "role": "note", "topic": "Secure execution basics",
     "claim": "Secure execution keeps untrusted code away from user secrets."},
]


def make_kb(tmp_path, units=UNITS, name="kb"):
    return kbfiles.make_kb(tmp_path, units, name)


@pytest.fixture
def kb(tmp_path):
    with make_kb(tmp_path) as kb:
        yield kb


def test_exact_policy_code_is_found_by_bm25(kb):
    for profile in ("kb-fast", "kb-balanced", "kb-thinkingdb"):
        res = search(kb, "WRN-207", profile=profile, caller=AGENT, as_of=DAY)
        assert res.ids()[0] == "warranty-wrn207", profile
        assert res.results[0].lanes["bm25"]["rank"] == 1
    assert "warranty-wrn118" not in search(kb, "WRN-207", profile="kb-fast", caller=AGENT, as_of=DAY).ids()


MULTI_HOP = "why is AchillesIDE relevant for secure execution"
CHAIN = {"ide-profile", "quarkbox-profile", "isolation-goal"}


def test_multi_hop_chain_kb_thinkingdb_returns_it_and_kb_fast_does_not(kb):
    deep = search(kb, MULTI_HOP, profile="kb-thinkingdb", as_of=DAY)
    fast = search(kb, MULTI_HOP, profile="kb-fast", as_of=DAY)
    assert CHAIN <= set(deep.ids())
    assert not CHAIN <= set(fast.ids())
    assert "quarkbox-profile" not in fast.ids()   # shares no word with the question
    for r in deep.results:
        if r.unit_id in CHAIN:
            assert r.proof is not None and "closure" in r.lanes
            # the credited proof is the chain that answers the question, not a partial one
            assert str(r.proof.conclusion) == "achilleside relevant_for secure_execution"
            assert r.lanes["closure"]["tier"] == "exact"
            assert r.proof.depth == 2 and r.proof.score == pytest.approx(0.95 * 0.90)
    trace = deep.trace["lanes"]["closure"]
    assert trace["query_symbols"] == ["achilleside", "secure_execution"]
    assert trace["query_relations"] == ["relevant_for"]
    assert trace["bounds"]["max_depth"] == 3 and trace["truncated"] is None


def test_a_unit_that_states_the_answer_is_never_dropped(tmp_path):
    direct = {"id": "direct-answer", "topic": "Audit note 44",
              "claim": "Filed by the compliance team in March.",
              "triples": [["AchillesIDE", "relevant_for", "secure execution"]]}
    noise = [{"id": f"secure-{i}", "topic": "Secure execution secure execution checklist",
              "claim": f"Secure execution checklist item {i} for AchillesIDE relevant reviews."} for i in range(12)]
    with make_kb(tmp_path, UNITS + [direct] + noise) as kb:
        res = search(kb, MULTI_HOP, profile="kb-thinkingdb", as_of=DAY)
        assert "direct-answer" in res.ids()
        hit = next(r for r in res.results if r.unit_id == "direct-answer")
        assert hit.pinned and hit.proof.kind == "asserted" and hit.lanes["closure"]["score"] == 1.0
        assert len(res) <= 8
        # kb-fast (no closure) drops it: its text does not match the question
        assert "direct-answer" not in search(kb, MULTI_HOP, profile="kb-fast", as_of=DAY).ids()


def test_query_symbols_match_on_word_boundaries_only(tmp_path):
    units = [{"id": "ai-unit", "topic": "AI", "claim": "AI helps triage tickets.",
              "triples": [["AI", "helps_with", "ticket triage"]]},
             {"id": "pump-unit", "topic": "Pump maintenance", "claim": "Pump maintenance happens every spring."}]
    with make_kb(tmp_path, units) as kb:
        res = search(kb, "pump maintenance schedule", profile="kb-thinkingdb", as_of=DAY)
        assert res.trace["lanes"]["closure"]["query_symbols"] == []
        assert "ai-unit" not in res.ids()
        res = search(kb, "does AI help with ticket triage", profile="kb-thinkingdb", as_of=DAY)
        assert res.trace["lanes"]["closure"]["query_symbols"] == ["ai", "ticket_triage"]


def _graded_units(n=12):
    # unit i repeats the rare word "zephyrine" i times: BM25 scores grow with i
    return [{"id": f"g{i:02d}", "topic": "Filter cartridges",
             "claim": " ".join(["zephyrine"] * i + ["cartridge", "housing", "gasket", "spare", "part"])}
            for i in range(1, n + 1)]


def test_gap_threshold_and_max_results_are_applied(tmp_path):
    with make_kb(tmp_path, _graded_units()) as kb:
        for name in ("kb-fast", "kb-balanced", "kb-thinkingdb"):
            p = get_profile(name)
            res = search(kb, "zephyrine cartridge", profile=p, as_of=DAY)
            top = res.trace["fusion"]["top"]
            expect = [t for t in top if t["score"] >= p.min_score]
            expect = [t for t in expect if t["score"] >= expect[0]["score"] * p.gap][:p.max_results]
            assert res.ids() == [t["unit_id"] for t in expect], name
            assert len(res) <= p.max_results
        # the same search without the cuts returns more: the limits above did something
        loose = Profile(name="loose", hdc="off", max_results=100, min_score=0.0, gap=0.0)
        assert len(search(kb, "zephyrine cartridge", profile=loose, as_of=DAY)) == 12
        fast = search(kb, "zephyrine cartridge", profile="kb-fast", as_of=DAY)
        assert len(fast) == 3 and fast.trace["fusion"]["dropped"]["max_results"] > 0
        tight = Profile(name="tight", hdc="off", max_results=100, min_score=0.0, gap=0.97)
        res = search(kb, "zephyrine cartridge", profile=tight, as_of=DAY)
        assert 1 <= len(res) < 12 and res.trace["fusion"]["dropped"]["gap"] == 12 - len(res)
        assert all(r.score >= res.results[0].score * 0.97 for r in res)


def test_escalation_runs_only_when_bm25_returns_fewer_than_min_acceptable(tmp_path):
    units = _graded_units(6) + [{"id": "lonely", "topic": "Quillwort herbarium",
                                 "claim": "The quillwort herbarium sheet is archived."}]
    with make_kb(tmp_path, units) as kb:
        many = search(kb, "zephyrine cartridge", profile="kb-balanced", as_of=DAY)
        assert many.trace["lanes"]["bm25"]["acceptable"] >= 4
        assert many.trace["lanes"]["hdc"]["ran"] is False and "hdc" not in many.trace["index_versions"]
        one = search(kb, "quillwort herbarium", profile="kb-balanced", as_of=DAY)
        assert one.trace["lanes"]["bm25"]["acceptable"] == 1
        assert one.trace["lanes"]["hdc"]["ran"] is True and one.trace["lanes"]["hdc"]["escalation"] is True
        assert one.ids()[0] == "lonely"
        # raising min_acceptable above the 6 graded hits makes the first search escalate too
        eager = Profile(name="eager", min_acceptable=7)
        assert search(kb, "zephyrine cartridge", profile=eager, as_of=DAY).trace["lanes"]["hdc"]["ran"] is True
        # kb-fast never runs HDC
        assert search(kb, "quillwort herbarium", profile="kb-fast", as_of=DAY).trace["lanes"]["hdc"]["ran"] is False


def test_hdc_finds_a_misspelled_query_that_bm25_misses(tmp_path):
    with make_kb(tmp_path) as kb:
        res = search(kb, "quarkbx contaner runtme", profile="kb-balanced", as_of=DAY)
        assert res.trace["lanes"]["bm25"]["hits"] == 0 and res.trace["lanes"]["hdc"]["ran"]
        assert res.ids()[:1] == ["quarkbox-profile"]
        assert search(kb, "quarkbx contaner runtme", profile="kb-fast", as_of=DAY).ids() == []


def test_every_result_reports_each_lane_rank_and_score(kb):
    res = search(kb, MULTI_HOP, profile="kb-thinkingdb", as_of=DAY)
    doc = res.to_json()
    assert set(doc) == {"results", "trace"}
    for r, j in zip(res.results, doc["results"]):
        assert j["unit_id"] == r.unit_id and j["score"] == r.score
        for lane, v in j["lanes"].items():
            ranked = res.trace["lanes"][lane]["ranked"]
            assert ranked[v["rank"] - 1]["unit_id"] == r.unit_id
    json.dumps(doc)   # the whole document is JSON


def test_rrf_fusion_profile(kb):
    p = Profile(name="rrf", fusion="rrf", hdc="always", min_score=0.1, gap=0.0, max_results=5)
    res = search(kb, "AchillesIDE notebook container", profile=p, as_of=DAY)
    assert res.ids()[0] == "ide-profile"
    first = res.results[0]
    expect = sum(1 / (60 + v["rank"]) for v in first.lanes.values())
    assert first.score == pytest.approx(expect)


@pytest.mark.parametrize("profile", ["kb-fast", "kb-balanced", "kb-thinkingdb"])
def test_search_text_with_a_lone_surrogate_is_refused_by_name(kb, profile):
    from thinkingdb import ThinkingDBError
    with pytest.raises(ThinkingDBError, match="search text is not valid Unicode: a lone surrogate U[+]D800 at character 4"):
        search(kb, "WRN-\ud800", profile=profile, caller=AGENT, as_of=DAY)
