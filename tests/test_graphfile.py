"""The persistent graph file beside the store (docs/storage.md): round trip, staleness, foreign and
corrupt files, and the mapped FactGraph against plain dicts."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.engine.graph import FactGraph
from thinkingdb.errors import StoreError
from thinkingdb.model import Fact, Triple
from thinkingdb.store import Store
from thinkingdb.store import graphfile as gf

FACTS = """\
nginx depends_on openssl.
nginx depends_on zlib @0.5.
openssl depends_on libc @0.8.
"Ünïcode key" uses nginx.
zlib uses libc @0.25.
"""


def make_kb(tmp_path, text=FACTS, name="kb.sqlite", **kw) -> KnowledgeBase:
    src = tmp_path / f"{name}.tdb"
    src.write_text(text, encoding="utf-8")
    kb = KnowledgeBase(str(tmp_path / name), **kw)
    kb.ingest([str(src)])
    return kb


def test_round_trip_by_hand(tmp_path):
    kb = make_kb(tmp_path)
    g = kb.graph
    assert g.is_mapped and g.source == str(tmp_path / "kb.sqlite.graph")
    assert list(g._syms) == ["libc", "nginx", "openssl", "zlib", "ünïcode_key"]   # sorted: id = rank
    assert g.objects("nginx", "depends_on") == {"openssl": 1.0, "zlib": 0.5}
    assert g.subjects("uses", "libc") == {"zlib": 0.25}
    assert g.subjects("uses", "nginx") == {"ünïcode_key": 1.0}
    assert g.confidence(Triple("openssl", "depends_on", "libc")) == 0.8
    assert g.confidence(Triple("libc", "depends_on", "openssl")) is None
    assert g.objects("nobody", "depends_on") == {} and g.objects("nginx", "no_relation") == {}
    assert len(g) == 5 and g.relations() == ["depends_on", "uses"]
    assert sorted(f.triple for f in g.facts()) == sorted(f.triple for f in kb.store.facts())
    kb.close()


def test_mapped_graph_answers_as_the_in_memory_one(tmp_path):
    text = FACTS + "relation uses transitive.\nrule r @0.9: ?x depends_on ?y, ?y uses ?z => ?x touches ?z.\n"
    kb = make_kb(tmp_path, text)
    mem = KnowledgeBase(str(tmp_path / "kb.sqlite"), graph_file=False)
    assert kb.graph.is_mapped and not mem.graph.is_mapped
    for q in ("? nginx depends_on+ ?x.", "? ?x touches ?y.", "? ?x uses ?y, ?y depends_on ?z.", "? ?a ^uses ?b."):
        got = [(a.bindings, a.score) for a in kb.query(q).answers]
        assert got == [(a.bindings, a.score) for a in mem.query(q).answers], q
    assert kb.why("nginx touches libc").to_json() == mem.why("nginx touches libc").to_json()
    # by hand: nginx depends_on zlib @0.5, zlib uses libc @0.25, weight 0.9
    assert kb.why("nginx touches libc").score == pytest.approx(0.9 * 0.5 * 0.25)
    kb.close()
    mem.close()


def test_the_write_keeps_the_file_current(tmp_path):
    from thinkingdb.store import graphdelta as gd
    kb = make_kb(tmp_path)
    path = tmp_path / "kb.sqlite.graph"
    before = gf.open_graph(str(path))
    assert before is not None and before.stamp == gf.store_stamp(kb.store)
    src = tmp_path / "more.tdb"
    src.write_text("libc depends_on kernel.\n")
    kb.ingest([str(src)])
    # current after the write, nobody read yet: the same base and a delta leading to the new stamp
    after = gd.open_current(str(tmp_path / "kb.sqlite"), gf.store_stamp(kb.store))
    assert after is not None and after.stamp == before.stamp and after.overlay.n_facts == 6
    assert kb.graph.objects("libc", "depends_on") == {"kernel": 1.0}
    kb.close()


def test_another_process_write_is_seen(tmp_path):
    kb = make_kb(tmp_path)
    assert kb.graph.objects("libc", "depends_on") == {}
    src = tmp_path / "other.tdb"
    src.write_text("libc depends_on kernel @0.7.\n")
    code = textwrap.dedent(f"""
        from thinkingdb.api import KnowledgeBase
        with KnowledgeBase({str(tmp_path / 'kb.sqlite')!r}, graph_file=False) as kb:   # leaves the file stale
            kb.ingest([{str(src)!r}])
    """)
    subprocess.run([sys.executable, "-c", code], check=True)
    stale = gf.open_graph(str(tmp_path / "kb.sqlite.graph"))
    assert stale is not None and stale.stamp != gf.store_stamp(kb.store)   # the file on disk is the old one
    assert gf.open_graph(str(tmp_path / "kb.sqlite.graph"), gf.store_stamp(kb.store)) is None
    assert [a.bindings["x"] for a in kb.query("? libc depends_on ?x.").answers] == ["kernel"]
    assert kb.graph.confidence(Triple("libc", "depends_on", "kernel")) == 0.7
    assert gf.open_graph(str(tmp_path / "kb.sqlite.graph"), gf.store_stamp(kb.store)) is not None
    kb.close()


def test_a_foreign_file_is_not_trusted(tmp_path):
    """Another store's graph file, with the same generation and fact count, put beside this store."""
    a = make_kb(tmp_path, "a r b.\n", name="a.sqlite")
    b = make_kb(tmp_path, "c r d.\n", name="b.sqlite")
    assert gf.store_stamp(a.store).generation == gf.store_stamp(b.store).generation
    b.close()
    os.replace(tmp_path / "a.sqlite.graph", tmp_path / "b.sqlite.graph")
    b = KnowledgeBase(str(tmp_path / "b.sqlite"))
    assert b.graph.objects("c", "r") == {"d": 1.0} and b.graph.objects("a", "r") == {}
    a.close()
    b.close()


