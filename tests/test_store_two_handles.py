"""Two stores open on one file in one process: opening (and closing) the second keeps the first one's
SQLite locks (store/locking.py: closing any descriptor of a file drops every POSIX lock the process
holds on it). store/sqlite.py reads the file's header through a descriptor the process holds already."""

from __future__ import annotations

import subprocess
import sys

import pytest

from thinkingdb.model import Fact
from thinkingdb.store.sqlite import Store

_SHARED_PROBE = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0x40000002, 510, 0))
print(struct.unpack("hhqqi", got)[0] != fcntl.F_UNLCK)
"""


def _shared_lock_held(path: str) -> bool:
    """Whether some process holds SQLite's shared lock on ``path`` (PENDING_BYTE + 2, 510 bytes), asked
    from another process (F_GETLK does not report the asking process's own locks)."""
    out = subprocess.run([sys.executable, "-c", _SHARED_PROBE, path], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX advisory locks")
def test_opening_a_second_store_keeps_the_first_one_s_sqlite_lock(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with Store(path) as st:
        with st.transaction():
            st.add_facts([(Fact("a", "r", "b"), "doc.tdb", 1, None)])
    first = Store(path)
    with first.reading():
        assert first.current_generation() == 1
        assert _shared_lock_held(path)          # the first store's read transaction
        second = Store(path)                    # reads the header of the file the first one holds
        assert _shared_lock_held(path)          # before: dropped by closing the header's descriptor
        second.close()
        assert _shared_lock_held(path)
    first.close()
    assert not _shared_lock_held(path)          # the probe sees a lock only while one is held
