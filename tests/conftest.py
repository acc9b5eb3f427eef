"""Hypothesis profiles for tests/property (registered here, at the root, so that
`--hypothesis-profile=NAME` works whichever folder pytest is given).

  ci   (default): a fixed seed (derandomize) and few examples, so CI runs the same sample of
       cases every time, in about two minutes on two cores for the whole folder;
  full: many random examples, for a long hunt: `pytest tests/property --hypothesis-profile=full`.
"""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=20, deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "full", max_examples=1000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ci")


def pytest_sessionfinish(session, exitstatus):
    """Stop the shared Chromium (and remove its temporary folder) in every process that ran
    tests: xdist's workers leave without running atexit handlers."""
    import sys

    chromium = sys.modules.get("converter.runtimes.chromium")
    if chromium is not None:
        chromium.close_browser()
