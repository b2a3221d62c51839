"""The async event bus: :class:`EventBus` and :class:`EventContext`.

Handlers are plain or coroutine functions taking one :class:`EventContext`. They
run one after another, higher ``priority`` first and ties in registration order,
and each may be guarded by a predicate that receives the same context.

Two ways to dispatch:

* :meth:`EventBus.apply` (interceptable events): each handler sees the output so
  far and changes it by assigning ``ctx.output`` or returning a non-``None`` value.
  A handler's exception propagates to the caller unchanged; it is control flow.
* :meth:`EventBus.do` (signals): output is ignored. A handler's exception never
  reaches the caller; it is logged on the ``agentrt`` logger and counted in
  :attr:`EventBus.handler_errors`. With ``strict=True`` it is raised instead.

Dispatch walks an immutable snapshot of the handlers resolved for the event name,
so handlers that register or remove handlers affect later dispatches only.
Resolved snapshots are cached per name, which is why prefix patterns
(``"message:*"``, ``"*"``) cost nothing extra at dispatch time.
"""

from __future__ import annotations

import inspect
import itertools
import weakref
from collections.abc import Awaitable, Callable
from types import MappingProxyType
from typing import Any, Generic, TypeAlias, overload

import anyio
from typing_extensions import TypeVar

from agentrt._plain import NEVER_AWAITABLE
from agentrt.events._registry import EVENT_SEMANTICS, EventSemantics
from agentrt.events.names import AgentEvents
from agentrt.exceptions import HandlerTimeoutError, InvalidEventNameError

__all__ = ("DEFAULT_PRIORITY", "EventBus", "EventContext", "Handler", "Predicate")

P = TypeVar("P", default=dict[str, Any])
R = TypeVar("R", default=Any)
H = TypeVar("H", bound=Callable[..., Any])

DEFAULT_PRIORITY = 100
"""Priority of a handler registered without one; higher runs first."""

_MEMBERS: dict[str, AgentEvents] = {event.value: event for event in AgentEvents}
_INTERCEPTABLE = EventSemantics.INTERCEPTABLE
_SIGNAL = EventSemantics.SIGNAL
# How each core event is dispatched, by name.
_SEMANTICS: dict[str, EventSemantics] = {e.value: how for e, how in EVENT_SEMANTICS.items()}
_new = object.__new__


class EventContext(Generic[P, R]):
    """What a handler receives: the event, its parameters and the output so far.

    ``EventContext[P, R]`` is generic over the params ``TypedDict`` ``P`` and the
    output type ``R`` of the event, so ``ctx.parameters["message"]`` and
    ``ctx.output`` are typed in an annotated handler.
    """

    __slots__ = ("_params", "_proxy", "_stopped", "event", "output", "semantics")

    event: AgentEvents | str
    """The event: an :class:`AgentEvents` member, or the plain string for other names."""
    output: R | None
    """The outcome so far (interceptable events); ignored for signals."""
    semantics: EventSemantics
    """``INTERCEPTABLE`` under :meth:`EventBus.apply`, ``SIGNAL`` under :meth:`EventBus.do`."""

    def __init__(
        self,
        event: AgentEvents | str,
        parameters: dict[str, Any],
        output: R | None = None,
        semantics: EventSemantics = _INTERCEPTABLE,
    ) -> None:
        self.event = event
        self._params = parameters
        self._proxy: MappingProxyType[str, Any] | None = None
        self.output = output
        self.semantics = semantics
        self._stopped = False

    @property
    def parameters(self) -> P:
        """The event's parameters, read-only (a mapping typed by ``P``)."""
        proxy = self._proxy
        if proxy is None:
            # Built on first access: most dispatches never read parameters.
            proxy = self._proxy = MappingProxyType(self._params)
        return proxy  # type: ignore[return-value]

    @property
    def stopped(self) -> bool:
        """Whether a handler called :meth:`stop`."""
        return self._stopped

    def stop(self) -> None:
        """End propagation: no handler after the current one runs for this dispatch."""
        self._stopped = True

    def __repr__(self) -> str:
        return (
            f"EventContext(event={str(self.event)!r}, semantics={self.semantics.name}, "
            f"output={self.output!r}, stopped={self._stopped})"
        )


