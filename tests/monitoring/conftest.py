"""The Prometheus client against hostile servers and against Debian's real prometheus (tests.support.prometheus).

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
