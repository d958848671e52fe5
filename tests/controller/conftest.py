"""cvo run: the loop, the lease, the controller's client, its wiring and its processes.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
