"""The state file (store/statefile.py) against SQLite: a question answered from ``kb.sqlite.state`` must
answer as one read from SQLite alone. The oracle is ``KnowledgeBase(path, graph_file=False)`` (no graph
file, so no state file: every row read from SQLite now); the handles checked are a fresh one (its first
question reads SQLite and writes the state file), a second fresh one (answered from the state file when it
is current) and a handle opened earlier. Writes come from this process, from a worker process (whose log
stays unmerged while it keeps its handle open) and from SQLite alone (the sqlite3 module, bumping nothing).

The tests before the differential one are the minimal cases of the bugs it and a review found, each
failing before its fix, with values worked by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.errors import StoreError
from thinkingdb.store import statefile
from thinkingdb.store.graphfile import store_stamp
from thinkingdb.store.sqlite import Store
from thinkingdb.store.statefile import read_state, state_path

ROOT = Path(__file__).resolve().parent.parent


def xs(kb, text: str) -> list[str]:
    return sorted(a.bindings["x"] for a in kb.query(text))


@pytest.fixture
def store(tmp_path):
    """A store of ``a r b.`` whose state file is current (its first question wrote it)."""
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_text("a r b.\n", source="f.tdb")
    with KnowledgeBase(path) as kb:
        assert xs(kb, "? a r ?x.") == ["b"]
    assert read_state(path) is not None
    return path


def write_in_another_process(path: str, text: str, source: str) -> None:
    code = ("import sys; from thinkingdb.api import KnowledgeBase\n"
            "with KnowledgeBase(sys.argv[1]) as kb: kb.add_text(sys.argv[2], source=sys.argv[3])")
    subprocess.run([sys.executable, "-c", code, path, text, source], check=True, cwd=ROOT)


# -- the minimal cases -------------------------------------------------------------------------------------

def test_a_commit_merged_between_the_two_stats_is_seen(store):
    """still_current read the store file, then the log: a writer that committed before the question and
    merged its log in between (its close) left the old file's key and no log, and the question answered
    without its commit. Its merge is run between the stats here by wrapping the log's stat."""
    h = KnowledgeBase(store)
    writer = KnowledgeBase(store)
    try:
        assert xs(h, "? a r ?x.") == ["b"] and not h.store.connected
        writer.add_facts([("a", "r", "c")])   # committed: in the writer's log until it closes
        assert os.path.getsize(store + "-wal") > 0
        real = statefile._log_empty

        def log_empty(path):
            if not writer.store._closed:
                writer.close()   # the last connection: its log merged into the store file and removed
            return real(path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(statefile, "_log_empty", log_empty)
            assert xs(h, "? a r ?x.") == ["b", "c"]
    finally:
        writer.close()
        h.close()


def test_save_records_no_rows_a_program_changed_while_it_read(store):
    """save took the store file's key after reading the rows: a program writing without the writer lock
    (an alias added with the sqlite3 module, its log merged) between the two left the old rows under the
    new file's key, and every later question parsed without the alias."""
    os.remove(state_path(store))
    st = Store(store)
    try:
        with st.reading():
            stamp = store_stamp(st)
        reading = st.reading

        @contextmanager
        def reading_then_a_foreign_write():
            with reading():
                yield
            conn = sqlite3.connect(store)
            conn.execute("INSERT INTO aliases VALUES ('goes_to', 'r', 1, 1)")
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
        st.reading = reading_then_a_foreign_write
        statefile.save(st, stamp)
    finally:
        st.close()
    with KnowledgeBase(store) as kb:
        assert xs(kb, "? a goes_to ?x.") == ["b"]
