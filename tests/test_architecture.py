"""The folders are the architecture: layers import downwards only, and no module imports itself
back through a circle (docs/architecture.md).

Every ``import`` is read from the source with :mod:`ast`, including imports inside functions, so
a lazy import cannot hide a circle or an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("thinkingdb", "grammar", "lexical", "hdc")

# Lower number = lower layer. A module may import its own layer or any lower one.
LAYERS = {
    "grammar": 0, "lexical": 0, "hdc": 0,
    "thinkingdb.errors": 1, "thinkingdb.numeric": 1, "thinkingdb.progress": 1, "thinkingdb.values": 1,
    "thinkingdb.model": 2, "thinkingdb.arith": 2, "thinkingdb.normalize": 2, "thinkingdb.stratify": 2, "thinkingdb.language": 3,
    "thinkingdb.engine": 4, "thinkingdb.store": 4,
    "thinkingdb.retrieval": 5,
    "thinkingdb.api": 6, "thinkingdb.spark": 6,
    "thinkingdb.cli": 7, "thinkingdb.serve": 7,
    "thinkingdb": 8,  # the package's __init__: the public surface re-exports everything
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (absolute or relative, at any depth of the file)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                stem = ".".join(anchor + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def import_graph() -> nx.DiGraph:
    mods = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imports_of(name, path, set(mods)):
            # importing a package runs its __init__; a submodule importing its own package's
            # __init__ (for a re-exported name) is not an edge of the layering
            if name.startswith(target + "."):
                continue
            graph.add_edge(name, target)
    return graph


def layer(name: str) -> int:
    probe = name
    while probe not in LAYERS:
        probe = probe.rpartition(".")[0]
        if not probe:
            raise KeyError(f"{name} is in no layer: add it to LAYERS and docs/architecture.md")
    return LAYERS[probe]


def test_every_module_has_a_layer():
    for name in modules():
        layer(name)


def test_no_import_circles():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert circles == []


def test_imports_run_downwards():
    upward = [(a, b) for a, b in import_graph().edges if layer(b) > layer(a)]
    assert upward == []


@pytest.mark.parametrize("leaf", ["grammar", "lexical", "hdc"])
def test_leaves_import_nothing_from_thinkingdb(leaf):
    graph = import_graph()
    bad = [(a, b) for a, b in graph.edges if (a == leaf or a.startswith(leaf + ".")) and b.split(".")[0] != leaf]
    assert bad == []


def test_the_checker_sees_a_circle_and_an_upward_import(tmp_path):
    """The checks above can fail: a made-up pair of modules shows both faults."""
    graph = nx.DiGraph([("thinkingdb.engine.a", "thinkingdb.engine.b"), ("thinkingdb.engine.b", "thinkingdb.engine.a"),
                        ("thinkingdb.engine.a", "thinkingdb.retrieval.pipeline")])
    assert [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1] == [
        ["thinkingdb.engine.a", "thinkingdb.engine.b"]]
    assert [(a, b) for a, b in graph.edges if layer(b) > layer(a)] == [("thinkingdb.engine.a", "thinkingdb.retrieval.pipeline")]


# -- what a cold question loads (issue 20) ------------------------------------------------------------
# A plain question in a fresh process imports only what answering it needs: not numpy (lookups read
# the graph file through memoryviews, thinkingdb.store.columns), not the parser generator (lark: a plain
# question is read by grammar.quick), not the readers of ingest, not the search pipeline (BM25, HDC),
# not networkx, not the HTTP stack, not the closure engines when no rule touches the question.
COLD_FORBIDDEN = ("numpy", "lark", "networkx", "lexical", "hdc", "Stemmer", "pyarrow", "grammar.parser",
                  "thinkingdb.store.ingest", "thinkingdb.store.markdown", "thinkingdb.store.bulk",
                  "thinkingdb.store.tdbfile", "thinkingdb.store.rdf", "thinkingdb.store.jsonl",
                  "thinkingdb.retrieval.pipeline", "thinkingdb.engine.closure", "thinkingdb.engine.joins",
                  "urllib.request", "http.client", "email", "tempfile")
# A plain question (no rule touches it) on a store without units loads less still: not the lanes nor the
# views of restricted units (retrieval, hashlib, threading), not the conjunction engine, not proofs, and
# for a small r+ / r* walk not the array searches (engine.bfs, numpy: bulk.SMALL_REACH).
PLAIN_FORBIDDEN = COLD_FORBIDDEN + ("thinkingdb.retrieval", "thinkingdb.engine.conj", "thinkingdb.engine.proofs",
                                    "thinkingdb.engine.pairs", "thinkingdb.engine.bfs", "thinkingdb.progress",
                                    "hashlib", "threading")

_COLD = """
import json, sys
kind, db = sys.argv[1], sys.argv[2]
if kind == "plain":   # plain questions only: two lookups and a conjunction, their answers read (no proofs)
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(db, default_rules=False) as kb:
        found = [[a.bindings["x"] for a in kb.query("? a r ?x.")], len(kb.query("? ?x r c.").answers),
                 sorted((a.bindings["x"], a.bindings["y"]) for a in kb.query("? a r ?x, ?x r ?y.")),
                 [a.bindings["x"] for a in kb.query("? a r+ ?x.")], len(kb.query("? ?x r* c.").answers)]
