"""The coding-memory development benchmark (see `run.py`)."""
