"""Reading a release: the YAML/JSON decoder, templates, the loader and its cache, filters, the task graph, the real corpus.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
