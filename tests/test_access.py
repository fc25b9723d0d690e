"""The visibility rule: acl tags, region, validity dates; the vectorized table equals the reference."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, strategies as st

from thinkingdb.store.access import AccessTable, Caller, parse_date, unit_visible
from thinkingdb.errors import ValidationError
from thinkingdb.store.sqlite import Unit

DAY = dt.date(2026, 5, 27)
LUNA = Caller(tags=("support:eu",), region="EU")


@pytest.mark.parametrize("unit, visible", [
    (Unit("public"), True),                                               # no acl tags: public
    (Unit("tagged", acl=("support:eu",)), True),
    (Unit("tagged-case", acl=("SUPPORT:EU ",)), True),                   # trimmed, case-folded
    (Unit("other-tag", acl=("merchant:vip-ops",)), False),
    (Unit("any-of", acl=("merchant:vip-ops", "support:eu")), True),
    (Unit("region-eu", region="eu"), True),
    (Unit("region-us", region="US"), False),
    (Unit("starts-today", effective_from="2026-05-27"), True),
    (Unit("starts-tomorrow", effective_from="2026-05-28"), False),
    (Unit("ends-today", effective_to="2026-05-27"), True),
    (Unit("ended-yesterday", effective_to="2026-05-26"), False),
    (Unit("window", effective_from="2026-01-01", effective_to="2026-12-31"), True),
])
def test_unit_visibility(unit, visible):
    assert unit_visible(unit, LUNA, DAY) is visible
    table = AccessTable([unit])
    assert bool(table.view(LUNA, DAY).mask[0]) is visible


def test_anonymous_caller_sees_public_region_free_units_only():
    units = [Unit("a"), Unit("b", acl=("x",)), Unit("c", region="EU")]
    t = AccessTable(units)
    assert t.view(Caller(), DAY).visible_ids(t.ids) == ["a"]


def test_fingerprint_identifies_the_visible_set():
    t = AccessTable([Unit("a"), Unit("b", acl=("x",)), Unit("c", acl=("y",))])
    vx, vy, vx2 = (t.view(Caller(tags=tags), DAY) for tags in (("x",), ("y",), ("x", "z")))
    assert vx.fingerprint == vx2.fingerprint != vy.fingerprint
    assert not vx.everything and t.view(Caller(tags=("x", "y")), DAY).everything


def test_bad_inputs():
    with pytest.raises(ValidationError):
        Caller(tags="support:eu")
    with pytest.raises(ValidationError):
        parse_date("2026-13-01")
    with pytest.raises(ValidationError):
        Caller.from_json({"tags": ["a"], "rgion": "EU"})


tags = st.sampled_from(["a", "b", "c"])
dates = st.one_of(st.just(""), st.dates(dt.date(2025, 1, 1), dt.date(2027, 1, 1)).map(dt.date.isoformat))
units = st.builds(lambda i, acl, region, f, t: Unit(f"u{i}", acl=tuple(acl), region=region,
                                                     effective_from=f, effective_to=t),
                  st.integers(0, 10**6), st.lists(tags, max_size=2), st.sampled_from(["", "eu", "us"]), dates, dates)


@given(st.lists(units, max_size=20), st.lists(tags, max_size=3), st.sampled_from(["", "eu", "us", "apac"]),
       st.dates(dt.date(2025, 1, 1), dt.date(2027, 1, 1)))
def test_table_equals_reference(us, caller_tags, region, day):
    caller = Caller(tags=tuple(caller_tags), region=region)
    mask = AccessTable(us).view(caller, day).mask
    assert [bool(m) for m in mask] == [unit_visible(u, caller, day) for u in us]


def test_the_empty_fingerprint_is_that_of_an_empty_mask():
    from thinkingdb.store.access import _EMPTY_FINGERPRINT, _fingerprint
    assert _EMPTY_FINGERPRINT == _fingerprint(b"", 0)
    assert AccessTable([]).view(Caller(), DAY).fingerprint == _fingerprint(b"", 0)


@pytest.mark.parametrize("caller", [None, Caller(tags=("x",), region="EU")])
def test_a_store_without_units_gives_the_lanes_view_without_the_lanes(tmp_path, caller):
    """``kb.view`` of a store without units (no lanes loaded) equals the lanes' own view of it."""
    from thinkingdb.api import KnowledgeBase
    from thinkingdb.retrieval.lanes import Lanes
    with KnowledgeBase(str(tmp_path / "kb.sqlite")) as kb:
        kb.add_text("Nginx depends_on OpenSSL. openssl depends_on libc @0.5. rule r: ?x depends_on ?y => ?y used_by ?x.")
        got = kb.view(caller)
        state = kb._state()
        assert state.public is got                      # the light path was taken, and is kept
        want = Lanes(kb, state).caller_view(caller or Caller(), DAY)
        assert got.view == want.view and got.view.everything
        assert got.graph is want.graph is state.graph
        assert got.rules == want.rules and len(got.rules) > 1   # the stored rule and the defaults
        assert got.visible("any-unit") is want.visible("any-unit") is False
        assert got.labels == want.labels == {"nginx": "Nginx", "openssl": "OpenSSL", "libc": "libc"}
        assert kb.view(caller) is got
