"""hdc public surface: exports, the error tree, import isolation, and the modules' doctests."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

import hdc

HDC_DIR = Path(hdc.__file__).resolve().parent
MODULES = sorted(p.stem for p in HDC_DIR.glob("*.py"))


def test_all_lists_exactly_the_public_names():
    public = {name for name in vars(hdc) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(hdc, name)).__name__ == "module"}
    assert set(hdc.__all__) == public - modules
    assert len(hdc.__all__) == len(set(hdc.__all__))


def test_the_api_other_packages_code_against_is_there():
    for name in ["HDCIndex", "HDCParams", "HDCError", "random_vector", "bind", "bundle", "permute", "similarity", "batch_similarity"]:
        assert name in hdc.__all__
    for method in ["add", "remove", "update", "search", "save", "load", "__len__", "__contains__"]:
        assert callable(getattr(hdc.HDCIndex, method))


def test_error_tree():
    assert issubclass(hdc.HDCError, Exception)
    for exc, builtin in [
        (hdc.DimensionError, ValueError),
        (hdc.IndexFormatError, ValueError),
        (hdc.ParamsError, ValueError),
        (hdc.FieldError, ValueError),
        (hdc.UnknownUnitError, KeyError),
    ]:
        assert issubclass(exc, hdc.HDCError) and issubclass(exc, builtin)
    assert str(hdc.UnknownUnitError("no unit 'x'")) == "no unit 'x'"


@pytest.mark.parametrize("module", MODULES)
def test_hdc_imports_only_numpy_and_the_standard_library(module):
    tree = ast.parse((HDC_DIR / f"{module}.py").read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    assert not roots & {"thinkingdb", "grammar", "lexical"}
    assert roots <= {"numpy", "__future__", "hashlib", "json", "os", "math", "zipfile", "typing", "dataclasses", "functools", "concurrent", "threading"}


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    mod = importlib.import_module(f"hdc.{module}" if module != "__init__" else "hdc")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_user_documentation_examples_run():
    doc = HDC_DIR.parent / "docs" / "hdc.md"
    if not doc.exists():
        pytest.skip("docs/ not shipped with this checkout")
    result = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 5


def test_modules_stay_small():
    for module in MODULES:
        lines = (HDC_DIR / f"{module}.py").read_text(encoding="utf-8").count("\n")
        assert lines < 420, f"hdc/{module}.py has {lines} lines"


def test_py_typed_is_shipped():
    assert (HDC_DIR / "py.typed").exists()