def _corrupt(path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "header byte":
        data[40] ^= 0xFF
    elif how == "format version":
        struct.pack_into("<I", data, 8, gf.FORMAT_VERSION + 1)
    elif how == "trailer":
        data[-3] ^= 0xFF
    elif how == "garbage":
        data = bytearray(b"not a graph file at all" * 3)
    elif how == "empty":
        data = bytearray()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "header byte", "format version", "trailer", "garbage", "empty"])
def test_a_corrupt_file_is_rebuilt(tmp_path, how):
    kb = make_kb(tmp_path)
    kb.close()
    path = tmp_path / "kb.sqlite.graph"
    _corrupt(path, how)
    assert gf.open_graph(str(path)) is None
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    assert kb.graph.objects("nginx", "depends_on") == {"openssl": 1.0, "zlib": 0.5}
    assert gf.open_graph(str(path), gf.store_stamp(kb.store)) is not None   # rebuilt in place
    kb.close()


def _offset(g, name: str) -> int:
    """Where array ``name`` starts in the file."""
    base = np.frombuffer(g._buf, np.uint8).__array_interface__["data"][0]
    return g.arrays[name].__array_interface__["data"][0] - base


def test_verify_reads_every_byte(tmp_path):
    kb = make_kb(tmp_path)
    kb.close()
    path = tmp_path / "kb.sqlite.graph"
    g = gf.open_graph(str(path))
    g.verify()
    data = bytearray(path.read_bytes())
    data[_offset(g, "sym_blob")] ^= 0x01   # 'libc' becomes 'mibc'
    del g
    path.write_bytes(bytes(data))
    g = gf.open_graph(str(path))
    assert g is not None   # the constant-time checks cannot see a flipped data bit ...
    with pytest.raises(StoreError, match="checksum"):
        g.verify()        # ... the checksum does


def test_a_row_pointing_outside_the_symbols_is_refused(tmp_path):
    kb = make_kb(tmp_path)
    kb.close()
    path = tmp_path / "kb.sqlite.graph"
    g = gf.open_graph(str(path))
    data = bytearray(path.read_bytes())
    struct.pack_into("<i", data, _offset(g, "out_vals"), 99)   # the first object id of the first row
    path.write_bytes(bytes(data))
    g = gf.open_graph(str(path))
    mapped = FactGraph.mapped(g.arrays, g.relations, g.n_symbols, g.n_facts, g.path)
    with pytest.raises(StoreError, match="corrupt"):
        mapped._out[0].get(int(g.arrays["out_keys"][0]))


def test_adding_to_a_mapped_graph_decodes_it(tmp_path):
    kb = make_kb(tmp_path)
    g = kb.graph
    g.add(Fact("aaa", "depends_on", "nginx", 0.5))
    assert not g.is_mapped and len(g) == 6
    assert g.objects("aaa", "depends_on") == {"nginx": 0.5}
    assert g.objects("nginx", "depends_on") == {"openssl": 1.0, "zlib": 0.5}
    kb.close()


