"""Fusion arithmetic, checked against values computed by hand."""

from __future__ import annotations

import math

import pytest

from thinkingdb.retrieval.fusion import (apply_thresholds, bm25_ideal, normalize_bm25, normalize_hdc, rank, rrf_fusion,
                               weighted_fusion)

W = {"bm25": 1.0, "hdc": 0.7, "closure": 0.85}


def test_weighted_fusion_by_hand():
    lanes = {"bm25": {"u1": 0.9, "u2": 0.4}, "hdc": {"u1": 0.5, "u3": 0.6}, "closure": {"u2": 0.8, "u4": 1.0}}
    f = weighted_fusion(lanes, W, 0.15)
    assert f["u1"] == pytest.approx(0.9 + 0.35 + 0.15)     # 1.40
    assert f["u2"] == pytest.approx(0.4 + 0.68 + 0.15)     # 1.23
    assert f["u3"] == pytest.approx(0.42)                   # hdc only: no agreement bonus
    assert f["u4"] == pytest.approx(0.85)
    assert [u for u, _ in rank(f)] == ["u1", "u2", "u4", "u3"]


def test_agreement_bonus_counts_once_for_three_lanes():
    f = weighted_fusion({"bm25": {"a": 0.0}, "hdc": {"a": 0.0}, "closure": {"a": 0.0}}, W, 0.15)
    assert f["a"] == pytest.approx(0.15)


def test_rrf_by_hand():
    f = rrf_fusion({"bm25": ["a", "b", "c"], "hdc": ["c", "a"]}, k=60)
    assert f["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert f["b"] == pytest.approx(1 / 62)
    assert f["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert [u for u, _ in rank(f)] == ["a", "c", "b"]


def test_bm25_normalization_is_absolute():
    # query of two terms with idf 1.2 and 0.8; max field weight 1.5 => ideal 3.0
    ideal = bm25_ideal([1.2, 0.8])
    assert ideal == pytest.approx(3.0)
    assert normalize_bm25(3.0, ideal) == pytest.approx(math.tanh(1.0))   # 0.7616
    assert normalize_bm25(1.2, ideal) == pytest.approx(math.tanh(0.4))   # 0.3799
    assert normalize_bm25(0.0, ideal) == 0.0
    assert normalize_bm25(100.0, ideal) <= 1.0


def test_min_score_then_gap_then_max():
    ranked = [("a", 2.0), ("b", 1.2), ("c", 0.9), ("d", 0.5), ("e", 0.29)]
    kept, dropped = apply_thresholds(ranked, min_score=0.3, gap=0.5, max_results=3)
    # min 0.3 drops e; gap keeps >= 1.0: a, b; max 3 cuts nothing
    assert kept == [("a", 2.0), ("b", 1.2)]
    assert dropped == {"min_score": 1, "gap": 2, "max_results": 0}
    kept, dropped = apply_thresholds(ranked, min_score=0.0, gap=0.0, max_results=3)
    assert [u for u, _ in kept] == ["a", "b", "c"] and dropped["max_results"] == 2


def test_gap_is_relative_to_the_top_after_min_score():
    kept, _ = apply_thresholds([("a", 0.2), ("b", 0.1)], min_score=0.15, gap=0.25, max_results=9)
    assert kept == [("a", 0.2)]
    # top 0.2 × gap 0.25 = 0.05: 0.06 stays, 0.04 goes
    kept, _ = apply_thresholds([("a", 0.2), ("b", 0.06), ("c", 0.04)], min_score=0.0, gap=0.25, max_results=9)
    assert kept == [("a", 0.2), ("b", 0.06)]


def test_rrf_floor_is_the_evidence_not_the_rank_value():
    ranked = [("a", 1 / 61), ("b", 1 / 62)]
    kept, dropped = apply_thresholds(ranked, min_score=0.3, gap=0.0, max_results=5, floor={"a": 0.9, "b": 0.1})
    assert kept == [("a", 1 / 61)] and dropped["min_score"] == 1


def test_pinned_units_survive_thresholds_and_the_cut():
    ranked = [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.05)]
    kept, _ = apply_thresholds(ranked, min_score=0.3, gap=0.5, max_results=2, pinned={"d"})
    assert kept == [("a", 1.0), ("d", 0.05)]


def test_hdc_normalization_by_hand():
    assert normalize_hdc(0.1) == pytest.approx(math.tanh(0.4))     # 0.3799
    assert normalize_hdc(0.5) == pytest.approx(math.tanh(2.0))     # 0.9640
    assert normalize_hdc(0.0) == 0.0 and normalize_hdc(-0.2) == 0.0
