"""The cluster seam: protocols and interceptors, retries, the informer, the embedded server and its store, saved objects.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
