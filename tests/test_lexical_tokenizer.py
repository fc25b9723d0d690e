"""Tokenizer rules of issue 4 item 1, one edge case per row."""

from __future__ import annotations

import doctest
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lexical
from lexical import DEFAULT_STOPWORDS, Tokenizer, UnknownLanguageError, tokenize
from lexical.errors import LexicalError, ParameterError

PLAIN = Tokenizer(stem=False, stopwords=[])

# (input, expected terms) with stemming off and no stopwords, so each row shows one rule alone.
PLAIN_CASES = [
    ("Hello World", ["hello", "world"]),
    ("  tabs\tand\nnewlines ", ["tabs", "and", "newlines"]),
    ("“quoted” ‘single’ «guillemets»", ["quoted", "single", "guillemets"]),
    ("end. (paren) [bracket] {brace}!?", ["end", "paren", "bracket", "brace"]),
    ("café naïve Zürich", ["café", "naïve", "zürich"]),
    ("Ploinky's Ploinky’s Ploinkyʼs", ["ploinky", "ploinky", "ploinky"]),
    ("students' books", ["students", "books"]),
    ("sandbox-runtime", ["sandbox-runtime", "sandbox", "runtime"]),
    ("state-of-the-art", ["state-of-the-art", "state", "of", "the", "art"]),
    ("2024-01-01", ["2024-01-01"]),
    ("1.5-2.0", ["1.5-2.0"]),
    ("covid-19", ["covid-19", "covid", "19"]),
    ("en–dash em—dash", ["en-dash", "en", "dash", "em-dash", "em", "dash"]),
    ("-leading trailing- --", ["leading", "trailing"]),
    ("a--b", ["a--b", "a", "b"]),
    ("don’t", ["don't"]),
    ("ﬁle ＡＢＣ", ["file", "abc"]),
    ("… — ! ?", []),
    ("", []),
    ("$100 c++ #tag", ["100", "c", "tag"]),
    ("e.g. U.S.A.", ["e.g", "u.s.a"]),
]


@pytest.mark.parametrize(("text", "expected"), PLAIN_CASES)
def test_plain_rules(text: str, expected: list[str]) -> None:
    assert PLAIN(text) == expected


def test_default_pipeline_stems_and_drops_stopwords() -> None:
    assert tokenize("Ploinky’s sandbox-runtime") == ["ploinki", "sandbox-runtim", "sandbox", "runtim"]
    assert tokenize("The cats are running in the gardens") == ["cat", "run", "garden"]
    # a stopword part is dropped but the whole hyphenated word is kept
    assert tokenize("state-of-the-art") == ["state-of-the-art", "state", "art"]


def test_groups_keep_each_word_together() -> None:
    tok = Tokenizer()
    text = "The state-of-the-art wing-body tests, 2024-01-01 and-or x-15"
    groups = tok.groups(text)
    assert groups == [
        ("state-of-the-art", "state", "art"),
        ("wing-bodi", "wing", "bodi"),
        ("test",),
        ("2024-01-01",),
        ("and-or",),  # both parts are stopwords: no compound left
        ("x-15", "x", "15"),
    ]
    assert [t for g in groups for t in g] == tok(text)


def test_a_hyphenated_stopword_goes_with_its_parts() -> None:
    tok = Tokenizer(stem=False, stopwords=["e-mail", "the"])
    assert tok("e-mail the e-books") == ["e-books", "e", "books"]
    assert tok.groups("e-mail") == []


@pytest.mark.parametrize("variant", ["Ploinky's", "Ploinky’s", "ploinky", "PLOINKY'S", "(Ploinky’s)"])
def test_possessive_variants_are_one_term(variant: str) -> None:
    assert tokenize(variant) == ["ploinki"]


def test_stopwords_are_the_documented_list() -> None:
    assert "the" in DEFAULT_STOPWORDS and "with" in DEFAULT_STOPWORDS
    assert len(DEFAULT_STOPWORDS) == 93 and {"what", "must", "its"} <= DEFAULT_STOPWORDS
    assert Tokenizer(stopwords=[])("the") == ["the"]
    assert Tokenizer(stopwords=["Nginx"])("nginx uses openssl") == ["use", "openssl"]
    # other languages have no default list
    assert Tokenizer(language="french").stopwords == frozenset()


def test_language_selectable() -> None:
    assert Tokenizer(language="german")("Häuser") == ["haus"]
    assert Tokenizer(language="french")("continuellement") == ["continuel"]


def test_unknown_language_lists_available() -> None:
    with pytest.raises(UnknownLanguageError) as info:
        Tokenizer(language="klingon")
    message = str(info.value)
    assert "klingon" in message and "english" in message and "german" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, LexicalError)


@pytest.mark.parametrize("bad", [{"stem": "yes"}, {"stopwords": "the a"}])
def test_bad_parameters(bad: dict) -> None:
    with pytest.raises(ParameterError):
        Tokenizer(**bad)


def test_non_str_text_refused() -> None:
    with pytest.raises(TypeError):
        tokenize(b"bytes")  # type: ignore[arg-type]


def test_params_round_trip_json() -> None:
    tok = Tokenizer(language="english", stem=False, stopwords=["b", "a"])
    record = json.loads(json.dumps(tok.params()))
    assert record["stopwords"] == ["a", "b"]
    assert Tokenizer.from_params(record) == tok
    assert Tokenizer.from_params(record) != Tokenizer()


def test_cache_does_not_change_results() -> None:
    tok = Tokenizer()
    first = tok("Running runners ran; running!")
    assert tok("Running runners ran; running!") == first == ["run", "runner", "ran", "run"]


@given(st.text(max_size=60))
def test_deterministic_and_clean(text: str) -> None:
    terms = Tokenizer()(text)
    assert terms == Tokenizer()(text)
    for term in terms:
        assert term and not any(c.isspace() for c in term)
        assert term == term.lower() or not term.isascii()


@given(st.lists(st.text(alphabet="abcdeé-’'s.,!", min_size=1, max_size=8), max_size=8))
def test_tokens_of_words_concatenate(words: list[str]) -> None:
    tok = Tokenizer()
    assert tok(" ".join(words)) == [t for w in words for t in tok(w)]


def test_exported_members() -> None:
    names = {n for n in dir(lexical) if not n.startswith("_")}
    modules = {"errors", "tokenizer", "index", "scoring", "persist", "segment", "values", "search", "store", "strings"}
    assert set(lexical.__all__) == names - modules


def test_doctests_of_the_package() -> None:
    import importlib
    import pkgutil

    failures = 0
    for info in pkgutil.iter_modules(lexical.__path__):
        module = importlib.import_module(f"lexical.{info.name}")
        failures += doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed
    failures += doctest.testmod(lexical).failed
    assert failures == 0


@given(st.lists(st.text(alphabet="ab1.,-'’–()\"«»:;!?/_xé#$+", min_size=1, max_size=9), max_size=20))
def test_a_words_key_has_its_terms(words: list[str]) -> None:
    tok = Tokenizer()
    keys = tok.word_keys(words)
    assert tok.analyze_words(keys, remember=False) == tok.analyze_words(words, remember=False)
    assert len(set(keys)) <= len(set(words))
