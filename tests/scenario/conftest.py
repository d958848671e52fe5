"""Scenario files replayed as tests.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
