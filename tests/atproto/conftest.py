"""The AT Protocol tests use the session's local network from `tests/conftest.py`."""
