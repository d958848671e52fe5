"""The layering of the packages, the injectable clock and the logging set-up: what every layer uses.

No fixture of its own: those every folder uses are in tests/conftest.py, plain helpers in tests.support."""
