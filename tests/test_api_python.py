"""The Python API of issue 17: facts from Python without files, networkx in and out, results that
iterate and carry labels, an explicit search signature, and ThinkingDBError for every misuse."""

from __future__ import annotations

import inspect

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb import Fact, IngestError, StoreError, ThinkingDBError, ValidationError, open_kb
from thinkingdb.model import Triple


@pytest.fixture
def kb(tmp_path):
    with open_kb(str(tmp_path / "kb.sqlite")) as kb:
        yield kb


def test_add_facts_from_tuples_and_facts_with_labels_and_provenance(kb):
    assert kb.add_facts([("Nginx", "dependsOn", "Open SSL"), ["Open SSL", "depends_on", "libc", 0.5],
                         Fact("car", "hasPart", "wheel")]) == 3
    assert sorted(kb.store.fact_rows()) == [("car", "has_part", "wheel", 1.0), ("nginx", "depends_on", "open_ssl", 1.0),
                                            ("open_ssl", "depends_on", "libc", 0.5)]
    assert kb.labels()["open_ssl"] == "Open SSL"
    prov = kb.store.provenance(Triple("open_ssl", "depends_on", "libc"))
    assert [(p["source"], p["line"]) for p in prov] == [("<api>", 2)]


def test_add_facts_applies_the_stores_inverses(kb):
    kb.add_text("relation part_of inverse has_part.")
    kb.add_facts([("car", "has part", "wheel")])
    assert kb.store.fact_rows() == [("wheel", "part_of", "car", 1.0)]


@pytest.mark.parametrize("bad,message", [
    ([("a", "r")], "fact 0: expected"), ([("a", "r", "b"), ("a", "r", 3)], "fact 1: expected"),
    ([("a", "r", "b", 2.0)], "fact 0: confidence"), ([("", "r", "b")], "fact 0: empty symbol"),
    ("a r b", "iterable of tuples"), (None, "iterable of tuples"), ([42], "fact 0"),
])
def test_bad_facts_are_refused_and_nothing_is_written(kb, bad, message):
    with pytest.raises(ValidationError, match=message):
        kb.add_facts(bad)
    assert kb.store.fact_rows() == []


def test_add_text_adds_rules_and_declarations_and_replaces_itself(kb):
    text = "relation part_of transitive. wheel part_of car. car part_of fleet."
    assert kb.add_text(text).facts == 2
    kb.add_text(text)  # the same text again: the same source, replaced, not doubled
    assert len(kb.store.sources()) == 1
    assert sorted(a.bindings["x"] for a in kb.query("wheel part_of ?x")) == ["car", "fleet"]
    with pytest.raises(IngestError) as err:
        kb.add_text("a r b.\nthis is not ( valid", source="notes")
    assert err.value.diagnostics[0].source == "notes" and err.value.diagnostics[0].line == 2


def test_results_iterate_have_len_and_labels(kb):
    kb.add_facts([("Nginx", "depends_on", "Open SSL"), ("Open SSL", "depends_on", "GNU libc")])
    result = kb.query("nginx depends_on+ ?x")
    assert len(result) == 2
    # both score 1.0, so the answers come in key order
    assert [(a.bindings["x"], a.labels["x"]) for a in result] == [("gnu_libc", "GNU libc"), ("open_ssl", "Open SSL")]
    assert list(result)[0].to_json()["labels"] == {"x": "GNU libc"}


def test_search_has_an_explicit_signature(kb):
    params = inspect.signature(kb.search).parameters
    assert list(params) == ["text", "profile", "caller", "as_of", "role", "decompose", "alignment", "features"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for name, p in params.items() if name != "text")
    with pytest.raises(TypeError):
        kb.search("x", profle="kb-fast")  # a misspelled option is an error, not silently ignored


@pytest.mark.parametrize("call", [
    lambda kb: kb.query(3), lambda kb: kb.query(None), lambda kb: kb.why(["a", "r", "b"]), lambda kb: kb.search(1),
    lambda kb: kb.add_text(b"a r b."), lambda kb: kb.from_networkx({"a": "b"}), lambda kb: kb.export("xlsx"),
    lambda kb: kb.add_facts([(1, 2, 3)]),
])
def test_wrong_argument_types_raise_thinkingdb_errors(kb, call):
    with pytest.raises(ThinkingDBError):
        call(kb)


@pytest.mark.parametrize("call", [
    lambda kb: kb.query("a r ?x"), lambda kb: kb.why("a r b"), lambda kb: kb.stats(), lambda kb: kb.export("tsv"),
    lambda kb: kb.add_facts([("a", "r", "b")]), lambda kb: kb.add_text("a r b."), lambda kb: kb.labels(),
])
def test_after_close_every_call_raises_a_store_error(tmp_path, call):
    kb = open_kb(str(tmp_path / "kb.sqlite"))
    kb.add_facts([("a", "r", "b")])
    kb.close()
    with pytest.raises(StoreError, match="closed"):
        call(kb)


def test_from_networkx_attributes_keys_and_undirected_graphs(kb):
    g = nx.MultiDiGraph()
    g.add_node(1, label="Node One")
    g.add_edge(1, 2, key="linksTo")
    g.add_edge(2, 3, relation="partOf", confidence=0.5)
    g.add_edge(3, 1)
    u = nx.Graph([("x", "y")])
    assert kb.from_networkx(g) == 3 and kb.from_networkx(u, default_relation="near", source="<u>") == 2
    assert sorted(kb.store.fact_rows()) == [("2", "part_of", "3", 0.5), ("3", "related_to", "node_one", 1.0),
                                            ("node_one", "links_to", "2", 1.0), ("x", "near", "y", 1.0),
                                            ("y", "near", "x", 1.0)]


LABELS = ["Nginx", "Open SSL", "GO:0000001", "ex:Paris", "café", "ÅNGSTRÖM", "x-y z"]


@settings(max_examples=20)
@given(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(["depends_on", "partOf", "ex:knows"]),
                          st.sampled_from(LABELS), st.sampled_from([1.0, 0.5, 0.25])), min_size=1, max_size=10))
def test_to_networkx_then_from_networkx_copies_facts_and_labels(tmp_path_factory, facts):
    d = tmp_path_factory.mktemp("nx")
    with open_kb(str(d / "a.sqlite")) as a, open_kb(str(d / "b.sqlite")) as b:
        a.add_facts(facts)
        g = a.to_networkx()
        # networkx is the oracle: its edges are the store's facts
        assert sorted((s, data["relation"], o, data["confidence"]) for s, o, data in g.edges(data=True)) == \
            sorted(a.store.fact_rows())
        b.from_networkx(g)
        assert sorted(b.store.fact_rows()) == sorted(a.store.fact_rows())
        assert b.labels() == a.labels()
