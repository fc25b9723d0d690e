"""Collection settings for the whole repository: the server modules need the optional ``serve`` extra.

Without it their doctests are not collected (their tests in ``tests/`` skip with the reason).
"""

import importlib.util

collect_ignore_glob = []
if any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn", "mcp")):
    collect_ignore_glob += ["thinkingdb/serve/app.py", "thinkingdb/serve/mcp_server.py"]
