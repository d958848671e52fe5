"""cvo's tests, in folders by concern (each with its own conftest.py); shared helpers in tests.support."""
