"""Upgrade gates: preconditions, the Upgradeable aggregation, OperatorConditions under OLM's rules.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
