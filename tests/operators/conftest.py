"""The simulated operators, the operator library, and the sim-operators command.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
