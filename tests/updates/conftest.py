"""The update graph: the graph's reader, the update-service client, condition registries, the evaluation
of conditional updates (Recommended) and the feature gates that shape what is written.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
