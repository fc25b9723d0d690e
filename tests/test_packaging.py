"""Packaging: what a pip user gets (every package of the tree, the metadata) and a fast ``--help``
(no parser, engine or numeric library is imported to print it)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_of_the_tree_is_installed():
    listed = set(PROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("thinkingdb", "grammar", "lexical", "hdc")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set()
    assert listed - found == set()


def test_metadata_names_license_python_and_topics():
    project = PROJECT["project"]
    classifiers = set(project["classifiers"])
    assert "License :: OSI Approved :: MIT License" in classifiers and (ROOT / "LICENSE").is_file()
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8") or \
        "Permission is hereby granted" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert f"Programming Language :: Python :: {project['requires-python'].lstrip('>=')}" in classifiers
    assert any(c.startswith("Topic :: ") for c in classifiers)
    assert project["scripts"]["thinkingdb"] == "thinkingdb.cli:run"


HEAVY = ("lark", "numpy", "networkx", "Stemmer", "pyoxigraph", "lexical", "hdc", "grammar.parser",
         "thinkingdb.engine", "thinkingdb.retrieval", "thinkingdb.api")


def test_help_imports_no_parser_engine_or_numpy():
    """``thinkingdb --help`` through the console entry point, its imports read from ``-X importtime``."""
    code = "from thinkingdb.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert "usage: thinkingdb" in out.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "thinkingdb.cli.main" in imported          # the oracle reads real imports
    heavy = sorted(m for m in imported if m.startswith(HEAVY) and m.split(".")[0] in {h.split(".")[0] for h in HEAVY}
                   and any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []
