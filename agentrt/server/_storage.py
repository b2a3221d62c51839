"""The tables of a durable server: sessions, their runs, their event logs and answers.

They live in the database of the durable store (``--store``), beside DBOS's own, so
that every server process on that store sees the same sessions: a SQLite file for
one process, Postgres for several. Every call here is synchronous and short: the
session layer (:mod:`agentrt.server.durable`) runs them in worker threads.

::

    agentrt_sessions  id | created | active | run_id (the open run) | state (JSON)
    agentrt_runs      run_id | session_id | after | executor | cancel | closed
    agentrt_events    session_id | seq | run_id | type | tool_call_id | data (JSON)
    agentrt_answers   session_id | tool_call_id | decision | reason
    agentrt_attachments  session_id | name | data (JSON: what a projection keeps)

A session's events are numbered from 1 across its runs; ``(session_id, seq)`` is the
key, so two writers can never give one number to two events. A run is open while
its session's ``run_id`` names it: opening and closing are single guarded updates,
so that one process, and one only, wins either.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from agentrt.durable import StoreUnavailableError
from agentrt.durable._agent import shown_store, store_unavailable

__all__ = (
    "EventRow",
    "OpenRun",
    "RunSpan",
    "SessionRow",
    "Storage",
    "database_url",
    "shown_url",
)

_META = sa.MetaData()

_SESSIONS = sa.Table(
    "agentrt_sessions",
    _META,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("active", sa.Float, nullable=False),
    sa.Column("run_id", sa.String(64), nullable=True),
    sa.Column("state", sa.Text, nullable=False),
)

_RUNS = sa.Table(
    "agentrt_runs",
    _META,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False, index=True),
    sa.Column("after", sa.Integer, nullable=False),
    sa.Column("executor", sa.String(200), nullable=False),
    sa.Column("cancel", sa.Text, nullable=True),
    sa.Column("closed", sa.Boolean, nullable=False, default=False),
)

_EVENTS = sa.Table(
    "agentrt_events",
    _META,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("tool_call_id", sa.String(200), nullable=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.Index("agentrt_events_tool_call", "session_id", "tool_call_id"),
)

_ANSWERS = sa.Table(
    "agentrt_answers",
    _META,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("tool_call_id", sa.String(200), primary_key=True),
    sa.Column("decision", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
)


_ATTACHMENTS = sa.Table(
    "agentrt_attachments",
    _META,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
)


def database_url(store: str) -> str:
    """``store`` as a SQLAlchemy URL: Postgres through psycopg 3 (what DBOS installs)."""
    for prefix in ("postgresql://", "postgres://"):
        if store.startswith(prefix):
            return "postgresql+psycopg://" + store[len(prefix) :]
    return store


def shown_url(store: str) -> str:
    """``store`` as logs and messages show it: its password masked, a SQLite file's path."""
    return shown_store(database_url(store))


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A stored session: its open run (if any) and its state after its last run."""

    id: str
    run_id: str | None
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OpenRun:
    """A session's open run: where its events start, who runs it, why it is cancelled."""

    run_id: str
    session_id: str
    after: int
    executor: str
    cancel: str | None


@dataclass(frozen=True, slots=True)
class RunSpan:
    """A run as a session's log holds it: the event before its first, its latest kept."""

    run_id: str
    after: int
    last: int


@dataclass(frozen=True, slots=True)
class EventRow:
    """An event to store: its number, its type, the tool call it concerns, its JSON."""

    seq: int
    type: str
    tool_call_id: str | None
    data: str


