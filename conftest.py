"""Settings for the whole repository. The server modules need the optional ``serve`` extra: without it
their doctests are not collected (their tests in ``tests/`` skip with the reason). Temporary files of a
run go under pytest's base directory.
"""

import importlib.util

import pytest

collect_ignore_glob = []
if any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn", "mcp")):
    collect_ignore_glob += ["thinkingdb/serve/app.py", "thinkingdb/serve/mcp_server.py"]


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_under_pytest(tmp_path_factory):
    """Send ``tempfile``'s files (the doctests' ``tempfile.mkdtemp()`` stores) under pytest's own base
    directory, which pytest prunes to the last three runs, instead of leaving them in the system's."""
    import tempfile
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = before
