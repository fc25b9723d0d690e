"""Built-in profiles match SPEC §7; TOML profiles are validated key by key."""

from __future__ import annotations

import pytest

from thinkingdb.errors import ProfileError, ValidationError
from thinkingdb.retrieval.profiles import BUILTIN, Profile, get_profile, load_profile_file, profile_from_toml


@pytest.mark.parametrize("name, lanes, depth, max_results, min_score, gap", [
    ("kb-fast", ("bm25",), 0, 3, 0.30, 0.50),
    ("kb-balanced", ("bm25", "hdc"), 0, 7, 0.15, 0.35),
    ("kb-thinkingdb", ("bm25", "hdc", "closure"), 3, 8, 0.12, 0.25),
])
def test_builtin_profiles_are_the_spec_table(name, lanes, depth, max_results, min_score, gap):
    p = get_profile(name)
    assert (p.lanes, p.expansion_depth, p.max_results, p.min_score, p.gap) == (lanes, depth, max_results,
                                                                                 min_score, gap)
    assert (p.weights.bm25, p.weights.hdc, p.weights.closure, p.weights.agreement) == (1.0, 0.7, 0.85, 0.15)
    assert p.rrf_k == 60 and p.fusion == "weighted"


def test_escalation_settings():
    assert BUILTIN["kb-fast"].hdc == "off"
    assert BUILTIN["kb-balanced"].hdc == "escalate" and BUILTIN["kb-balanced"].min_acceptable == 4
    assert BUILTIN["kb-thinkingdb"].hdc == "escalate"


def test_toml_overrides_its_base():
    p = profile_from_toml('name = "strict"\nbase = "kb-fast"\nmax_results = 2\n[weights]\nagreement = 0.3\n')
    assert (p.name, p.max_results, p.min_score, p.gap, p.hdc) == ("strict", 2, 0.30, 0.50, "off")
    assert p.weights.agreement == 0.3 and p.weights.hdc == 0.7


def test_toml_default_base_is_balanced_and_file_name_names_it(tmp_path):
    f = tmp_path / "my-policy.toml"
    f.write_text("gap = 0.4\n", encoding="utf-8")
    p = load_profile_file(str(f))
    assert (p.name, p.gap, p.max_results, p.hdc) == ("my-policy", 0.4, 7, "escalate")


BAD = [
    ("max_result = 3", "'max_result': unknown key"),
    ("min_score = 1.5", "'min_score': must be in [0, 1], got 1.5"),
    ("min_score = nan", "'min_score': must be a finite number"),
    ("gap = inf", "'gap': must be a finite number"),
    ("gap = -0.1", "'gap': must be in [0, 1]"),
    ("max_results = 0", "'max_results': must be in [1, 10000]"),
    ("max_results = 2.5", "'max_results': must be an integer"),
    ("min_acceptable = true", "'min_acceptable': must be an integer"),
    ("expansion_depth = 99", "'expansion_depth': must be in [0, 16]"),
    ("hdc = \"sometimes\"", "'hdc': must be one of off, escalate, always"),
    ("fusion = \"borda\"", "'fusion': must be one of weighted, rrf"),
    ("rrf_k = 0", "'rrf_k': must be in [1, 100000]"),
    ("base = \"kb-slow\"", "unknown profile 'kb-slow'"),
    ("bm25 = false\nhdc = \"off\"", "'hdc': a profile with bm25 = false"),
    ("[weights]\nbm25 = -1.0", "'weights.bm25': must be in [0, 10]"),
    ("[weights]\nhdc = nan", "'weights.hdc': must be a finite number"),
    ("[weights]\nclosur = 1.0", "'weights.closur': unknown key"),
    ("[closure]\nmax_nodes = 0", "'closure.max_nodes': must be in [1, 1e+09]"),
    ("[closure]\ntimeout_ms = 0", "'closure.timeout_ms': must be in (0, 3.6e+06]"),
    ("[closure]\npartial_weight = 2", "'closure.partial_weight': must be in [0, 1]"),
    ("weights = 3", "'weights': must be a table"),
    ("name = \"\"", "'name': must be a non-empty string"),
    ("gap = ", "not valid TOML"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_invalid_toml_profiles_name_the_key(tmp_path, text, message):
    f = tmp_path / "p.toml"
    f.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ProfileError) as exc:
        load_profile_file(str(f))
    assert message in str(exc.value)
    assert str(exc.value).startswith(str(f))
    assert isinstance(exc.value, ValidationError) and isinstance(exc.value, ValueError)


def test_missing_file_is_a_profile_error(tmp_path):
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile_file(str(tmp_path / "absent.toml"))


def test_profiles_are_frozen_and_json():
    p = BUILTIN["kb-fast"]
    with pytest.raises(AttributeError):
        p.gap = 0.1  # type: ignore[misc]
    assert p.to_json()["weights"] == {"bm25": 1.0, "hdc": 0.7, "closure": 0.85, "agreement": 0.15}
    assert Profile(name="x") == Profile(name="x")
