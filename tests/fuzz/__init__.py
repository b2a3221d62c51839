"""Fuzzing the HTTP API with schemathesis (``nox -s fuzz``)."""
