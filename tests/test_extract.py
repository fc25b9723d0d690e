"""Free-text extraction: a table of sentences and the fact each must yield (None: no fact)."""

import pytest

from thinkingdb.store.extract import extract, extract_sentence, split_sentences

CASES = [
    # (sentence, expected (subject, relation, object) or None)
    ("nginx uses OpenSSL.", ("nginx", "uses", "OpenSSL")),
    ("The compiler uses an intermediate representation.", ("compiler", "uses", "intermediate representation")),
    ("Many teams use Kafka for streaming.", ("Many teams", "uses", "Kafka")),
    ("Ploinky provides sandboxed agents.", ("Ploinky", "provides", "sandboxed agents")),
    ("nginx depends on OpenSSL.", ("nginx", "depends_on", "OpenSSL")),
    ("Our web servers depend on libc, which is ubiquitous.", ("Our web servers", "depends_on", "libc")),
    ("The wheel is part of the car.", ("wheel", "part_of", "car")),
    ("A wheel is a part of a bicycle.", ("wheel", "part_of", "bicycle")),
    ("Fido is an instance of the class Dog.", ("Fido", "instance_of", "class Dog")),
    ("A cat is a mammal.", ("cat", "is_a", "mammal")),
    ("AchillesIDE is relevant for secure execution.", ("AchillesIDE", "relevant_for", "secure execution")),
    ("Sandboxing helps with isolation.", ("Sandboxing", "relevant_for", "isolation")),
    ("Type hints are useful for refactoring.", ("Type hints", "relevant_for", "refactoring")),
    ("The kernel supports namespaces.", ("kernel", "supports", "namespaces")),
    ("WebAssembly enables portable sandboxes.", ("WebAssembly", "supports", "portable sandboxes")),
    ("The report mentions Kubernetes.", ("report", "mentions", "Kubernetes")),
    ("This chapter is about garbage collection.", ("chapter", "about", "garbage collection")),
    ("Smoking causes cancer.", ("Smoking", "causes", "cancer")),
    ("The outage triggered a failover.", ("outage", "causes", "failover")),
    ("Memory pressure leads to swapping.", ("Memory pressure", "causes", "swapping")),
    ("The crash was caused by a null pointer.", ("null pointer", "causes", "crash")),
    ("OpenSSL is used by nginx.", ("nginx", "uses", "OpenSSL")),
    # that / the fact that / leading clauses are dropped
    ("Studies show that caffeine causes insomnia.", ("caffeine", "causes", "insomnia")),
    ("The fact that nginx depends on OpenSSL is well known.", ("nginx", "depends_on", "OpenSSL")),
    ("In production, the proxy uses TLS 1.3.", ("proxy", "uses", "TLS 1.3")),
    # abbreviations inside the sentence do not cut it
    ("Dr. Smith uses Lark.", ("Dr. Smith", "uses", "Lark")),
    ("The U.S. Army uses encrypted radios.", ("U.S. Army", "uses", "encrypted radios")),
    ("Rust also provides memory safety.", ("Rust", "provides", "memory safety")),
    ("Postgres can use several indexes.", ("Postgres", "uses", "several indexes")),
    ('"Secure Execution" is relevant for agents.', ("Secure Execution", "relevant_for", "agents")),
    # sentences that must yield nothing
    ("It uses Lark.", None),
    ("They provide nothing useful.", None),
    ("Does nginx use OpenSSL?", None),
    ("nginx does not use OpenSSL.", None),
    ("The service never depends on the cache.", None),
    ("Cats sleep a lot.", None),
    ("The use of tabs.", None),
    ("", None),
    ("This very long subject phrase with many words in it and more words uses X.", None),
]


@pytest.mark.parametrize("sentence,expected", CASES, ids=[c[0][:40] or "empty" for c in CASES])
def test_sentence_table(sentence, expected):
    got = extract_sentence(sentence)
    assert (got[:3] if got else None) == expected


def test_table_is_large_enough():
    assert len(CASES) >= 30 and sum(e is None for _, e in CASES) >= 5


@pytest.mark.parametrize("text,expected", [
    ("Dr. Smith uses Lark. Mr. Jones uses Earley.", ["Dr. Smith uses Lark.", "Mr. Jones uses Earley."]),
    ("We ship e.g. parsers. They work.", ["We ship e.g. parsers.", "They work."]),
    ("Moved to the U.S. in May. Then left.", ["Moved to the U.S. in May.", "Then left."]),
    ("Version 1.2 is out! Really? Yes.", ["Version 1.2 is out!", "Really?", "Yes."]),
    ("See example.com for details. Done", ["See example.com for details.", "Done"]),
    ("J. R. R. Tolkien wrote books. Fine.", ["J. R. R. Tolkien wrote books.", "Fine."]),
    ("Line one\n\nLine two", ["Line one", "Line two"]),
    ("Items:\n- nginx uses TLS\n* Rust provides safety", ["Items:", "nginx uses TLS", "Rust provides safety"]),
    ("Tools, etc. Then more.", ["Tools, etc.", "Then more."]),
])
def test_split_sentences(text, expected):
    assert [s.text for s in split_sentences(text)] == expected


def test_spans_point_into_the_text():
    text = "Intro line. nginx uses OpenSSL.\n\nIt is fast. Rust provides safety."
    facts = list(extract(text))
    assert [(f.subject, f.relation, f.object) for f in facts] == [
        ("nginx", "uses", "OpenSSL"), ("Rust", "provides", "safety")]
    assert [(f.start, f.end) for f in facts] == [(12, 31), (45, 66)]
    for f in facts:
        assert text[f.start:f.end] == f.sentence


def test_object_does_not_swallow_next_sentence():
    facts = list(extract("Alice uses Vim. Bob uses Emacs"))
    assert [(f.subject, f.object) for f in facts] == [("Alice", "Vim"), ("Bob", "Emacs")]


def test_user_phrases_add_and_flip():
    phrases = {"is maintained by": "^maintains", "ships with": "bundles"}
    facts = list(extract("Lark is maintained by Erez. Python ships with pip.", phrases))
    assert [(f.subject, f.relation, f.object) for f in facts] == [
        ("Erez", "maintains", "Lark"), ("Python", "bundles", "pip")]


def test_user_phrase_beats_a_shorter_default():
    got = extract_sentence("The team uses up all the budget.", {"uses up": "consumes"})
    assert got[:3] == ("team", "consumes", "all the budget")
