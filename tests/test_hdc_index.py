"""hdc index: scoring formula, add/remove/update, the allowed filter, ordering, retrieval beside BM25."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdc import (
    FIELD_WEIGHTS,
    FieldError,
    HDCIndex,
    HDCParams,
    UnknownUnitError,
    encode_bag,
    encode_role,
    encode_text,
    field_score,
    final_score,
    similarity,
)

P = HDCParams(dim=1024)  # smaller vectors keep the tests fast; the formulas do not depend on dim

UNITS = {
    "u1": {"role": "policy", "topic": "Refurbished laptop returns", "claim": "Damaged refurbished laptops qualify for replacement"},
    "u2": {"role": "fact", "topic": "Shipping", "claim": "Orders ship within two business days"},
    "u3": {"role": "fact", "topic": "Warranty", "claim": "New phones have a two year warranty", "utility_acts": ["explain"]},
    "u4": {"topic": "Payments", "claim": "We accept credit cards and bank transfers", "utility_acts": "compare pay"},
    "u5": {"role": "procedure", "topic": "Laptop batteries", "procedure": ["Check battery capacity", "Replace worn batteries"]},
    "u6": {"role": "Policy", "topic": "Returns window", "claim": "Returns are accepted within thirty days"},
}


def build(units=UNITS, params=P, tokenizer=None, order=None) -> HDCIndex:
    idx = HDCIndex(params, tokenizer)
    for uid in order or units:
        idx.add(uid, units[uid])
    return idx


def test_field_and_final_score_formulas_by_hand():
    assert field_score(0.5) == 0.0 and field_score(0.3) == 0.0
    assert field_score(0.8) == pytest.approx(0.6)
    assert final_score(topic=1, claim=1, role=1, acts=1) == pytest.approx(1.0)
    assert final_score(topic=0.5, claim=0.2, role=0, acts=1) == pytest.approx(0.35 * 0.5 + 0.35 * 0.2 + 0.10)
    assert dict(FIELD_WEIGHTS) == {"topic": 0.35, "claim": 0.35, "role": 0.20, "acts": 0.10}


def test_search_score_equals_the_formula_computed_from_similarities():
    idx = build()
    query = "laptop battery replacement"
    tokens = query.lower().split()
    text, bag = encode_text(tokens, P), encode_bag(tokens, P)
    for uid, score in idx.search(query, k=10, role="procedure"):
        v = idx.vectors(uid)
        expected = final_score(
            topic=field_score(similarity(text, v.topic)) if v.topic is not None else 0.0,
            claim=field_score(similarity(text, v.claim)) if v.claim is not None else 0.0,
            role=field_score(similarity(encode_role("procedure", P), encode_role(v.role, P))) if v.role else 0.0,
            acts=field_score(similarity(bag, v.acts)) if v.acts is not None else 0.0,
        )
        assert score == pytest.approx(expected, abs=1e-12)
        assert idx.explain(query, uid, role="procedure")["final"] == pytest.approx(score, abs=1e-12)


def test_results_are_sorted_by_score_then_id_and_bounded():
    idx = build()
    query = "laptop returns replacement warranty"
    hits = idx.search(query, k=10)
    assert len(hits) >= 3 and all(0.0 < s <= 1.0 for _, s in hits)
    assert hits == sorted(hits, key=lambda h: (-h[1], h[0]))
    assert hits[0][0] == "u1"
    assert idx.search(query, k=2) == hits[:2]
    assert idx.search("laptop", k=0) == []


def test_equal_scores_are_ordered_by_id():
    idx = HDCIndex(P)
    for uid in ["b", "c", "a"]:
        idx.add(uid, {"topic": "same text"})
    hits = idx.search("same text", k=2)
    assert [u for u, _ in hits] == ["a", "b"] and hits[0][1] == hits[1][1] == pytest.approx(0.35)


def test_identical_text_scores_one_per_field():
    idx = HDCIndex(P)
    idx.add("x", {"role": "fact", "topic": "alpha beta", "claim": "alpha beta", "acts": "alpha beta"})
    assert idx.search("alpha beta", role="FACT") == [("x", pytest.approx(1.0))]


def test_role_term_counts_only_when_named():
    idx = build()
    with_role = dict(idx.search("returns", k=10, role="policy"))
    without = dict(idx.search("returns", k=10))
    for uid in ("u1", "u6"):  # "policy" and "Policy"
        assert with_role[uid] == pytest.approx(without.get(uid, 0.0) + 0.20)
    assert with_role.get("u2", 0.0) < without.get("u2", 0.0) + 0.05


def test_insertion_order_does_not_change_results():
    ids = list(UNITS)
    shuffled = ids[:]
    random.Random(4).shuffle(shuffled)
    for query in ["laptop returns", "two year warranty", "pay by card"]:
        assert build(order=ids).search(query, k=10) == build(order=shuffled).search(query, k=10)


def test_readding_an_id_replaces_the_unit():
    idx = build()
    idx.add("u1", {"topic": "Quantum chromodynamics"})
    assert len(idx) == len(UNITS)
    v = idx.vectors("u1")
    assert v.claim is None and v.role is None
    assert (v.topic == encode_text(["quantum", "chromodynamics"], P)).all()
    assert idx.explain("refurbished laptops replacement", "u1")["final"] < 0.05
    assert idx.search("quantum chromodynamics", k=1)[0][0] == "u1"


def test_remove_and_update_keep_the_other_units_intact():
    idx = build()
    idx.remove("u2")
    idx.update("u3", {"topic": "Phone warranty", "claim": "Two years"})
    assert "u2" not in idx and len(idx) == len(UNITS) - 1
    expected_units = {u: f for u, f in UNITS.items() if u != "u2"}
    expected_units["u3"] = {"topic": "Phone warranty", "claim": "Two years"}
    fresh = build(expected_units)
    for query in ["shipping orders", "laptop returns", "phone warranty two years"]:
        assert idx.search(query, k=10) == fresh.search(query, k=10)
    with pytest.raises(UnknownUnitError):
        idx.remove("u2")
    with pytest.raises(KeyError):
        idx.update("nope", {"topic": "x"})
    assert idx.discard("u4") and not idx.discard("u4")


def test_a_bad_unit_leaves_the_index_unchanged():
    idx = build()
    before = idx.vectors("u1")
    with pytest.raises(FieldError):
        idx.add("u1", {"topic": "fine", "colour": "unknown field"})
    assert (idx.vectors("u1").topic == before.topic).all() and len(idx) == len(UNITS)


def test_min_score_and_empty_queries():
    idx = build()
    assert all(s > 0.1 for _, s in idx.search("laptop returns", k=10, min_score=0.1))
    assert idx.search("", k=10) == []
    assert HDCIndex(P).search("anything") == []
    with pytest.raises(ValueError):
        idx.search("x", k=-1)
    with pytest.raises(TypeError):
        idx.search("x", allowed="u1")


def test_many_units_grow_the_storage():
    idx = HDCIndex(P)
    for i in range(100):
        idx.add(f"id{i:03d}", {"topic": f"topic number {i}", "claim": f"claim {i} text"})
    assert len(idx) == 100 and idx.ids()[:2] == ["id000", "id001"]
    assert idx.search("topic number 42", k=1)[0][0] == "id042"
    assert idx.stats()["units"] == 100


@given(st.sets(st.sampled_from(sorted(UNITS)) | st.just("ghost"), max_size=7), st.sampled_from(["laptop returns", "two", "pay cards", "battery"]))
def test_allowed_filter_equals_an_index_of_only_the_allowed_units(allowed, query):
    idx = build()
    hits = idx.search(query, k=10, allowed=allowed)
    assert {u for u, _ in hits} <= allowed
    fresh = build({u: f for u, f in UNITS.items() if u in allowed})
    assert hits == fresh.search(query, k=10)


@given(st.lists(st.sampled_from(["add", "add_many", "remove", "search"]), min_size=1, max_size=12),
       st.randoms(use_true_random=False))
def test_a_reused_frozenset_filter_follows_adds_and_removes(ops, rnd):
    # the slots of a frozen filter are cached; every mutation moves or adds slots, and the filter
    # must keep meaning "these ids" (oracle: the unfiltered search, restricted afterwards)
    idx = build()
    allowed = frozenset(["u1", "u3", "new0", "new1", "new2"])
    n = 0
    for op in ops:
        if op == "add":
            idx.add(f"new{n}", {"topic": "laptop returns desk", "claim": f"note {n} on laptop returns"})
            n += 1
        elif op == "add_many":
            idx.add_many([(f"new{n}", {"topic": "laptop returns"}), (f"new{n + 1}", {"claim": "laptop returns"})])
            n += 2
        elif op == "remove" and len(idx) > 1:
            idx.remove(rnd.choice(sorted(idx.ids())))
        hits = idx.search("laptop returns", k=100, allowed=allowed)
        want = [(u, s) for u, s in idx.search("laptop returns", k=100) if u in allowed]
        assert hits == want


def test_allowed_filter_never_returns_filtered_ids_even_when_they_score_best():
    idx = build()
    best = idx.search("refurbished laptops replacement", k=1)[0][0]
    hits = idx.search("refurbished laptops replacement", k=10, allowed=[u for u in UNITS if u != best])
    assert best not in {u for u, _ in hits}
    assert idx.search("laptops", allowed=[]) == []


def test_hdc_finds_what_bm25_misses():
    import lexical

    try:
        from lexical import BM25Index
    except ImportError:  # exported from the package root in later versions of lexical
        from lexical.index import BM25Index

    tok = lexical.Tokenizer()
    bm25 = BM25Index(tokenizer=tok)
    idx = HDCIndex(HDCParams(), tok)
    for uid, fields in UNITS.items():
        bm25.add(uid, fields)
        idx.add(uid, fields)
    query = "refurbised laptp replacemnt"  # typos: no stem in common with any unit
    assert set(tok(query)).isdisjoint({t for f in UNITS.values() for v in f.values() for t in tok(" ".join(v) if isinstance(v, list) else v)})
    assert list(bm25.search(query)) == []
    assert [h.doc_id for h in bm25.search("refurbished laptop replacement")][:1] == ["u1"]  # BM25 works when spelled right
    hits = idx.search(query, k=3)
    assert hits[0][0] == "u1"
    assert hits[0][1] > 2 * hits[1][1]  # clearly ahead of the next unit
