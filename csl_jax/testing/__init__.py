"""Importable helpers for tests: hypothesis strategies, a toy language, files.

Only tests and benchmarks import this package; fixtures that need pytest
live in tests/conftest.py.
"""