def test_empty_store(tmp_path):
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    assert len(kb.graph) == 0 and kb.query("? ?x r ?y.").answers == []
    kb.close()


keys = st.sampled_from(["a", "b", "c", "dé", "e f", "z", "ab", "a_b"])
facts = st.lists(st.tuples(keys, st.sampled_from(["r", "s", "t"]), keys,
                           st.sampled_from([1.0, 0.5, 0.25, 0.125])), max_size=30)


@settings(max_examples=40)
@given(facts)
def test_mapped_graph_equals_plain_dicts(tmp_path_factory, rows):
    """write_graph + FactGraph.mapped against dicts built here (max confidence per triple)."""
    best: dict[tuple, float] = {}
    for s, r, o, c in rows:
        best[(s, r, o)] = max(c, best.get((s, r, o), 0.0))
    symbols = sorted({k for s, _, o in best for k in (s, o)})
    relations = sorted({r for _, r, _ in best})
    sid, rid = {k: i for i, k in enumerate(symbols)}, {k: i for i, k in enumerate(relations)}
    trip = sorted(best)
    arr = lambda f: np.array([f(t) for t in trip], dtype=np.int64)  # noqa: E731
    path = str(tmp_path_factory.mktemp("g") / "x.graph")
    stamp = gf.Stamp(3, "tok", 9)
    gf.write_graph(path, stamp, symbols, relations, arr(lambda t: sid[t[0]]), arr(lambda t: rid[t[1]]),
                   arr(lambda t: sid[t[2]]), np.array([best[t] for t in trip], dtype=np.float64))
    ga = gf.open_graph(path, stamp)
    ga.verify()
    g = FactGraph.mapped(ga.arrays, ga.relations, ga.n_symbols, ga.n_facts, path)
    assert len(g) == len(best) and g.relations() == relations
    for k in symbols + ["nope", ""]:
        for r in relations:
            assert g.objects(k, r) == {o: c for (s, rr, o), c in best.items() if s == k and rr == r}
            assert g.subjects(r, k) == {s: c for (s, rr, o), c in best.items() if o == k and rr == r}
    assert sorted((f.subject, f.relation, f.object, f.confidence) for f in g.facts()) == \
        sorted((s, r, o, c) for (s, r, o), c in best.items())
    sym_rank, _ = g.ranks()
    assert [sym_rank[i] for i in range(len(symbols))] == list(range(len(symbols)))
    for k in ["", "a", "aa", "c", "zz"]:
        assert g.key_rank(k) == (symbols.index(k) if k in symbols else sum(x < k for x in symbols) - 0.5)


def test_known_symbols_one_by_one_and_all_at_once(tmp_path):
    """Few keys: a binary search each; many: the table decoded once. The same set either way."""
    kb = make_kb(tmp_path)
    g = kb.graph
    assert g.is_mapped
    few = ["nginx", "nobody"]                                   # 2 * 16 > 5 symbols: the decoded table
    many = ["libc", "zlib", "ünïcode_key", "nobody", "Nginx", ""] + [f"x{i}" for i in range(100)]
    assert g.known_symbols(few) == {"nginx"}
    assert g.known_symbols(many) == {"libc", "zlib", "ünïcode_key"}
    assert g.known_symbols(["zlib"]) == {"zlib"}
    big = make_kb(tmp_path, "".join(f"s{i} r o{i}.\n" for i in range(40)), name="big.sqlite").graph
    assert big.is_mapped and len(big._syms) == 80
    assert big.known_symbols(["s3", "q"]) == {"s3"}            # 2 * 16 < 80: one by one
    assert big._syms._all is None                               # the table was not decoded
    assert big.known_symbols([f"s{i}" for i in range(10)] + ["q"]) == {f"s{i}" for i in range(10)}
    assert big._syms._all is not None
    kb.close()


def test_the_prefix_and_trailer_sizes_are_those_of_their_struct_formats():
    import struct
    from thinkingdb.store import graphfile
    assert struct.calcsize(graphfile._PREFIX) == graphfile._PREFIX_SIZE
    assert struct.calcsize(graphfile._TRAILER) == graphfile._TRAILER_SIZE
    packed = struct.pack(graphfile._PREFIX, b"TDBGRAPH", 7, 0xDEADBEEF, 2**40 + 5)
    assert [graphfile._uint(packed, a, b) for a, b in ((8, 12), (12, 16), (16, 24))] == [7, 0xDEADBEEF, 2**40 + 5]
