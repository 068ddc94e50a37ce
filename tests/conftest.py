import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where references are required (GOLDTRACE_REQUIRE_REFERENCE=1, CI=true),
    a skipped test is a failed one: nothing may pass by not running."""
    outcome = yield
    rep = outcome.get_result()
    from reference import required

    if rep.skipped and not hasattr(rep, "wasxfail") and required():
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else rep.longrepr
        rep.outcome = "failed"
        rep.longrepr = f"skipped while references are required (GOLDTRACE_REQUIRE_REFERENCE=1 or CI=true): {reason}"
