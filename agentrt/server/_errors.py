"""The one JSON form of every error answer of the server.

``{"error": {"code": "...", "message": "..."}}`` (plus ``details`` for a request that
failed validation), encoded by :func:`error_body` alone: the app's endpoints and the
middleware in front of them (security, limits) answer byte for byte alike, so a
client parses one format whatever refused it.
"""

import json
from collections.abc import Sequence

__all__ = ("ERROR_MEDIA_TYPE", "error_body")

ERROR_MEDIA_TYPE = "application/json"


def error_body(code: str, message: str, details: Sequence[object] | None = None) -> bytes:
    """The body of an error answer.

    Args:
        code: The machine-readable code (``session_not_found``).
        message: What happened, for a person.
        details: The validation errors, when there are any.
    """
    error: dict[str, object] = {"code": code, "message": message}
    if details is not None:
        error["details"] = list(details)
    # json.dumps' defaults (", " and ": " separators, ASCII escapes): the form the
    # ASGI middleware has always written, kept so existing clients see no change.
    return json.dumps({"error": error}).encode()
