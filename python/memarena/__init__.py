"""memarena's Python side: the pytest memory guard (``pytest -p memarena.pytest``).

The package imports nothing heavy: the plugin loads torch only when the test suite did.
"""
