"""Issue 8: alignment side-car (RSI), query decomposition, token-budget fold, numeric validation."""

import math
import random

import pytest
from hypothesis import given, strategies as st

from thinkingdb.retrieval.alignment import AlignmentParams, Evidence, Pool, band, rank, rsi
from thinkingdb.retrieval.decompose import combine, decomposed_search, sub_queries
from thinkingdb.errors import ValidationError
from thinkingdb.retrieval.fold import Candidate, fold
from thinkingdb.numeric import check_number


def test_rsi_three_results_by_hand():
    # e_out = quality + freshness + authority, e_in = risk + coherence (all coefficients 1, units 1, c 1)
    evidence = {
        "u1": [Evidence(quality=0.9, freshness=0.5, authority=0.2)],            # tanh(1.6)  = 0.921669
        "u2": [Evidence(quality=0.4, risk_penalty=0.3, coherence_penalty=0.3)],  # tanh(-0.2) = -0.197375
        "u3": [Evidence(quality=0.5, authority=0.5), Evidence(risk_penalty=1.0)],  # tanh((1 - 1)/2) = 0
    }
    assert rsi(evidence["u1"]) == pytest.approx(0.9216685544)
    assert rsi(evidence["u2"]) == pytest.approx(-0.1973753202)
    assert rsi(evidence["u3"]) == pytest.approx(0.0)
    ranked = rank([("u2", 9.0), ("u3", 5.0), ("u1", 1.0)], evidence)
    assert [r[0] for r in ranked] == ["u1", "u3", "u2"]           # RSI first ...
    assert [r[1] for r in ranked] == [1.0, 5.0, 9.0]              # ... classical scores untouched
    assert [r[3] for r in ranked] == ["A++", "A0", "A0"]


def test_classical_score_breaks_rsi_ties():
    ranked = rank([("a", 1.0), ("b", 2.0)], {})
    assert [r[0] for r in ranked] == ["b", "a"]


def test_score_weighting_uses_abs_m_to_the_gamma():
    p = AlignmentParams(weighting="score", gamma_w=1.0)
    ev = [Evidence(quality=1.0, m=3.0), Evidence(risk_penalty=1.0, m=1.0)]
    assert rsi(ev, p) == pytest.approx(math.tanh((3 * 1.0 - 1 * 1.0) / 4))


def test_bands_cut_points():
    assert [band(x) for x in (0.6, 0.59, 0.2, 0.19, -0.19, -0.2, -0.59, -0.6)] == [
        "A++", "A+", "A+", "A0", "A0", "A-", "A-", "A--"]


unit = st.floats(min_value=0.0, max_value=1.0)
evidences = st.lists(st.builds(Evidence, unit, unit, unit, unit, unit, st.floats(0.01, 10.0)), min_size=1, max_size=30)


@given(evidences, st.randoms(use_true_random=False), st.sampled_from(["uniform", "score"]))
def test_rsi_is_order_and_shard_invariant(evs, rnd, weighting):
    params = AlignmentParams(weighting=weighting)
    batch = rsi(evs, params)
    shuffled = list(evs)
    rnd.shuffle(shuffled)
    assert rsi(shuffled, params) == batch
    # shard into pools of random sizes, merge in random order
    pools = []
    i = 0
    while i < len(shuffled):
        size = rnd.randint(1, 5)
        pool = Pool(params)
        for ev in shuffled[i:i + size]:
            pool.add(ev)           # streamed one at a time
        pools.append(pool)
        i += size
    rnd.shuffle(pools)
    total = Pool(params)
    for pool in pools:
        total.merge(pool)
    assert total.rsi == batch


def test_sub_queries_are_sliding_pairs_of_content_terms():
    assert sub_queries(["a", "b", "c", "d", "e"]) == ["a b", "b c", "c d", "d e"]
    assert sub_queries(["a", "b", "c"]) == ["a b c"]


def test_intersection_bonus_changes_the_ranking_as_documented():
    # x is the single best hit of one sub-query; y is found by two sub-queries with lower scores.
    results = {"a b": [("x", 1.0), ("y", 0.45)], "b c": [("y", 0.45)], "c d": []}
    search = lambda q: results[q]  # noqa: E731
    without, _ = decomposed_search(["a", "b", "c", "d"], search, intersection_bonus=0.0)
    with_bonus, subs = decomposed_search(["a", "b", "c", "d"], search, intersection_bonus=0.25)
    assert subs == ["a b", "b c", "c d"]
    assert [u for u, _ in without] == ["x", "y"]            # 1/3 = 0.333 vs 0.9/3 = 0.300
    assert [u for u, _ in with_bonus] == ["y", "x"]         # 0.300 × 1.25 = 0.375 > 0.333
    assert dict(with_bonus)["y"] == pytest.approx(0.375)


