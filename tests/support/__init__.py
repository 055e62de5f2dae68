"""Helpers shared by unit and integration tests (on pytest's pythonpath as `support`)."""
