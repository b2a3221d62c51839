"""``agentrt serve``: check the options and the store, then serve the agent over HTTP.

The server's own modules (starlette, uvicorn, DBOS for a durable store) are imported
here, when the command runs; a missing extra is a usage error that says which to install.
"""

import importlib.util
import math
import sys
from dataclasses import dataclass

import anyio

from agentrt.cli._app import DEFAULT_SERVE_STORE, PROG, UsageError, usage_error
from agentrt.cli._targets import TargetError, load_factory

__all__ = ("ServeSecurity", "ServeStore", "serve")


@dataclass(frozen=True, slots=True)
class ServeSecurity:
    """Who may use the server, and how much of it."""

    token: str | None
    allowed_hosts: tuple[str, ...]
    cors_origins: tuple[str, ...]
    insecure: bool
    limits: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class ServeStore:
    """Where sessions live, and for how long."""

    url: str | None
    executor_id: str | None
    session_ttl: float
    max_sessions: int

    def check(self) -> None:
        """Raise UsageError for a lifetime or a cap no server can keep."""
        if not (self.session_ttl > 0 and math.isfinite(self.session_ttl)):
            raise UsageError(
                f"--session-ttl must be a positive number of seconds, got {self.session_ttl:g}"
            )
        if self.max_sessions < 1:
            raise UsageError(f"--max-sessions must be a positive int, got {self.max_sessions}")


def _storage(store: ServeStore) -> str:
    """The store to serve from, checked (raises UsageError when it cannot be used)."""
    url = store.url
    if url is None:
        try:
            import dbos  # noqa: F401
        except ImportError:
            if store.executor_id is not None:
                raise UsageError(
                    "--executor-id needs a durable store: pip install 'agentrt[durable]'"
                ) from None
            sys.stderr.write(
                f"{PROG}: sessions live in memory (pip install 'agentrt[durable]' keeps them "
                "in agentrt.sqlite)\n"
            )
            return "memory"
        url = DEFAULT_SERVE_STORE
    if url == "memory":
        if store.executor_id is not None:
            raise UsageError("--executor-id names a process of a durable store, not of memory")
        return url
    if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise UsageError(
            f"--store must be memory, sqlite:///PATH or postgresql://..., got {url!r}"
        )
    if store.executor_id is not None and not store.executor_id.strip():
        raise UsageError("--executor-id must not be empty")
    try:
        from agentrt.server.durable import check_storage
    except ImportError as error:
        raise UsageError(f"--store {url.split(':')[0]} needs agentrt[durable]: {error}") from None
    from agentrt.durable import StoreUnavailableError

    try:
        check_storage(url)
    except StoreUnavailableError as error:
        raise UsageError(str(error)) from None
    return url


def serve(target: str, host: str, port: int, security: ServeSecurity, store: ServeStore) -> int:
    """``agentrt serve``: run the HTTP server until interrupted; the exit code (0 or 2)."""
    if not 0 <= port <= 65535:
        return usage_error(f"{PROG} serve: --port must be 0 to 65535, got {port}")
    try:
        from agentrt.server import make_server
        from agentrt.server.app import InsecureBindError
        from agentrt.server.limits import ServerLimits
        from agentrt.server.security import SecurityPolicy, is_loopback
    except ImportError as error:
        return usage_error(f"{PROG} serve: {error}")
    try:
        SecurityPolicy(security.token, security.allowed_hosts, security.cors_origins)
        limits = ServerLimits(*security.limits)
    except (TypeError, ValueError) as error:
        return usage_error(f"{PROG} serve: {error}")
    if security.token is None and not security.insecure and not is_loopback(host):
        return usage_error(f"{PROG} serve: {InsecureBindError(host)}")
    try:
        factory = load_factory(target)
    except TargetError as error:
        return usage_error(f"{PROG} serve: {error}")
    try:
        store.check()
        storage = _storage(store)
    except UsageError as error:
        return usage_error(f"{PROG} serve: {error}")
    sys.stderr.write(f"{PROG}: serving {target} on http://{host}:{port}/ (Ctrl-C stops)\n")
    if importlib.util.find_spec("a2a") is not None:
        sys.stderr.write(
            f"{PROG}: A2A: the agent card at http://{host}:{port}/.well-known/agent-card.json\n"
        )
    if storage != "memory":
        from agentrt.server._storage import shown_url

        shown = shown_url(storage)
        sys.stderr.write(
            f"{PROG}: sessions and runs are kept in {shown}, "
            f"executor id {store.executor_id or 'local'}\n"
        )
    if security.token is not None:
        # Never the token itself: this line may end up in a log.
        sys.stderr.write(
            f"{PROG}: a token is required; open http://{host}:{port}/?token=<your token> "
            "(the access log shows it redacted) or type it into the page\n"
        )
    elif security.insecure and not is_loopback(host):
        sys.stderr.write(f"{PROG}: WARNING: no authentication on {host}; anyone can run tools\n")
    try:
        server = make_server(
            factory,
            host=host,
            port=port,
            token=security.token,
            allowed_hosts=security.allowed_hosts,
            cors_origins=security.cors_origins,
            insecure=security.insecure,
            limits=limits,
            storage=storage,
            executor_id=store.executor_id,
            session_ttl=store.session_ttl,
            max_sessions=store.max_sessions,
        )
        anyio.run(server.serve)
    except KeyboardInterrupt:
        return 0
    except OSError as error:  # the port is taken, the address is not ours
        return usage_error(f"{PROG} serve: cannot listen on {host}:{port}: {error}")
    except ValueError as error:
        return usage_error(f"{PROG} serve: {error}")
    if not server.started:
        # The lifespan failed (uvicorn logged why): the store went away since the check.
        return usage_error(f"{PROG} serve: the server did not start (see the log above)")
    return 0
