"""The dry run: plans, their cache, and lint.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
