"""What a missing reference means for the tests: a skip on a developer's
machine, a failure where references are required (GOLDTRACE_REQUIRE_REFERENCE=1,
which `make test` sets, or CI=true). A broken jax install must turn the suite
red, never leave it green with most tests skipped."""

import importlib
import os

import pytest


def required():
    """Whether missing references (and skips of any kind) fail the run."""
    return os.environ.get("GOLDTRACE_REQUIRE_REFERENCE") == "1" or os.environ.get("CI", "").lower() == "true"


def require(module):
    """Imports module; when it is missing, skips the calling test module, or
    (references required) lets the ImportError fail the collection."""
    if required():
        return importlib.import_module(module)
    return pytest.importorskip(module)
