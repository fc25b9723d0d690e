"""Shared test settings: one hypothesis profile for the whole suite (STYLE 12)."""

import os
from unittest import mock

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=60, derandomize=True)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=1000)
# hunting latent disagreements (issue 20): ten times every test's examples, its own @settings included
# (a profile alone cannot raise those); run with different --hypothesis-seed values
settings.register_profile("hunt", parent=settings.get_profile("default"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))
HUNT = 10


def pytest_collection_modifyitems(items):
    """Under the ``hunt`` profile, each hypothesis test runs ``HUNT`` times its own max_examples."""
    current = getattr(settings, "get_current_profile_name", lambda: settings._current_profile)()
    if current != "hunt":   # (HYPOTHESIS_PROFILE=hunt or --hypothesis-profile=hunt)
        return
    done = set()
    for item in items:
        fn = getattr(item, "obj", None)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if own is not None and id(fn) not in done:
            done.add(id(fn))
            fn._hypothesis_internal_use_settings = settings(own, max_examples=own.max_examples * HUNT)


@pytest.fixture(autouse=True, scope="session")
def numpy_engines_on_small_inputs():
    """Almost every test's input is small; the engines they compare with the reference engine are the
    columnar and fast-path ones, so ``closure()`` does not try the reference engine first on small
    inputs here (seminaive.SMALL_FACTS = -1). tests/test_closure_small.py turns it on; a fresh process
    (the CLI tests' subprocesses) has the shipped thresholds."""
    from thinkingdb.engine import seminaive
    with mock.patch.object(seminaive, "SMALL_FACTS", -1):
        yield


def pytest_terminal_summary(terminalreporter):
    """The datalog-conformance counts per category (tests/test_conformance.py), when it ran here."""
    import sys
    module = sys.modules.get("test_conformance")
    counts = getattr(module, "COUNTS", None)
    if not counts or not any(c["total"] for c in counts.values()):
        return
    terminalreporter.write_sep("-", "datalog-conformance: expressible / total, passed")
    for category, c in counts.items():
        large = f" ({c['large, not run']} large cases not run)" if c["large, not run"] else ""
        terminalreporter.write_line(f"{category:>10}: {c['expressible']:3d} / {c['total']:3d} expressible, "
                                    f"{c['passed']:3d} passed{large}")


@pytest.fixture(autouse=True, scope="session")
def array_answers_on_small_reach():
    """Most tests' graphs are small; those comparing the array answers (engine/bulk.py, engine/conj.py)
    with the general evaluator must reach the arrays, so the small-reach hand-offs are off here
    (bulk.SMALL_REACH = 0, smallconj.SMALL_CONJ = 0). tests/test_bulk.py, test_smallsource.py and
    test_smallconj.py turn them on where they test them; a fresh process has the shipped values."""
    from thinkingdb.engine import bulk, smallconj
    with mock.patch.object(bulk, "SMALL_REACH", 0), mock.patch.object(smallconj, "SMALL_CONJ", 0):
        yield
