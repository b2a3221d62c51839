"""schemathesis hooks: a check that sessions stay isolated.

Loaded through ``SCHEMATHESIS_HOOKS=tests.fuzz.hooks``. Every session id the server hands
out is remembered; a response may name only the session its request was about (its
``session_id`` path parameter, or the one ``POST /sessions`` or a fork just created), never
another.
"""

import re
from typing import Any

import schemathesis

_IDS: set[str] = set()
_ID = re.compile(r'"id"\s*:\s*"([^"]+)"')


@schemathesis.check
def sessions_stay_isolated(ctx: Any, response: Any, case: Any) -> bool | None:
    """No response carries the id of a session other than its own."""
    text = response.text if isinstance(response.text, str) else ""
    own: set[str] = set()
    if case.path_parameters and isinstance(case.path_parameters.get("session_id"), str):
        own.add(case.path_parameters["session_id"])
    # A fork's answer names the new session it made: that one is its own too.
    made = case.path in ("/sessions", "/sessions/{session_id}/fork")
    if case.method.upper() == "POST" and made and response.status_code == 201:
        match = _ID.search(text)
        if match:
            own.add(match.group(1))
            _IDS.add(match.group(1))
    leaked = sorted(i for i in _IDS - own if i in text)
    if leaked:
        raise AssertionError(f"the response names another session: {leaked[0][:6]}…")
    return None