Handler: TypeAlias = Callable[[EventContext[Any, Any]], Any]
"""A plain or coroutine function taking an :class:`EventContext`."""
Predicate: TypeAlias = Callable[[EventContext[Any, Any]], bool]
"""Called with the context before a handler; the handler runs only when it is true."""

# (handler, predicate or None, handler is a coroutine function)
_Entry: TypeAlias = tuple[Handler, Predicate | None, bool]
# (the event as handlers see it, the ordered snapshot of entries, the handler when the
# snapshot is one plain handler without a predicate, the case signal_now speeds up)
_Resolved: TypeAlias = tuple["AgentEvents | str", tuple[_Entry, ...], Handler | None]


class _Registration:
    __slots__ = ("entry", "handler", "pattern", "priority", "seq", "signals_only", "transient")

    def __init__(
        self,
        pattern: str,
        handler: Handler,
        priority: int,
        predicate: Predicate | None,
        seq: int,
        transient: bool = False,
        signals_only: bool = False,
    ) -> None:
        self.pattern = pattern
        self.handler = handler
        self.priority = priority
        self.seq = seq
        self.transient = transient
        # An observer from another bus (see EventBus.copy): never run by apply().
        self.signals_only = signals_only
        self.entry: _Entry = (handler, predicate, inspect.iscoroutinefunction(handler))

    def matches(self, name: str) -> bool:
        pattern = self.pattern
        if pattern[-1] != "*":
            return pattern == name
        return name.startswith(pattern[:-1])


def _validate_pattern(event: object) -> str:
    if type(event) is AgentEvents:
        return event._value_  # a member is a valid name: the checks below, skipped
    if not isinstance(event, str):
        raise TypeError(
            f"an event name must be a string or AgentEvents member, got {type(event).__name__}"
        )
    name = str(event)
    if not name:
        raise InvalidEventNameError(name, "it is empty")
    star = name.find("*")
    if star != -1 and (star != len(name) - 1 or (name != "*" and not name.endswith(":*"))):
        raise InvalidEventNameError(
            name, "'*' may only stand alone or end a prefix after ':' (like 'message:*')"
        )
    return name


