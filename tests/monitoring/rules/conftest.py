"""The shipped alerting rules under promtool (tests/support/promtool.py runs it; a missing promtool fails).

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
