"""Decomposition and the alignment side-car inside the search pipeline, the API and the command line."""

from __future__ import annotations

import json
import math

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.cli.main import main
from thinkingdb.errors import ThinkingDBError, ValidationError
from thinkingdb.retrieval.profiles import Profile, profile_from_toml
from thinkingdb.retrieval.pipeline import search

from kbfiles import make_kb

QUERY = "solar panel inverter warranty"
SUBS = ["solar panel", "panel inverter", "inverter warranty"]
# every candidate kept, so the tests see the lane's scores unchanged by the cuts
ALL = Profile(name="all", hdc="off", min_score=0.0, gap=0.0, max_results=50)




SOLAR = [
    {"id": "A", "claim": "solar solar solar panel panel mounting brackets for roofs"},
    {"id": "B", "claim": "the inverter warranty covers the panel inverter for solar sites"},
    {"id": "C", "claim": "garden hose repair kit"},
    {"id": "D", "claim": "warranty terms for kettles"},
    {"id": "E", "claim": "roof tiles and gutters"},
]


def bm25_scores(kb, text):
    return {r.unit_id: r.lanes["bm25"]["score"] for r in search(kb, text, profile=ALL)}


def test_decomposed_lane_is_the_mean_over_sub_queries_with_the_bonus(tmp_path):
    with make_kb(tmp_path, SOLAR) as kb:
        per = [bm25_scores(kb, q) for q in SUBS]
        res = search(kb, QUERY, profile=ALL, decompose=True)
        assert res.trace["lanes"]["bm25"]["decompose"]["sub_queries"] == SUBS
        assert res.trace["lanes"]["bm25"]["decompose"]["applied"] is True
        got = {r.unit_id: r.lanes["bm25"]["score"] for r in res}
    # the oracle: mean over the three sub-queries (0 when missed), × 1.25 when found by two or more
    ids = set().union(*per)
    want = {u: sum(p.get(u, 0.0) for p in per) / 3 * (1.25 if sum(u in p for p in per) >= 2 else 1.0) for u in ids}
    assert got.keys() == want.keys() == {"A", "B", "D"}
    for u in want:
        assert got[u] == pytest.approx(want[u], abs=1e-9)
    assert got["D"] == pytest.approx(per[2]["D"] / 3)   # found by one sub-query: no bonus


def test_the_intersection_bonus_flips_a_ranking_end_to_end(tmp_path):
    # A matches only "solar" (first sub-query); F matches only "inverter" (second and third), and
    # "inverter" is common, so F's mean is below A's until the bonus multiplies it by 1.25
    units = [{"id": "A", "claim": "solar roof"}, {"id": "F", "claim": "inverter box"}]
    units += [{"id": f"P{i}", "claim": f"panel note {i}"} for i in range(4)]
    units += [{"id": f"I{i}", "claim": f"inverter spare {i} and more words here"} for i in range(6)]
    units += [{"id": f"Z{i}", "claim": f"garden hose {i}"} for i in range(4)]
    with make_kb(tmp_path, units) as kb:
        def order(bonus):
            p = Profile(name="d", hdc="off", min_score=0.0, gap=0.0, max_results=50, decompose=True,
                        intersection_bonus=bonus)
            scores = {r.unit_id: r.score for r in search(kb, QUERY, profile=p)}
            return sorted("AF", key=lambda u: -scores[u]), scores
        (no_bonus, s0), (default, s1) = order(0.0), order(0.25)
    assert no_bonus == ["A", "F"] and default == ["F", "A"]
    assert s1["F"] == pytest.approx(s0["F"] * 1.25) and s1["A"] == pytest.approx(s0["A"])


def test_short_queries_and_stopwords_are_not_decomposed(tmp_path):
    with make_kb(tmp_path, SOLAR) as kb:
        # three content words: "the", "and", "for" are stopwords and do not count
        text = "the solar and the panel for inverter"
        res = search(kb, text, profile=ALL, decompose=True)
        assert res.trace["lanes"]["bm25"]["decompose"]["applied"] is False
        assert {r.unit_id: r.score for r in res} == {r.unit_id: r.score for r in search(kb, text, profile=ALL)}
        assert "decompose" not in search(kb, QUERY, profile=ALL).trace["lanes"]["bm25"]


LAPTOPS = [
    {"id": "u1", "claim": "Laptop replacement policy for damaged units.", "features": {"quality": 0.2}},
    {"id": "u2", "claim": "Laptop replacement policy, refurbished stock.",
     "features": {"quality": 0.9, "freshness": 0.5}},
    {"id": "u3", "claim": "Laptop replacement policy, draft.", "features": {"risk_penalty": 0.8}},
    {"id": "secret", "claim": "Laptop replacement policy for executives.", "acl": ["board"],
     "features": {"quality": 1.0, "authority": 1.0}},
]