class EventBus:
    """Priority-ordered async dispatch of named events to handlers.

    Args:
        strict: Raise signal handler failures from :meth:`do` instead of logging
            and counting them. Meant for tests.
        handler_timeout: Seconds an async handler may take. One that takes longer
            is cancelled: :meth:`apply` raises :class:`HandlerTimeoutError` naming it,
            :meth:`do` logs and counts it like any signal failure. Sync handlers
            cannot be interrupted. ``None`` (the default) costs nothing.
    """

    __slots__ = (
        "__weakref__",
        "_counts",
        "_intercepting",
        "_registrations",
        "_resolved",
        "_seq",
        "_wildcards",
        "handler_errors",
        "handler_timeout",
        "has_handlers",
        "strict",
    )

    has_handlers: Callable[[AgentEvents | str], bool]
    """Whether a dispatch of an event would run any handler (patterns included).

    Dispatching code can skip building an expensive payload, or the dispatch itself,
    when nobody listens: a skipped signal is unobservable, and a skipped
    interceptable event keeps its seed output. A run asks this about fifty times,
    so without patterns it is the registrations' own ``dict.__contains__`` (no
    Python frame); with patterns it resolves the name (and caches the result).
    """

    def __init__(self, *, strict: bool = False, handler_timeout: float | None = None) -> None:
        if handler_timeout is not None and (
            isinstance(handler_timeout, bool)
            or not isinstance(handler_timeout, int | float)
            or handler_timeout <= 0
        ):
            raise ValueError(f"handler_timeout must be a positive number, got {handler_timeout!r}")
        self.strict = strict
        self.handler_timeout = handler_timeout
        """Seconds an async handler may take before it fails (``None``: no limit)."""
        self.handler_errors = 0
        """How many signal handler (or predicate) failures :meth:`do` logged."""
        self._registrations: list[_Registration] = []
        # Registrations per exact name or pattern, and how many are patterns: lets
        # has_handlers() answer for unregistered names without resolving them.
        self._counts: dict[str, int] = {}
        self._wildcards = 0
        self.has_handlers = self._counts.__contains__
        self._seq = itertools.count()
        self._resolved: dict[str, _Resolved] = {}  # by name
        # apply()'s snapshots: the same dict until an observer that runs on signals only
        # is registered (see copy), then its own, without them.
        self._intercepting = self._resolved

    # -- registration ---------------------------------------------------------------------

    @overload
    def on(
        self,
        event: AgentEvents | str,
        handler: H,
        /,
        *,
        priority: int = ...,
        predicate: Predicate | None = ...,
        transient: bool = ...,
    ) -> H: ...

    @overload
    def on(
        self,
        event: AgentEvents | str,
        /,
        *,
        priority: int = ...,
        predicate: Predicate | None = ...,
        transient: bool = ...,
    ) -> Callable[[H], H]: ...

    def on(
        self,
        event: AgentEvents | str,
        handler: H | None = None,
        /,
        *,
        priority: int = DEFAULT_PRIORITY,
        predicate: Predicate | None = None,
        transient: bool = False,
    ) -> H | Callable[[H], H]:
        """Register ``handler`` for ``event``; usable as a call or a decorator.

        ``bus.on(event, handler)``, ``bus.on(event)(handler)`` and
        ``@bus.on(event, priority=50, predicate=...)`` all register and return the
        handler unchanged.

        Args:
            event: An event name, or a prefix pattern: ``"message:*"`` matches every
                name starting with ``"message:"``, ``"*"`` matches all.
            handler: A plain or coroutine function taking an :class:`EventContext`.
            priority: Higher runs first; equal priorities run in registration order.
            predicate: Called with the context; the handler runs only when it
                returns true. A predicate that raises is a handler failure.
            transient: The handler serves one run (a stream's), not the bus's
                owner: :meth:`copy` leaves it out.

        Raises:
            TypeError: ``event`` is not a string, or handler, priority or predicate
                has the wrong type.
            InvalidEventNameError: ``event`` is empty or a malformed pattern.
        """
        name = _validate_pattern(event)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"priority must be an int, got {type(priority).__name__}")
        if predicate is not None and not callable(predicate):
            raise TypeError(f"predicate must be callable or None, got {type(predicate).__name__}")
        if handler is None:

            def decorator(func: H) -> H:
                self._register(name, func, priority, predicate, transient)
                return func

            return decorator
        self._register(name, handler, priority, predicate, transient)
        return handler

    def _register(
        self,
        name: str,
        handler: Handler,
        priority: int,
        predicate: Predicate | None,
        transient: bool = False,
        signals_only: bool = False,
    ) -> None:
        if not callable(handler):
            raise TypeError(f"a handler must be callable, got {type(handler).__name__}")
        self._registrations.append(
            _Registration(
                name, handler, priority, predicate, next(self._seq), transient, signals_only
            )
        )
        self._counts[name] = self._counts.get(name, 0) + 1
        if name[-1] == "*":
            self._wildcards += 1
            self.has_handlers = _resolving_has_handlers(self)
        if signals_only and self._intercepting is self._resolved:
            self._intercepting = {}
        self._forget()

    def _forget(self) -> None:
        """Drop the resolved snapshots: the registrations changed."""
        self._resolved.clear()
        self._intercepting.clear()

    def off(self, event: AgentEvents | str, handler: Handler) -> bool:
        """Remove ``handler`` from ``event`` (the name or pattern it was registered with).

        A handler registered several times for the same name loses its most recent
        registration.

        Returns:
            Whether a registration was removed.
        """
        name = _validate_pattern(event)
        registrations = self._registrations
        for i in range(len(registrations) - 1, -1, -1):
            reg = registrations[i]
            # Identity first: a bound method is a new object on every read, so
            # equality is the rule, but callers that kept theirs match at once.
            if reg.pattern == name and (reg.handler is handler or reg.handler == handler):
                del registrations[i]
                self._counts[name] -= 1
                if not self._counts[name]:
                    del self._counts[name]
                if name[-1] == "*":
                    self._wildcards -= 1
                    if not self._wildcards:
                        self.has_handlers = self._counts.__contains__
                self._forget()
                return True
        return False

    def _resolves_to_handlers(self, event: AgentEvents | str) -> bool:
        resolved = self._resolved.get(event)
        if resolved is None:
            resolved = self._resolve(event)
        return bool(resolved[1])

    def handlers(self, event: AgentEvents | str) -> list[Handler]:
        """The handlers a dispatch of ``event`` would run now, in order (patterns included)."""
        return [entry[0] for entry in self._resolve(str(event))[1]]

    def handler_count(self, event: AgentEvents | str | None = None) -> int:
        """How many registrations there are, in all or for one exact name or pattern."""
        if event is None:
            return len(self._registrations)
        return self._counts.get(str(event), 0)

    def copy(self, *, observed_by: EventBus | None = None) -> EventBus:
        """A new bus with this one's settings and handlers, but not its transient ones.

        Later registrations on either bus do not reach the other. A team member
        (see :mod:`agentrt.team`) runs on a copy of its sub-agent's bus: the
        sub-agent's hooks see the member's run, a stream following the sub-agent
        (whose handlers are transient) does not.

        Args:
            observed_by: Another bus whose handlers also *observe* the copy: each one
                (but transient ones, those of an interceptable event's exact name,
                and those the copy has already, by pattern and handler) is added with
                its priority, after the copy's own, to run on the copy's signals
                (:meth:`do`, :meth:`signal_now`) and never on its interceptable events
                (:meth:`apply`): it sees what happens, it does not change it. They
                run under the copy's settings (``strict``, ``handler_timeout``), their
                failures counted in its :attr:`handler_errors`. A member's bus is
                observed by its delegating agent's, so the parent's hooks see the
                member's signals, ``ctx.parameters["agent"]`` saying whose they are.
        """
        bus = EventBus(strict=self.strict, handler_timeout=self.handler_timeout)
        own = [reg for reg in self._registrations if not reg.transient]
        for reg in own:
            bus._register(
                reg.pattern, reg.handler, reg.priority, reg.entry[1], signals_only=reg.signals_only
            )
        if observed_by is None:
            return bus
        for reg in observed_by._registrations:
            if (
                reg.transient
                or _SEMANTICS.get(reg.pattern) is _INTERCEPTABLE  # never a signal
                or any(o.pattern == reg.pattern and o.handler == reg.handler for o in own)
            ):
                continue
            bus._register(reg.pattern, reg.handler, reg.priority, reg.entry[1], signals_only=True)
        return bus

    def clear(self) -> None:
        """Remove every handler."""
        self._registrations.clear()
        self._counts.clear()
        self._wildcards = 0
        self.has_handlers = self._counts.__contains__
        self._resolved.clear()
        self._intercepting = self._resolved

    def _resolve(self, name: str, intercepting: bool = False) -> _Resolved:
        """The snapshot of ``name``'s handlers; ``intercepting``: apply()'s, without observers."""
        if not isinstance(name, str):
            raise TypeError(
                f"an event name must be a string or AgentEvents member, got {type(name).__name__}"
            )
        registrations = self._registrations
        if self._wildcards:
            matching = [reg for reg in registrations if reg.matches(name)]
        else:
            # No patterns: equality alone, without a call per registration (a stream
            # adapter's handlers make every run resolve its events again).
            matching = [reg for reg in registrations if reg.pattern == name]
        if intercepting:
            matching = [reg for reg in matching if not reg.signals_only]
        if len(matching) > 1:
            matching.sort(key=lambda reg: (-reg.priority, reg.seq))
        key: AgentEvents | str = _MEMBERS.get(name) or str(name)
        entries = tuple(reg.entry for reg in matching)
        sole = None
        if len(entries) == 1 and entries[0][1] is None and not entries[0][2]:
            sole = entries[0][0]
        resolved = (key, entries, sole)
        (self._intercepting if intercepting else self._resolved)[name] = resolved
        return resolved

    # -- dispatch ---------------------------------------------------------------------------

    async def apply(
        self, event: AgentEvents | str, /, output: R | None = None, **params: Any
    ) -> EventContext[dict[str, Any], R]:
        """Dispatch an interceptable event and return the context with the final output.

        Handlers run in order; each sees ``ctx.output`` as left by the previous one
        and changes it by assigning ``ctx.output`` or returning a non-``None`` value.
        ``ctx.stop()`` ends propagation.

        Args:
            event: The event name (any string; :class:`AgentEvents` for core events).
            output: The outcome to use when no handler changes it.
            **params: The event's parameters (its params ``TypedDict`` keys).

        Raises:
            Exception: Whatever a handler or predicate raised, unchanged.
        """
        resolved = self._intercepting.get(event)
        if resolved is None:
            resolved = self._resolve(event, self._intercepting is not self._resolved)
        key, entries, _ = resolved
        ctx: EventContext[dict[str, Any], R] = _new(EventContext)  # inlined, as in do()
        ctx.event, ctx._params, ctx._proxy = key, params, None
        ctx.output, ctx.semantics, ctx._stopped = output, _INTERCEPTABLE, False
        timeout = self.handler_timeout
        for handler, predicate, is_async in entries:
            if predicate is not None and not predicate(ctx):
                continue
            if is_async:
                pending = handler(ctx)
                result = await (
                    pending if timeout is None else self._bounded(pending, handler, key)
                )
            else:
                result = handler(ctx)
                if type(result) not in NEVER_AWAITABLE and inspect.isawaitable(result):
                    result = await (
                        result if timeout is None else self._bounded(result, handler, key)
                    )
            if result is not None:
                ctx.output = result
            if ctx._stopped:
                break
        return ctx

    async def do(self, event: AgentEvents | str, /, **params: Any) -> EventContext[dict[str, Any]]:
        """Dispatch a signal: handlers observe, output is ignored, failures are contained.

        A handler (or predicate) that raises an :class:`Exception` is logged on the
        ``agentrt`` logger with the event and handler named, counted in
        :attr:`handler_errors`, and the next handler runs; with ``strict=True`` the
        exception propagates instead. Cancellation always propagates.

        Args:
            event: The event name.
            **params: The event's parameters.
        """
        resolved = self._resolved.get(event)
        if resolved is None:
            resolved = self._resolve(event)
        key, entries, _ = resolved
        # EventContext(key, params, None, _SIGNAL), inlined: the type call and its
        # __init__ frame were a tenth of a dispatch.
        ctx: EventContext[dict[str, Any]] = _new(EventContext)
        ctx.event, ctx._params, ctx._proxy = key, params, None
        ctx.output, ctx.semantics, ctx._stopped = None, _SIGNAL, False
        timeout = self.handler_timeout
        for handler, predicate, is_async in entries:
            try:
                if predicate is not None and not predicate(ctx):
                    continue
                if is_async:
                    pending = handler(ctx)
                    await (pending if timeout is None else self._bounded(pending, handler, key))
                else:
                    result = handler(ctx)
                    if type(result) not in NEVER_AWAITABLE and inspect.isawaitable(result):
                        await (result if timeout is None else self._bounded(result, handler, key))
            except Exception as exc:
                self._contain(exc, handler, key)
            if ctx._stopped:
                break
        ctx.output = None
        return ctx

    def signal_now(self, event: AgentEvents | str, /, **params: Any) -> Awaitable[Any] | None:
        """Dispatch a signal as :meth:`do` does, without a coroutine when it can.

        For the hottest signals (one per streamed chunk): when the only handler of
        ``event`` is a plain function without a predicate, it is called right away
        and ``None`` comes back, or, when it returned an awaitable, an awaitable that
        finishes the dispatch. Otherwise the :meth:`do` coroutine comes back. Either
        way, await what is not ``None``: the handlers, their order, the failure
        containment and the timeouts are :meth:`do`'s.

        Args:
            event: The event name.
            **params: The event's parameters.
        """
        resolved = self._resolved.get(event)
        if resolved is None:
            resolved = self._resolve(event)
        key, _, sole = resolved
        if sole is None:
            return self.do(event, **params)
        ctx: EventContext[dict[str, Any]] = _new(EventContext)  # inlined, as in do()
        ctx.event, ctx._params, ctx._proxy = key, params, None
        ctx.output, ctx.semantics, ctx._stopped = None, _SIGNAL, False
        try:
            result = sole(ctx)
        except Exception as exc:
            self._contain(exc, sole, key)
            return None
        finally:
            ctx.output = None
        if result is None or type(result) in NEVER_AWAITABLE or not inspect.isawaitable(result):
            return None
        return self._settle(result, sole, key)

    async def _settle(
        self, pending: Awaitable[Any], handler: Handler, key: AgentEvents | str
    ) -> None:
        """Await what a signal handler returned, within its timeout, containing its failure."""
        timeout = self.handler_timeout
        try:
            await (pending if timeout is None else self._bounded(pending, handler, key))
        except Exception as exc:
            self._contain(exc, handler, key)

    def _contain(self, exc: Exception, handler: Handler, key: AgentEvents | str) -> None:
        """A signal handler failed: log and count it (raise it in strict mode)."""
        if self.strict:
            raise exc
        self.handler_errors += 1
        # Imported here: logging is a tenth of what `import agentrt` adds to pydantic's
        # own cost, and only a failing signal handler needs it.
        import logging

        logging.getLogger("agentrt").error(
            "signal handler %s for event %r raised %s: %s",
            _describe(handler),
            str(key),
            type(exc).__name__,
            exc,
            exc_info=exc,
        )

    async def _bounded(
        self, pending: Awaitable[Any], handler: Handler, event: AgentEvents | str
    ) -> Any:
        """Await a handler's work within :attr:`handler_timeout`."""
        timeout = self.handler_timeout
        assert timeout is not None
        with anyio.move_on_after(timeout):
            return await pending
        raise HandlerTimeoutError(str(event), _describe(handler), timeout)

    def __repr__(self) -> str:
        return f"<EventBus handlers={len(self._registrations)} strict={self.strict}>"


def _resolving_has_handlers(bus: EventBus) -> Callable[[AgentEvents | str], bool]:
    """:attr:`EventBus.has_handlers` while patterns are registered.

    Holds the bus weakly: a bound method stored on the bus would make a reference
    cycle, and a bus (with every handler it holds) would then wait for the cyclic
    garbage collector instead of going when its agent does.
    """
    ref = weakref.ref(bus)

    def has_handlers(event: AgentEvents | str) -> bool:
        owner = ref()
        return owner is not None and owner._resolves_to_handlers(event)

    return has_handlers


def _describe(handler: Callable[..., Awaitable[Any] | Any]) -> str:
    name = getattr(handler, "__qualname__", None) or repr(handler)
    module = getattr(handler, "__module__", None)
    return f"{module}.{name}" if module else name
