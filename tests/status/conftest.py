"""ClusterVersion status, the text views, oc's upgrade status (goldens), the forecast and the update records.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