elif kind in ("api", "rules"):   # "rules": the default rule library read (without lark) and in force
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(db, default_rules=kind == "rules") as kb:
        found = [len(kb.query("? a r ?x.").answers), len(kb.query("? ?x r+ c, a r ?y.").answers),
                 kb.why("a r b") is not None, len(kb.rules) > 0]
elif kind == "transitive":   # the default rules make depends_on transitive: small single-source questions
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(db) as kb:
        found = [[a.bindings["x"] for a in kb.query("? a depends_on ?x.")],
                 [a.bindings["x"] for a in kb.query("? ?x depends_on d.")],
                 [a.bindings["x"] for a in kb.query("? b depends_on+ ?x.")], len(kb.query("? ?x depends_on* d.").answers),
                 [str(p.conclusion) for p in kb.why("a depends_on d").premises]]
else:
    from thinkingdb.cli.main import main
    found = [main(["query", "--db", db, "? a r ?x.", "--no-default-rules", "--caller-tags", "t"]),
             main(["why", "--db", db, "a r b", "--no-default-rules"])]
print(json.dumps({"found": found, "modules": sorted(sys.modules)}))
"""


def cold_modules(kind: str, db: str) -> tuple[list, set[str]]:
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _COLD, kind, db], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["found"], set(got["modules"])


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    from thinkingdb.api import KnowledgeBase
    path = str(tmp_path_factory.mktemp("cold") / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "r", "b"), ("b", "r", "c"), ("a", "r", "c")])
        len(kb.graph)   # the graph file is written, as any earlier question would have
    return path


@pytest.mark.parametrize("kind, want", [("api", [2, 4, True, False]), ("rules", [2, 4, True, True]), ("cli", [0, 0])])
def test_a_cold_question_loads_no_heavy_module(small_store, kind, want):
    found, mods = cold_modules(kind, small_store)
    assert found == want                                  # the questions were answered
    assert "thinkingdb.engine.query" in mods              # the oracle reads real imports
    heavy = sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in COLD_FORBIDDEN))
    assert heavy == []


def test_a_cold_plain_question_loads_only_the_lookup_path(small_store):
    found, mods = cold_modules("plain", small_store)
    assert found == [["b", "c"], 2, [["b", "c"]], ["b", "c"], 3]   # a r b, a r c, b r c: hand-counted
    assert {"thinkingdb.engine.query", "thinkingdb.engine.bulk"} <= mods   # the oracle reads real imports
    heavy = sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in PLAIN_FORBIDDEN))
    assert heavy == []


# a question over a relation the rules close (transitive) whose constant reaches few symbols: the
# single-source search in pure Python (engine/smallsource.py), not the numpy one (engine/reach.py, bfs)
SMALL_TRANSITIVE_FORBIDDEN = ("numpy", "lark", "networkx", "thinkingdb.engine.reach", "thinkingdb.engine.bfs",
                              "thinkingdb.engine.transitive", "thinkingdb.engine.conj")


def test_a_cold_small_transitive_question_loads_no_numpy(tmp_path):
    from thinkingdb.api import KnowledgeBase
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "depends_on", "b"), ("b", "depends_on", "c"), ("c", "depends_on", "d")])
        len(kb.graph)
    found, mods = cold_modules("transitive", path)
    # a reaches b, c, d; d is reached from a, b, c; the walk a b c d split in the middle: a..c, c..d
    assert found == [["b", "c", "d"], ["a", "b", "c"], ["c", "d"], 4, ["a depends_on c", "c depends_on d"]]
    assert {"thinkingdb.engine.closure", "thinkingdb.engine.smallsource"} <= mods   # the oracle reads real imports
    heavy = sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in SMALL_TRANSITIVE_FORBIDDEN))
    assert heavy == []
