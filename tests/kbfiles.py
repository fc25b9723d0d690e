"""Building small knowledge bases from unit dictionaries, for the retrieval tests."""

from __future__ import annotations

import json

from thinkingdb.api import KnowledgeBase


def make_kb(tmp_path, units, name="kb") -> KnowledgeBase:
    """Write ``units`` as a JSON Lines file under ``tmp_path`` and ingest it into a new store."""
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    kb = KnowledgeBase(str(tmp_path / f"{name}.sqlite"))
    kb.ingest([str(src)])
    return kb
