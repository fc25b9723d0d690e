"""A reader sees what another writer committed (issue 20, found by the store round-trip hunt: random
ingest / add_facts / retract / reopen / second-writer sequences through ``KnowledgeBase`` against an
oracle of the live sources' facts).

A ``KnowledgeBase`` opened on a path with no store yet reads a private, not yet published file (the
store appears at ``path`` only with its first commit: thinkingdb.store.locking). When another handle or
process creates the store there meanwhile, the first handle's questions must read that store, not its
own empty file forever.
"""

from __future__ import annotations

from thinkingdb.api import KnowledgeBase


def test_a_reader_opened_before_the_store_existed_sees_another_writers_facts(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    reader = KnowledgeBase(path)                 # no store there yet: e.g. a server started on a new path
    writer = KnowledgeBase(path)
    writer.add_facts([("a", "depends_on", "b")])   # the first commit publishes the store at path
    writer.close()
    try:
        # by hand: the store holds one fact, a depends_on b; the reader has written nothing
        assert [a.bindings for a in reader.query("? a depends_on ?x.").answers] == [{"x": "b"}]
        assert len(reader.graph) == 1
    finally:
        reader.close()


def test_a_reader_of_an_existing_store_sees_another_writers_facts(tmp_path):
    # the same sequence once the store exists at path: the reader sees the write (the generation moved)
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as first:
        first.add_facts([("z", "links", "y")])
    reader = KnowledgeBase(path)
    assert reader.query("? a depends_on ?x.").answers == []
    writer = KnowledgeBase(path)
    writer.add_facts([("a", "depends_on", "b")])
    writer.close()
    try:
        assert [a.bindings for a in reader.query("? a depends_on ?x.").answers] == [{"x": "b"}]
        assert len(reader.graph) == 2
    finally:
        reader.close()
