"""The small knowledge base the server tests share: public facts, restricted units, and API keys."""

from __future__ import annotations

import json

from thinkingdb.api import KnowledgeBase
from thinkingdb.store.keys import add_key, revoke_key
from thinkingdb.store.sqlite import Store

AS_OF = "2026-03-01"
UNITS = [
    {"id": "flood-rule-v3", "role": "policy", "topic": "Basement flooding claims",
     "claim": "Rule FLD-31: basement flooding from a burst pipe is covered up to the deductible.",
     "acl": ["claims:west"], "region": "WEST", "effective_from": "2026-01-01",
     "triples": [["basement flooding", "covered_by", "rule FLD-31"]]},
    {"id": "flood-rule-v2", "role": "policy", "topic": "Basement flooding claims",
     "claim": "Rule FLD-31: basement flooding is covered only with a sump pump rider.",
     "acl": ["claims:west"], "region": "WEST", "effective_from": "2024-01-01", "effective_to": "2025-12-31"},
    {"id": "gold-override", "role": "policy", "topic": "Gold tier overrides",
     "claim": "Override GLD-9: gold tier customers skip the flooding deductible entirely.",
     "acl": ["audit:gold"], "region": "WEST",
     "triples": [["gold tier", "exempt_from", "flooding deductible"], ["Quarkbox", "provides", "process isolation"]]},
    {"id": "east-rule", "role": "policy", "topic": "Basement flooding east",
     "claim": "Rule FLD-77: eastern basements need a flood survey first.", "region": "EAST"},
    {"id": "ide-profile", "topic": "AchillesIDE workspace", "claim": "AchillesIDE runs cells inside Quarkbox.",
     "triples": [["AchillesIDE", "uses", "Quarkbox"]]},
    {"id": "isolation-goal", "topic": "Why isolate processes",
     "claim": "Process isolation matters for secure execution.",
     "triples": [["process isolation", "relevant_for", "secure execution"]]},
]
DEPS = "nginx depends_on openssl. openssl depends_on libc.\n"
HIDDEN_FROM_CLERK = {"gold-override", "east-rule"}
# what only the hidden gold-override unit says, as it would appear in an answer
SECRETS = ("gold-override", "gold_tier", "exempt_from", "flooding_deductible", "provides")
CALLERS = {"clerk": (["claims:west"], "WEST"), "auditor": (["claims:west", "audit:gold"], "WEST"),
           "public": ([], ""), "writer": ([], ""), "revoked": (["claims:west"], "WEST")}


def build(tmp_path) -> tuple[str, dict[str, str]]:
    """The store (units and deps.tdb ingested) and one API key per caller of :data:`CALLERS`."""
    units = tmp_path / "units.jsonl"
    units.write_text("".join(json.dumps(u) + "\n" for u in UNITS), encoding="utf-8")
    deps = tmp_path / "deps.tdb"
    deps.write_text(DEPS, encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(db) as kb:
        kb.ingest([str(units), str(deps)])
    tokens = {}
    with Store(db, create=False) as st:
        for name, (tags, region) in CALLERS.items():
            info, tokens[name] = add_key(st, name, tags=tags, region=region, writer=name == "writer")
        revoke_key(st, "revoked")
    return db, tokens
