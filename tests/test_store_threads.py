"""A new store's handle shared by threads (store/sqlite.py ``current_generation``, store/transact.py).

A handle opened on a path with no store yet builds the store in a private file and links it at the
path with its first commit (``_publish``). ``current_generation`` on such a handle adopts a store
another process has published meanwhile. Both swap the handle's connection: a thread asking for the
generation while another thread publishes must wait for it, not read a connection being closed nor
adopt the store under a write that has not committed yet. Each test pauses the writing thread at the
point of the race and lets the reader run there; with the handle's state lock the reader waits until
the write is over (the pause then ends by its timeout), without it the reader runs into the race.
"""

from __future__ import annotations

import os
import threading

import pytest

from thinkingdb.model import Fact
from thinkingdb.store import transact
from thinkingdb.store.sqlite import Store, StoreCreatedElsewhere

PAUSE_S = 0.5   # how long the writer waits for the reader (with the lock the reader cannot run meanwhile)


def _fact(s: str) -> tuple:
    return (Fact(s, "r", "b"), "doc.tdb", 1, None)


def _reader(store: Store, start: threading.Event, done: threading.Event, got: list) -> threading.Thread:
    def run():
        start.wait(10)
        try:
            got.append(store.current_generation())
        except Exception as exc:   # noqa: BLE001 - the race's symptom is what the test reports
            got.append(exc)
        done.set()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_reader_waits_while_the_first_write_publishes_the_store(tmp_path, monkeypatch):
    path = str(tmp_path / "kb.sqlite")
    st = Store(path)
    private = st._pending
    assert private and not os.path.exists(path)
    linked, read, got = threading.Event(), threading.Event(), []
    remove = transact._remove_store_files

    def paused(file: str) -> None:   # _publish has closed the connection and linked the private file at path
        if file == private and not linked.is_set():
            assert os.path.exists(path)
            linked.set()
            read.wait(PAUSE_S)
        remove(file)

    monkeypatch.setattr(transact, "_remove_store_files", paused)
    reader = _reader(st, linked, read, got)
    with st.transaction():
        st.add_facts([_fact("a")])
    reader.join(10)
    assert linked.is_set()
    # generation 1: the published store after its one commit (without the lock: ProgrammingError,
    # "Cannot operate on a closed database", from the connection _publish had closed)
    assert got == [1]
    assert st.file == path and st._pending is None and not os.path.exists(private)
    assert [str(f.triple) for f in st.facts()] == ["a r b"]
    with st.transaction():   # the handle goes on writing the published store
        st.add_facts([_fact("c")])
    assert st.current_generation() == 2
    assert sorted(str(f.triple) for f in st.facts()) == ["a r b", "c r b"]
    st.close()
    assert [n for n in os.listdir(tmp_path) if ".new-" in n] == []   # no private file left behind


def test_a_reader_does_not_adopt_a_store_under_an_uncommitted_first_write(tmp_path, monkeypatch):
    """Another process publishes the path after this handle's writer checked it and before it began:
    the write must end as documented (StoreCreatedElsewhere, nothing of it kept), not be carried into
    the other store without the writer lock by a reader thread adopting that store underneath it."""
    path = str(tmp_path / "kb.sqlite")
    st = Store(path)
    assert st._pending
    ready, read, got = threading.Event(), threading.Event(), []
    writer_lock = transact._writer_lock

    def then_published_elsewhere(store: Store) -> None:
        writer_lock(store)   # a pending store: nothing to lock, the path still free
        if store is st:
            with Store(path) as other:   # "another process" creates the store now
                with other.transaction():
                    other.add_facts([_fact("theirs")])
            ready.set()
            read.wait(PAUSE_S)

    monkeypatch.setattr(transact, "_writer_lock", then_published_elsewhere)
    reader = _reader(st, ready, read, got)
    with pytest.raises(StoreCreatedElsewhere):
        with st.transaction():
            st.add_facts([_fact("ours")])
    reader.join(10)
    assert got == [1]   # the other store's one commit
    with Store(path, readonly=True) as check:
        assert [str(f.triple) for f in check.facts()] == ["theirs r b"]
    assert st.file == path and [str(f.triple) for f in st.facts()] == ["theirs r b"]
    monkeypatch.setattr(transact, "_writer_lock", writer_lock)
    with st.transaction():   # trying again writes into the published store, under its writer lock
        st.add_facts([_fact("ours")])
    assert sorted(str(f.triple) for f in st.facts()) == ["ours r b", "theirs r b"]
    st.close()
