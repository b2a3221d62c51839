"""Serve agents over HTTP: sessions, runs as Server-Sent Events, and a web page.

Needs the ``server`` extra (``pip install 'agentrt[server]'``: Starlette, uvicorn and
``ag-ui-protocol``)::

    from agentrt.server import create_app, serve

    app = create_app(lambda: Agent(model=..., tools=[...]))   # any ASGI server
    anyio.run(functools.partial(serve, make_agent, port=8000))   # or uvicorn, here

- :mod:`agentrt.server.app`: the routes (:func:`create_app`), errors as JSON,
  :func:`serve` and :func:`make_server`.
- :mod:`agentrt.server.agui`: ``POST /ag-ui``, the agents for AG-UI frontends (threads,
  frontend tools, confirmations as interrupts); :mod:`agentrt.server.agui_events` tells
  our stream events as AG-UI events.
- :mod:`agentrt.server.sessions`: the session core, written once: a session, its runs,
  readers, answers and cancellation; :mod:`agentrt.server.store` its store
  (:class:`SessionStore`: sessions made, found, deleted, expired; the runs' task group);
  :mod:`agentrt.server.session_errors` the errors of the session layer.
- :mod:`agentrt.server.backend`: the seams under the core (the event log, where sessions
  live, what launches and recovers a run, where answers wait), implemented by
  :mod:`agentrt.server.memory` (this process) and :mod:`agentrt.server.durable`
  (``agentrt[durable]``: SQLite or Postgres, ``create_app(..., storage="sqlite:///PATH")``:
  runs that survive a crash, any process serving any session).
- :mod:`agentrt.server.security`: Host, Origin, token and CORS checks before every route.
- :mod:`agentrt.server.limits`: caps on runs, event streams and message size.
- :mod:`agentrt.server.openapi`: the OpenAPI document, from the request/response models.

The modules whose names start with ``_`` are the implementation: the ``/sessions``
routes (``_routes``) and what every route shares (``_http``, ``_errors``), a session's
events in the store (``_runlog``) and its tables (``_storage``), session ids and tokens
kept out of the logs (``_redact``), and the built-in web page served at ``/``
(``page.html``, with its libraries and CSP: ``_webpage``).
"""

try:
    import ag_ui as _ag_ui  # noqa: F401
    import starlette as _starlette  # noqa: F401
    import uvicorn as _uvicorn  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"agentrt.server needs the server extra ({error.name} is missing): "
        "pip install 'agentrt[server]'"
    ) from error

from agentrt.server.app import DEFAULT_HEARTBEAT_INTERVAL as DEFAULT_HEARTBEAT_INTERVAL
from agentrt.server.app import DEFAULT_MAX_BODY_SIZE as DEFAULT_MAX_BODY_SIZE
from agentrt.server.app import AgentServer as AgentServer
from agentrt.server.app import InsecureBindError as InsecureBindError
from agentrt.server.app import create_app as create_app
from agentrt.server.app import make_server as make_server
from agentrt.server.app import serve as serve
from agentrt.server.limits import ServerLimits as ServerLimits
from agentrt.server.security import SecurityPolicy as SecurityPolicy
from agentrt.server.session_errors import CannotForkError as CannotForkError
from agentrt.server.session_errors import UnknownEventError as UnknownEventError
from agentrt.server.sessions import AlreadyAnsweredError as AlreadyAnsweredError
from agentrt.server.sessions import NoRunError as NoRunError
from agentrt.server.sessions import Run as Run
from agentrt.server.sessions import RunEndedError as RunEndedError
from agentrt.server.sessions import RunInProgressError as RunInProgressError
from agentrt.server.sessions import Session as Session
from agentrt.server.sessions import SessionError as SessionError
from agentrt.server.sessions import SessionLimitError as SessionLimitError
from agentrt.server.sessions import SessionNotFoundError as SessionNotFoundError
from agentrt.server.sessions import StoreFailedError as StoreFailedError
from agentrt.server.sessions import StoreNotRunningError as StoreNotRunningError
from agentrt.server.store import AgentFactory as AgentFactory
from agentrt.server.store import SessionStore as SessionStore

__all__ = (
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_MAX_BODY_SIZE",
    "AgentFactory",
    "AgentServer",
    "AlreadyAnsweredError",
    "CannotForkError",
    "InsecureBindError",
    "NoRunError",
    "Run",
    "RunEndedError",
    "RunInProgressError",
    "SecurityPolicy",
    "ServerLimits",
    "Session",
    "SessionError",
    "SessionLimitError",
    "SessionNotFoundError",
    "SessionStore",
    "StoreFailedError",
    "StoreNotRunningError",
    "UnknownEventError",
    "create_app",
    "make_server",
    "serve",
)
