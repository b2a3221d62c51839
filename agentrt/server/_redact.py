"""Secrets kept out of the server's logs: session ids, tokens, confirmation payloads.

uvicorn's access log writes each request's path and query (``/sessions/<id>/events``):
the session id is the one secret that lets anyone read and drive a session.
:class:`RedactingFilter` rewrites every string argument of a record before it is
formatted: a session id keeps a short prefix (enough to follow one session through the
log), a ``token=`` query value and an ``Authorization`` value are replaced.
"""

import logging
import re

__all__ = ("ACCESS_LOGGER", "RedactingFilter", "install_redaction", "redact")

ACCESS_LOGGER = "uvicorn.access"
"""The logger uvicorn writes access lines to."""

_PREFIX = 6
_SESSION = re.compile(r"(/sessions/)([^/?#\s\"]+)")
_QUERY_SECRET = re.compile(r"(?i)([?&](?:token|access_token|key|api_key)=)[^&#\s\"]*")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"']+")


def _shorten(match: re.Match[str]) -> str:
    value = match.group(2)
    return match.group(1) + (value if len(value) <= _PREFIX else value[:_PREFIX] + "…")


def redact(text: str) -> str:
    """``text`` with session ids cut to a short prefix and tokens replaced."""
    text = _SESSION.sub(_shorten, text)
    text = _QUERY_SECRET.sub(r"\1[redacted]", text)
    return _BEARER.sub(r"\1[redacted]", text)


class RedactingFilter(logging.Filter):
    """Redact every string argument (and the message) of a record (see :func:`redact`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        return True


def install_redaction(*names: str) -> None:
    """Add one :class:`RedactingFilter` to each named logger (once: idempotent)."""
    for name in names or (ACCESS_LOGGER, "uvicorn.error"):
        target = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in target.filters):
            target.addFilter(RedactingFilter())