class Storage:
    """The server's tables in the database at ``store`` (see the module docstring).

    Args:
        store: ``sqlite:///PATH`` or ``postgresql://...``.
        create: Create the tables (and a Postgres database) that are missing; a
            reader (a replay) passes False and checks :meth:`has_tables`.

    Raises:
        StoreUnavailableError: The database cannot be opened or written (the
            message names it, without its password).
    """

    def __init__(self, store: str, *, create: bool = True) -> None:
        from agentrt.durable._agent import _sqlite_engine

        self.store = store
        url = database_url(store)
        if url.startswith("sqlite:///"):
            self.engine = _sqlite_engine(url, "FULL")
        else:
            # pre_ping: connections broken by a database restart are replaced, not used.
            self.engine = sa.create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
        if not create:
            return
        try:
            try:
                _META.create_all(self.engine)
            except sa.exc.OperationalError as error:
                if not (url.startswith("postgresql") and "does not exist" in str(error)):
                    raise
                # A new database: made here, as DBOS makes one for its own tables.
                self._create_database(url)
                _META.create_all(self.engine)
        except sa.exc.SQLAlchemyError as error:
            self.engine.dispose()
            raise self.unavailable(error) from error

    @staticmethod
    def _create_database(url: str) -> None:
        target = sa.make_url(url)
        admin = sa.create_engine(
            target.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
        )
        try:
            with admin.connect() as db:
                name = admin.dialect.identifier_preparer.quote(target.database or "")
                db.execute(sa.text(f"CREATE DATABASE {name}"))
        finally:
            admin.dispose()

    def unavailable(self, error: BaseException) -> StoreUnavailableError:
        """The :class:`StoreUnavailableError` for ``error``, naming the store."""
        return store_unavailable(database_url(self.store), error, "cannot be used")

    def close(self) -> None:
        """Close the database connections."""
        self.engine.dispose()

    def has_tables(self) -> bool:
        """Whether the store holds the server's tables (a server ever ran on it).

        Raises:
            StoreUnavailableError: The database cannot be opened.
        """
        try:
            return sa.inspect(self.engine).has_table(_SESSIONS.name)
        except sa.exc.SQLAlchemyError as error:
            raise self.unavailable(error) from error

    # -- sessions -------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        state: dict[str, Any],
        attachments: Mapping[str, dict[str, Any]] | None = None,
    ) -> bool:
        """Store a new session with its initial ``state`` (and ``attachments``, by name);
        False when the id is taken."""
        now = time.time()
        try:
            with self.engine.begin() as db:
                db.execute(
                    _SESSIONS.insert().values(
                        id=session_id,
                        created=now,
                        active=now,
                        run_id=None,
                        state=json.dumps(state),
                    )
                )
                for name, data in (attachments or {}).items():
                    db.execute(
                        _ATTACHMENTS.insert().values(
                            session_id=session_id, name=name, data=json.dumps(data)
                        )
                    )
        except sa.exc.IntegrityError:
            return False
        return True

    def count_sessions(self) -> int:
        """How many sessions the store holds."""
        with self.engine.connect() as db:
            return int(db.execute(sa.select(sa.func.count()).select_from(_SESSIONS)).scalar_one())

    def load_session(self, session_id: str) -> SessionRow | None:
        """The session ``session_id``, or None."""
        with self.engine.connect() as db:
            row = db.execute(
                sa.select(_SESSIONS.c.run_id, _SESSIONS.c.state).where(
                    _SESSIONS.c.id == session_id
                )
            ).first()
        if row is None:
            return None
        return SessionRow(session_id, row.run_id, json.loads(row.state))

    def delete_session(self, session_id: str) -> bool:
        """Forget the session and everything it holds; False if there was none."""
        with self.engine.begin() as db:
            deleted = db.execute(_SESSIONS.delete().where(_SESSIONS.c.id == session_id))
            for table in (_EVENTS, _ANSWERS, _RUNS, _ATTACHMENTS):
                db.execute(table.delete().where(table.c.session_id == session_id))
        return bool(deleted.rowcount)

    def save_state(self, session_id: str, state: dict[str, Any]) -> bool:
        """Replace the session's stored state (between runs); False: no such session."""
        with self.engine.begin() as db:
            saved = db.execute(
                _SESSIONS.update()
                .where(_SESSIONS.c.id == session_id)
                .values(state=json.dumps(state), active=time.time())
            )
        return bool(saved.rowcount)

    def idle_sessions(self, before: float) -> list[str]:
        """Sessions without an open run, last active before ``before`` (epoch seconds)."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_SESSIONS.c.id).where(
                    _SESSIONS.c.run_id.is_(None), _SESSIONS.c.active < before
                )
            )
            return [row.id for row in rows]

    # -- runs -----------------------------------------------------------------------------

    def open_run(
        self, session_id: str, run_id: str, executor: str
    ) -> tuple[int, dict[str, Any]] | None:
        """Open ``run_id`` on the session: the number of its last event, and its state.

        None: the session has an open run already (or no longer exists).
        """
        with self.engine.begin() as db:
            opened = db.execute(
                _SESSIONS.update()
                .where(_SESSIONS.c.id == session_id, _SESSIONS.c.run_id.is_(None))
                .values(run_id=run_id, active=time.time())
            )
            if not opened.rowcount:
                return None
            after = self._last(db, session_id)
            state = db.execute(
                sa.select(_SESSIONS.c.state).where(_SESSIONS.c.id == session_id)
            ).scalar_one()
            db.execute(
                _RUNS.insert().values(
                    run_id=run_id,
                    session_id=session_id,
                    after=after,
                    executor=executor,
                    cancel=None,
                    closed=False,
                )
            )
        return after, json.loads(state)

    def open_run_of(self, session_id: str) -> OpenRun | None:
        """The session's open run, if it has one."""
        with self.engine.connect() as db:
            row = db.execute(
                sa.select(_RUNS)
                .join(_SESSIONS, _SESSIONS.c.run_id == _RUNS.c.run_id)
                .where(_SESSIONS.c.id == session_id)
            ).first()
        if row is None:
            return None
        return OpenRun(row.run_id, row.session_id, row.after, row.executor, row.cancel)

    def open_runs_of(self, executor: str) -> list[OpenRun]:
        """The open runs ``executor`` started or recovered."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_RUNS)
                .join(_SESSIONS, _SESSIONS.c.run_id == _RUNS.c.run_id)
                .where(_RUNS.c.executor == executor)
            )
            return [
                OpenRun(row.run_id, row.session_id, row.after, row.executor, row.cancel)
                for row in rows
            ]

    def run(self, run_id: str) -> OpenRun | None:
        """The run ``run_id`` (open or not)."""
        with self.engine.connect() as db:
            row = db.execute(sa.select(_RUNS).where(_RUNS.c.run_id == run_id)).first()
        if row is None:
            return None
        return OpenRun(row.run_id, row.session_id, row.after, row.executor, row.cancel)

    def runs_of(self, session_id: str) -> list[OpenRun]:
        """Every run of the session the store knows (open or not), oldest first."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_RUNS)
                .where(_RUNS.c.session_id == session_id)
                .order_by(_RUNS.c.after, _RUNS.c.run_id)
            )
            return [
                OpenRun(row.run_id, row.session_id, row.after, row.executor, row.cancel)
                for row in rows
            ]

    def request_cancel(self, run_id: str, reason: str) -> None:
        """Ask whoever runs ``run_id`` to cancel it (the first reason stands)."""
        with self.engine.begin() as db:
            db.execute(
                _RUNS.update()
                .where(_RUNS.c.run_id == run_id, _RUNS.c.cancel.is_(None))
                .values(cancel=reason)
            )

    def cancel_requests(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The runs among ``run_ids`` someone asked to cancel, with the reason."""
        if not run_ids:
            return {}
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_RUNS.c.run_id, _RUNS.c.cancel).where(
                    _RUNS.c.run_id.in_(run_ids), _RUNS.c.cancel.is_not(None)
                )
            )
            return {row.run_id: row.cancel for row in rows}

    def close_run(
        self,
        session_id: str,
        run_id: str,
        events: Sequence[EventRow],
        state: dict[str, Any] | None,
        retain: int,
    ) -> bool:
        """Write the run's last events and close it, in one transaction.

        ``state`` (the session's after the run) replaces the stored one unless None.
        Events beyond the ``retain`` latest of the session are dropped. False when
        the run was closed already (by another process): nothing is written then.
        """
        values: dict[str, Any] = {"run_id": None, "active": time.time()}
        if state is not None:
            values["state"] = json.dumps(state)
        with self.engine.begin() as db:
            closed = db.execute(
                _SESSIONS.update()
                .where(_SESSIONS.c.id == session_id, _SESSIONS.c.run_id == run_id)
                .values(**values)
            )
            if not closed.rowcount:
                return False
            self._insert(db, session_id, run_id, events)
            db.execute(_RUNS.update().where(_RUNS.c.run_id == run_id).values(closed=True))
            last = self._last(db, session_id)
            db.execute(
                _EVENTS.delete().where(
                    _EVENTS.c.session_id == session_id, _EVENTS.c.seq <= last - retain
                )
            )
        return True

    def close_abandoned(self, session_id: str, run_id: str, events: Sequence[EventRow]) -> bool:
        """Close a run no process will finish, its ``events`` numbered after the latest.

        False when the run was closed already.
        """
        with self.engine.begin() as db:
            closed = db.execute(
                _SESSIONS.update()
                .where(_SESSIONS.c.id == session_id, _SESSIONS.c.run_id == run_id)
                .values(run_id=None, active=time.time())
            )
            if not closed.rowcount:
                return False
            last = self._last(db, session_id)
            numbered = [
                EventRow(last + n, event.type, event.tool_call_id, event.data)
                for n, event in enumerate(events, 1)
            ]
            self._insert(db, session_id, run_id, numbered)
            db.execute(_RUNS.update().where(_RUNS.c.run_id == run_id).values(closed=True))
        return True

    # -- forks ----------------------------------------------------------------------------

    def runs_in(self, session_id: str) -> list[RunSpan]:
        """The runs whose events the session's log keeps, oldest first (a fork's log
        keeps the events of the runs of the session it branched from, under their ids)."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(
                    _EVENTS.c.run_id,
                    sa.func.min(_EVENTS.c.seq).label("first"),
                    sa.func.max(_EVENTS.c.seq).label("last"),
                    _RUNS.c.after,
                )
                .select_from(_EVENTS.outerjoin(_RUNS, _RUNS.c.run_id == _EVENTS.c.run_id))
                .where(_EVENTS.c.session_id == session_id)
                .group_by(_EVENTS.c.run_id, _RUNS.c.after)
                .order_by(sa.func.min(_EVENTS.c.seq))
            )
            return [
                RunSpan(row.run_id, row.first - 1 if row.after is None else row.after, row.last)
                for row in rows
            ]

    def kinds(self, session_id: str, after: int, last: int) -> list[tuple[int, str, str | None]]:
        """The session's events numbered above ``after`` up to ``last``: each one's number,
        type and the tool call it concerns (if any)."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_EVENTS.c.seq, _EVENTS.c.type, _EVENTS.c.tool_call_id)
                .where(
                    _EVENTS.c.session_id == session_id,
                    _EVENTS.c.seq > after,
                    _EVENTS.c.seq <= last,
                )
                .order_by(_EVENTS.c.seq)
            )
            return [(row.seq, row.type, row.tool_call_id) for row in rows]

    def fork_session(
        self,
        source_id: str,
        session_id: str,
        state: dict[str, Any],
        upto: int,
        run: OpenRun | None,
        forked: str | None,
        rename: Callable[[str], str],
    ) -> None:
        """Make the session ``session_id``, a fork of ``source_id``, in one transaction.

        It holds ``state``, the events of ``source_id`` up to ``upto`` (numbered alike,
        each as ``rename`` makes it the fork's) and its attachments. With ``run``, it
        has that run open; the copied events of the run ``forked`` (which ``run`` goes
        on with) are then the open run's.
        """
        now = time.time()
        with self.engine.begin() as db:
            db.execute(
                _SESSIONS.insert().values(
                    id=session_id,
                    created=now,
                    active=now,
                    run_id=None if run is None else run.run_id,
                    state=json.dumps(state),
                )
            )
            if run is not None:
                db.execute(
                    _RUNS.insert().values(
                        run_id=run.run_id,
                        session_id=session_id,
                        after=run.after,
                        executor=run.executor,
                        cancel=None,
                        closed=False,
                    )
                )
            rows = db.execute(
                sa.select(_EVENTS).where(_EVENTS.c.session_id == source_id, _EVENTS.c.seq <= upto)
            )
            copies = [
                {
                    **row._asdict(),
                    "session_id": session_id,
                    "run_id": run.run_id
                    if run is not None and row.run_id == forked
                    else row.run_id,
                    "data": rename(row.data),
                }
                for row in rows
            ]
            if copies:
                db.execute(_EVENTS.insert(), copies)
            # What projections keep with the session (the name of its agent factory...).
            kept = db.execute(
                sa.select(_ATTACHMENTS.c.name, _ATTACHMENTS.c.data).where(
                    _ATTACHMENTS.c.session_id == source_id
                )
            )
            attachments = [
                {"session_id": session_id, "name": row.name, "data": row.data} for row in kept
            ]
            if attachments:
                db.execute(_ATTACHMENTS.insert(), attachments)

    # -- events ---------------------------------------------------------------------------

    @staticmethod
    def _last(db: sa.Connection, session_id: str) -> int:
        last = db.execute(
            sa.select(sa.func.max(_EVENTS.c.seq)).where(_EVENTS.c.session_id == session_id)
        ).scalar_one()
        return int(last or 0)

    @staticmethod
    def _insert(
        db: sa.Connection, session_id: str, run_id: str, events: Iterable[EventRow]
    ) -> None:
        rows = [
            {
                "session_id": session_id,
                "seq": event.seq,
                "run_id": run_id,
                "type": event.type,
                "tool_call_id": event.tool_call_id,
                "data": event.data,
            }
            for event in events
        ]
        if rows:
            db.execute(_EVENTS.insert(), rows)

    def append(self, session_id: str, run_id: str, events: Sequence[EventRow]) -> None:
        """Write a batch of the open run's events, in one transaction.

        Raises:
            sqlalchemy.exc.IntegrityError: A number is taken (the run was closed by
                another process, which wrote its last events).
        """
        with self.engine.begin() as db:
            self._insert(db, session_id, run_id, events)

    def last_seq(self, session_id: str) -> int:
        """The number of the session's latest event (0 when none)."""
        with self.engine.connect() as db:
            return self._last(db, session_id)

    def bounds(self, session_id: str) -> tuple[int, int]:
        """The numbers of the session's oldest and latest kept events ((0, 0) when none)."""
        with self.engine.connect() as db:
            row = db.execute(
                sa.select(sa.func.min(_EVENTS.c.seq), sa.func.max(_EVENTS.c.seq)).where(
                    _EVENTS.c.session_id == session_id
                )
            ).one()
        return int(row[0] or 0), int(row[1] or 0)

    def read(self, session_id: str, after: int, limit: int) -> list[tuple[int, str, str]]:
        """Up to ``limit`` events numbered above ``after``: (seq, run_id, JSON)."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_EVENTS.c.seq, _EVENTS.c.run_id, _EVENTS.c.data)
                .where(_EVENTS.c.session_id == session_id, _EVENTS.c.seq > after)
                .order_by(_EVENTS.c.seq)
                .limit(limit)
            )
            return [(row.seq, row.run_id, row.data) for row in rows]

    def tool_call_run(self, session_id: str, tool_call_id: str) -> str | None:
        """The run whose events first mention ``tool_call_id``, if any did."""
        with self.engine.connect() as db:
            return db.execute(
                sa.select(_EVENTS.c.run_id)
                .where(_EVENTS.c.session_id == session_id, _EVENTS.c.tool_call_id == tool_call_id)
                .order_by(_EVENTS.c.seq)
                .limit(1)
            ).scalar()

    # -- answers --------------------------------------------------------------------------

    def add_answer(
        self, session_id: str, tool_call_id: str, decision: str, reason: str | None
    ) -> bool:
        """Record the answer to a confirmation; False when one was recorded before."""
        try:
            with self.engine.begin() as db:
                db.execute(
                    _ANSWERS.insert().values(
                        session_id=session_id,
                        tool_call_id=tool_call_id,
                        decision=decision,
                        reason=reason,
                    )
                )
        except sa.exc.IntegrityError:
            return False
        return True

    def answers(self, session_id: str) -> dict[str, tuple[str, str | None]]:
        """The recorded answers to the session's confirmations: (decision, reason) by call id."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_ANSWERS.c.tool_call_id, _ANSWERS.c.decision, _ANSWERS.c.reason).where(
                    _ANSWERS.c.session_id == session_id
                )
            )
            return {row.tool_call_id: (row.decision, row.reason) for row in rows}

    # -- attachments ----------------------------------------------------------------------

    def read_attachment(self, session_id: str, name: str) -> dict[str, Any] | None:
        """What is kept with the session under ``name``, or None."""
        with self.engine.connect() as db:
            data = db.execute(
                sa.select(_ATTACHMENTS.c.data).where(
                    _ATTACHMENTS.c.session_id == session_id, _ATTACHMENTS.c.name == name
                )
            ).scalar()
        return None if data is None else dict(json.loads(data))

    def write_attachment(self, session_id: str, name: str, data: dict[str, Any]) -> None:
        """Keep ``data`` with the session under ``name`` (replacing what was kept)."""
        text = json.dumps(data)
        with self.engine.begin() as db:
            updated = db.execute(
                _ATTACHMENTS.update()
                .where(_ATTACHMENTS.c.session_id == session_id, _ATTACHMENTS.c.name == name)
                .values(data=text)
            )
            if not updated.rowcount:
                db.execute(
                    _ATTACHMENTS.insert().values(session_id=session_id, name=name, data=text)
                )

    def attachments(self, name: str) -> dict[str, dict[str, Any]]:
        """What every session keeps under ``name``, by session id."""
        with self.engine.connect() as db:
            rows = db.execute(
                sa.select(_ATTACHMENTS.c.session_id, _ATTACHMENTS.c.data).where(
                    _ATTACHMENTS.c.name == name
                )
            )
            return {row.session_id: dict(json.loads(row.data)) for row in rows}