def test_alignment_orders_by_rsi_then_score_and_never_changes_scores(tmp_path):
    with make_kb(tmp_path, LAPTOPS) as kb:
        plain = search(kb, "laptop replacement policy", profile=ALL)
        aligned = search(kb, "laptop replacement policy", profile=ALL, alignment=True)
        # hand-computed: RSI = tanh(support − penalty) for one piece of evidence
        rsi = {r.unit_id: r.alignment["rsi"] for r in aligned}
        assert rsi == pytest.approx({"u1": math.tanh(0.2), "u2": math.tanh(1.4), "u3": math.tanh(-0.8)})
        assert aligned.ids() == ["u2", "u1", "u3"]
        assert [r.alignment["band"] for r in aligned] == ["A++", "A0", "A--"]
        assert {r.unit_id: r.score for r in aligned} == {r.unit_id: r.score for r in plain}
        assert all(r.alignment is None for r in plain) and "alignment" not in plain.trace

        # request evidence pools with the stored evidence: u3 = tanh((3 − 0.8) / 2) = tanh(1.1)
        more = search(kb, "laptop replacement policy", profile=ALL,
                      features={"u3": {"quality": 1, "freshness": 1, "authority": 1}, "secret": {"quality": 1}})
        assert more.ids() == ["u2", "u3", "u1"]
        assert more.results[1].alignment["rsi"] == pytest.approx(math.tanh(1.1))
        # the hidden unit's stored or requested features never surface
        assert "secret" not in json.dumps(more.to_json())


def test_request_features_are_checked(tmp_path):
    with make_kb(tmp_path, LAPTOPS) as kb:
        for bad in (float("nan"), float("inf"), float("-inf"), 1.5, -0.1):
            with pytest.raises(ValidationError, match=r"features\['u1'\]\.quality"):
                search(kb, "laptop", profile=ALL, features={"u1": {"quality": bad}})
        with pytest.raises(ValidationError, match="unknown feature 'shine'"):
            search(kb, "laptop", profile=ALL, features={"u1": {"shine": 0.5}})
        with pytest.raises(ValidationError, match="features must map unit ids"):
            search(kb, "laptop", profile=ALL, features=[("u1", {})])


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e309"])
def test_non_finite_features_are_refused_at_ingest_and_nothing_is_stored(tmp_path, bad):
    src = tmp_path / "u.jsonl"
    src.write_text('{"id": "ok", "claim": "fine"}\n'
                   f'{{"id": "u1", "claim": "x", "features": [{{"quality": 0.5}}, {{"freshness": {bad}}}]}}\n')
    with KnowledgeBase(str(tmp_path / "kb.sqlite")) as kb:
        with pytest.raises(ThinkingDBError) as info:
            kb.ingest([str(src)])
        msg = str(info.value)
        assert "u.jsonl:2:" in msg
        # the JSON literals are refused by the reader itself; 1e309 parses (to inf) and the field check names it
        assert (f"{bad} is not a finite number" if bad != "1e309" else "features[1].freshness must be a finite") in msg
        assert kb.stats()["units"] == 0


def test_profile_file_sets_decompose_and_refuses_a_bad_bonus():
    p = profile_from_toml('name = "long"\nbase = "kb-fast"\ndecompose = true\nintersection_bonus = 0.5')
    assert (p.decompose, p.intersection_bonus, p.max_results) == (True, 0.5, 3)
    for text, key in (("intersection_bonus = nan", "intersection_bonus"), ("decompose = 1", "decompose"),
                      ("alignment = \"yes\"", "alignment"), ("decompose_threshold = 1", "decompose_threshold")):
        with pytest.raises(ThinkingDBError, match=key):
            profile_from_toml('name = "x"\n' + text)


def test_cli_decompose_align_and_features(tmp_path, capsys):
    src = tmp_path / "u.jsonl"
    src.write_text("".join(json.dumps(u) + "\n" for u in LAPTOPS + SOLAR))
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", str(src)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--json", "search", QUERY, "--profile", "kb-fast", "--decompose"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trace"]["lanes"]["bm25"]["decompose"]["sub_queries"] == SUBS

    feats = tmp_path / "f.json"
    feats.write_text(json.dumps({"u1": {"authority": 1.0, "quality": 1.0}}))
    assert main(["--db", db, "search", "laptop replacement policy", "--features", str(feats)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # u1 pools its stored support 0.2 with the file's 2.0: tanh((0.2 + 2.0) / 2) = tanh(1.1) = 0.800,
    # below u2's tanh(1.4) = 0.885 and above u3's tanh(-0.8)
    assert lines[0].startswith("1. u2") and "RSI +0.885 A++" in lines[0]
    assert lines[1].startswith("2. u1") and "RSI +0.800 A++" in lines[1]

    feats.write_text('{"u1": {"quality": 0.5,}}')
    assert main(["--db", db, "search", "laptop", "--features", str(feats)]) == 2
    assert "f.json:1:" in capsys.readouterr().err
    feats.write_text('{"u1": {"quality": 1e309}}')
    assert main(["--db", db, "search", "laptop", "--features", str(feats)]) == 2
    assert "quality must be a finite number" in capsys.readouterr().err
