"""The bounded fuzz properties (make fuzz runs them longer) and the input limits they found.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