candidates = st.lists(st.builds(Candidate, st.text("abcdef", min_size=1, max_size=3), st.floats(0, 10),
                                st.integers(0, 200), st.sampled_from("pqr"), st.sampled_from("st")),
                      max_size=20, unique_by=lambda c: c.id)


@given(candidates, st.integers(0, 500), st.floats(0, 1))
def test_fold_never_exceeds_the_budget(cs, budget, bias):
    chosen = fold(cs, budget, diversity_bias=bias)
    assert sum(c.tokens for c in chosen) <= budget
    assert len({c.id for c in chosen}) == len(chosen)


def test_fold_prefers_diverse_sources():
    cs = [Candidate("s1-a", 1.00, 100, "policy", "handbook"),
          Candidate("s1-b", 0.95, 100, "policy", "handbook"),
          Candidate("s2-a", 0.80, 100, "policy", "faq")]
    assert [c.id for c in fold(cs, 200, diversity_bias=0.3)] == ["s1-a", "s2-a"]   # 0.95·0.7·0.7 < 0.80·0.7
    assert [c.id for c in fold(cs, 200, diversity_bias=0.0)] == ["s1-a", "s1-b"]


def test_fold_skips_what_does_not_fit_and_keeps_going():
    cs = [Candidate("big", 1.0, 500), Candidate("small", 0.5, 50)]
    assert [c.id for c in fold(cs, 100)] == ["small"]


BAD_NUMBERS = [float("nan"), float("inf"), float("-inf"), "1e309", "nan", "-inf"]


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize("field", ["alpha", "beta", "gamma", "delta", "eta", "unit_out", "unit_in", "c", "eps_w", "gamma_w"])
def test_alignment_params_refuse_non_finite(field, bad):
    with pytest.raises(ValidationError, match=f"alignment.{field}"):
        AlignmentParams(**{field: float(bad) if isinstance(bad, str) else bad})


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize("feature", ["quality", "freshness", "authority", "risk_penalty", "coherence_penalty", "m"])
def test_features_refuse_non_finite(feature, bad):
    with pytest.raises(ValidationError, match=f"features.{feature}"):
        Evidence.from_mapping({feature: bad})


@pytest.mark.parametrize("bad", BAD_NUMBERS)
def test_fold_and_decomposition_refuse_non_finite(bad):
    with pytest.raises(ValidationError, match="diversity_bias"):
        fold([], 10, diversity_bias=bad)
    with pytest.raises(ValidationError, match="budget_tokens"):
        fold([], bad)
    with pytest.raises(ValidationError, match="category_weights.policy"):
        fold([], 10, category_weights={"policy": bad})
    with pytest.raises(ValidationError, match=r"candidates\[x\].score"):
        fold([Candidate("x", float(bad), 1)], 10)
    with pytest.raises(ValidationError, match="intersection_bonus"):
        combine([], bad)


def test_check_number_reports_the_field_and_the_value():
    with pytest.raises(ValidationError, match=r"^min_score must be a finite number, got inf$"):
        check_number("1e309", "min_score")
    with pytest.raises(ValidationError, match=r"^min_score must be <= 1, got 1.5$"):
        check_number(1.5, "min_score", low=0, high=1)
    with pytest.raises(ValidationError, match="must be a number"):
        check_number(True, "min_score")


def test_search_budget_tokens_end_to_end(tmp_path, capsys):
    import json as _json
    from thinkingdb.cli.main import main
    units = [{"id": f"u{i}", "role": "policy", "topic": "Laptop replacement", "source": "handbook" if i < 2 else "faq",
              "claim": "Damaged refurbished laptops qualify for replacement within fourteen days of delivery."}
             for i in range(4)]
    src = tmp_path / "u.jsonl"
    src.write_text("".join(_json.dumps(u) + "\n" for u in units))
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "-q", "ingest", str(src)]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--json", "search", "laptop replacement", "--profile", "kb-balanced",
                 "--budget-tokens", "50"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    # each unit costs ceil(len("policy Laptop replacement Damaged ... delivery.") / 4) = ceil(111 / 4) = 28 tokens: one fits in 50
    assert len(doc["results"]) == 1
    assert doc["trace"]["fold"]["tokens"] == 28 and doc["trace"]["fold"]["budget_tokens"] == 50
    assert main(["--db", db, "search", "laptop replacement", "--budget-tokens", "nan"]) == 2
