"""The sync worker: apply, waits, the status writer's report, the one decision, bootstrap, the events catalogue.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
