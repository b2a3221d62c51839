"""``POST /ag-ui``: AG-UI runs told from the same events as the server's own stream.

In process (the app and its lifespan, httpx over ASGI); the official TypeScript client
against a live server is tests/agui (``nox -s agui``).
"""

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ag_ui.core import CustomEvent, EventType, RunFinishedEvent, Tool, ToolMessage

from agentrt.agent import Agent
from agentrt.cli._targets import load_factory
from agentrt.deferred import UNANSWERED_TOOL_RESPONSE
from agentrt.messages import ToolCall
from agentrt.models.base import ModelRequest
from agentrt.models.scripted import ScriptedModel, ScriptItem
from agentrt.server import create_app
from agentrt.server.agui import CONFIRMATION_REASON
from agentrt.server.agui_events import AGUIProjection
from agentrt.stream._parse import InvalidEvent
from agentrt.stream.codec import SSEEventDecoder
from agentrt.stream.events import (
    AnyStreamEvent,
    ErrorEvent,
    SessionCompactionEvent,
    SessionTitleEvent,
    TokenUsageEvent,
)
from agentrt.tools import tool

BASE = "http://127.0.0.1"
ROOT = Path(__file__).resolve().parents[1]
# The example is the target tests/agui serves too: loaded as `agentrt serve` loads it.
make_agent = load_factory(f"{ROOT / 'examples' / 'agui_endpoint.py'}:make_agent")
COLOR = Tool(
    name="change_color",
    description="Change the page's color.",
    parameters={"type": "object", "properties": {"color": {"type": "string"}}},
)


@asynccontextmanager
async def client_of(factory: Callable[[], Agent]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(factory)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as client,
    ):
        client.app = app  # type: ignore[attr-defined]
        yield client


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


async def ag_ui(
    client: httpx.AsyncClient, thread: str, messages: list[dict[str, Any]], **more: Any
) -> list[dict[str, Any]]:
    body = {"threadId": thread, "runId": f"run-{len(messages)}", "messages": messages, **more}
    response = await client.post("/ag-ui", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def conversation(client: httpx.AsyncClient) -> list[tuple[str, str]]:
    (session,) = client.app.state.sessions  # type: ignore[attr-defined]
    return [(m.role, m.content) for m in session.agent.messages]


# -- the same story ---------------------------------------------------------------------


def story_of_stream(events: list[AnyStreamEvent]) -> list[tuple[str, ...]]:
    """What a run said, from our stream: texts and reasoning whole, calls, results, errors."""
    story: list[tuple[str, ...]] = []
    for event in events:
        assert not isinstance(event, InvalidEvent)  # our own server's stream is read
        data = event.model_dump()
        kind = event.type
        if kind in ("agent_choice", "agent_choice_reasoning"):
            label = "text" if kind == "agent_choice" else "reasoning"
            if story and story[-1][0] == label:
                story[-1] = (label, story[-1][1] + data["content"])
            else:
                story.append((label, data["content"]))
        elif kind == "tool_call":
            call = data["tool_call"]
            story.append(
                ("call", call["id"], call["function"]["name"], call["function"]["arguments"])
            )
        elif kind == "tool_call_response":
            story.append(("result", data["tool_call"]["id"], data["response"]))
        elif kind == "error":
            story.append(("error", data["error"]))
    return story


def story_of_ag_ui(events: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The same, from the AG-UI events of a run."""
    story: list[tuple[str, ...]] = []
    arguments: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for event in events:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            story.append(("text" if kind == "TEXT_MESSAGE_START" else "reasoning", ""))
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            story[-1] = (story[-1][0], story[-1][1] + event["delta"])
        elif kind == "TOOL_CALL_START":
            names[event["toolCallId"]] = event["toolCallName"]
            arguments[event["toolCallId"]] = []
        elif kind == "TOOL_CALL_ARGS":
            arguments[event["toolCallId"]].append(event["delta"])
        elif kind == "TOOL_CALL_END":
            call_id = event["toolCallId"]
            story.append(("call", call_id, names[call_id], "".join(arguments[call_id])))
        elif kind == "TOOL_CALL_RESULT":
            story.append(("result", event["toolCallId"], event["content"]))
        elif kind == "RUN_ERROR":
            story.append(("error", event["message"]))
    return story


def numbered(story: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``story`` with each tool call id replaced by its number (two sessions, two ids)."""
    ids: dict[str, str] = {}
    return [
        (kind, ids.setdefault(rest[0], f"#{len(ids)}"), *rest[1:])
        if kind in ("call", "result")
        else (kind, *rest)
        for kind, *rest in story
    ]


async def own_stream(client: httpx.AsyncClient, message: str) -> list[AnyStreamEvent]:
    session = (await client.post("/sessions", json={})).json()["id"]
    response = await client.post(f"/sessions/{session}/messages", json={"message": message})
    return [event for _, event in SSEEventDecoder().feed(response.content)]


@pytest.mark.parametrize(
    "message", ["Please add 2 and 3.", "Hello!", "Please fail."], ids=["tool", "plain", "error"]
)
async def test_our_stream_and_ag_ui_tell_the_same_story(message: str) -> None:
    async with client_of(make_agent) as client:
        ours = await own_stream(client, message)
        theirs = await ag_ui(client, "thread-1", [user("m1", message)])
    story = numbered(story_of_stream(ours))
    assert story == numbered(story_of_ag_ui(theirs))
    assert story  # something was said
    # Usage: RUN_FINISHED (or RUN_ERROR) counts the model calls our token_usage reported.
    calls = [e for e in ours if isinstance(e, TokenUsageEvent)]
    spent = sum(e.usage.last_message.input_tokens for e in calls if e.usage.last_message)
    usage = theirs[-1].get("usage")
    assert (usage[0]["inputTokens"] if usage else 0) == spent
    assert [e["type"] for e in theirs if e["type"] == "CUSTOM"] == ["CUSTOM"] * len(calls)


# -- history: whole or new only ---------------------------------------------------------


async def test_a_client_sending_the_whole_history_and_one_sending_only_new_messages_agree() -> (
    None
):
    async with client_of(make_agent) as whole, client_of(make_agent) as new_only:
        history: list[dict[str, Any]] = []
        for number, text in enumerate(["Please add 2 and 3.", "Hello!", "Hello again!"]):
            message = user(f"u{number}", text)
            history.append(message)
            events = await ag_ui(whole, "t", list(history))
            # The client's copy of the conversation grows as @ag-ui/client's does.
            history.extend(assemble(events))
            await ag_ui(new_only, "t", [message])
        assert conversation(whole) == conversation(new_only)
        assert conversation(whole) == [
            ("user", "Please add 2 and 3."),
            ("assistant", "Let me add them."),
            ("tool", "5"),
            ("assistant", "The sum is 5."),
            ("user", "Hello!"),
            ("assistant", "Hello from agentrt."),
            ("user", "Hello again!"),
            ("assistant", "Hello from agentrt."),
        ]


def assemble(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages a run adds on the client side, with the ids the events gave them."""
    messages: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            messages.setdefault(
                event["messageId"], {"id": event["messageId"], "role": "assistant"}
            )
            messages[event["messageId"]]["content"] = ""
        elif kind == "TEXT_MESSAGE_CONTENT":
            messages[event["messageId"]]["content"] += event["delta"]
        elif kind == "REASONING_MESSAGE_START":
            messages[event["messageId"]] = {
                "id": event["messageId"],
                "role": "reasoning",
                "content": "",
            }
        elif kind == "REASONING_MESSAGE_CONTENT":
            messages[event["messageId"]]["content"] += event["delta"]
        elif kind == "TOOL_CALL_START":
            owner = messages.setdefault(
                event["parentMessageId"], {"id": event["parentMessageId"], "role": "assistant"}
            )
            owner.setdefault("toolCalls", []).append(
                {
                    "id": event["toolCallId"],
                    "type": "function",
                    "function": {"name": event["toolCallName"], "arguments": ""},
                }
            )
        elif kind == "TOOL_CALL_ARGS":
            for message in messages.values():
                for call in message.get("toolCalls", []):
                    if call["id"] == event["toolCallId"]:
                        call["function"]["arguments"] += event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            messages[event["messageId"]] = {
                "id": event["messageId"],
                "role": "tool",
                "toolCallId": event["toolCallId"],
                "content": event["content"],
            }
    return list(messages.values())


async def test_a_new_session_takes_a_whole_history_it_never_saw() -> None:
    history = [
        user("a", "Please add 2 and 3."),
        {
            "id": "b",
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {"id": "c", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        {"id": "d", "role": "tool", "toolCallId": "c", "content": "5"},
    ]
    async with client_of(make_agent) as client:
        events = await ag_ui(client, "restored", history)
        # No user message to answer, but a result the model has not read: it goes on.
        assert story_of_ag_ui(events) == [("text", "The sum is 5.")]
        assert conversation(client) == [
            ("user", "Please add 2 and 3."),
            ("assistant", ""),
            ("tool", "5"),
            ("assistant", "The sum is 5."),
        ]
        # The same input again: nothing new, nothing to answer, nothing added.
        again = await ag_ui(client, "restored", history)
        assert [e["type"] for e in again] == ["RUN_STARTED", "RUN_FINISHED"]
        assert len(conversation(client)) == 4


# -- frontend tools ---------------------------------------------------------------------


async def test_a_frontend_tool_call_ends_the_run_and_the_next_run_goes_on_with_its_result() -> (
    None
):
    async with client_of(make_agent) as client:
        tools = [COLOR.model_dump(by_alias=True)]
        first = await ag_ui(client, "t", [user("u1", "Change the color.")], tools=tools)
        finished = first[-1]
        assert finished["type"] == "RUN_FINISHED"
        (call_id,) = finished["outcome"]["pendingToolCallIds"]
        assert "TOOL_CALL_RESULT" not in [e["type"] for e in first]
        (session,) = client.app.state.sessions  # type: ignore[attr-defined]
        # Nothing waits in memory: the agent's run ended, the conversation holds the call.
        assert session.run is None
        assert [call.id for call in session.agent.conversation.unanswered_calls()] == [call_id]
        result = ToolMessage(id="r1", tool_call_id=call_id, content="teal now")
        second = await ag_ui(client, "t", [result.model_dump(by_alias=True)], tools=tools)
        # The client holds its own result: no TOOL_CALL_RESULT repeats it.
        assert story_of_ag_ui(second) == [("text", "Done: teal now")]
        assert second[-1]["outcome"] == {"type": "success"}
        assert conversation(client)[1:] == [
            ("assistant", ""),
            ("tool", "teal now"),
            ("assistant", "Done: teal now"),
        ]


async def test_a_client_that_moves_on_without_the_result_leaves_the_call_unanswered() -> None:
    async with client_of(make_agent) as client:
        tools = [COLOR.model_dump(by_alias=True)]
        first = await ag_ui(client, "t", [user("u1", "Change the color.")], tools=tools)
        (call_id,) = first[-1]["outcome"]["pendingToolCallIds"]
        events = await ag_ui(client, "t", [user("u2", "Hello!")], tools=tools)
        # The call gets an error result that says so (the client is told it), and the
        # conversation stays valid for any provider.
        assert story_of_ag_ui(events) == [
            ("result", call_id, UNANSWERED_TOOL_RESPONSE),
            ("text", "Hello from agentrt."),
        ]
        assert conversation(client)[2:] == [
            ("tool", UNANSWERED_TOOL_RESPONSE),
            ("user", "Hello!"),
            ("assistant", "Hello from agentrt."),
        ]


async def test_a_failure_the_client_reports_is_the_tools_error() -> None:
    async with client_of(make_agent) as client:
        tools = [COLOR.model_dump(by_alias=True)]
        first = await ag_ui(client, "t", [user("u1", "Change the color.")], tools=tools)
        (call_id,) = first[-1]["outcome"]["pendingToolCallIds"]
        failed = {"id": "r", "role": "tool", "toolCallId": call_id, "content": "", "error": "no"}
        await ag_ui(client, "t", [failed], tools=tools)
        assert conversation(client)[2] == (
            "tool",
            "Error: tool 'change_color' failed in the client: no",
        )


# -- confirmations: interrupts ----------------------------------------------------------


@pytest.mark.parametrize(
    ("resume", "result"),
    [
        ({"status": "resolved", "payload": {"decision": "approve"}}, "deleted notes.txt"),
        ({"status": "resolved", "payload": "approve-tool"}, "deleted notes.txt"),
        (
            {"status": "resolved", "payload": {"decision": "reject", "reason": "keep it"}},
            "rejected by the user: keep it",
        ),
        ({"status": "cancelled"}, "rejected by the user: cancelled by the client"),
    ],
)
async def test_a_confirmation_is_an_interrupt_answered_by_a_resume_entry(
    resume: dict[str, Any], result: str
) -> None:
    async with client_of(make_agent) as client:
        first = await ag_ui(client, "t", [user("u1", "Delete notes.txt")])
        outcome = first[-1]["outcome"]
        assert outcome["type"] == "interrupt"
        (interrupt,) = outcome["interrupts"]
        assert interrupt["reason"] == CONFIRMATION_REASON
        assert interrupt["id"] == interrupt["toolCallId"]
        assert interrupt["responseSchema"]["required"] == ["decision"]
        assert [e["type"] for e in first][-2:] == ["TOOL_CALL_END", "RUN_FINISHED"]
        second = await ag_ui(client, "t", [], resume=[{"interruptId": interrupt["id"], **resume}])
        assert story_of_ag_ui(second)[0] == ("result", interrupt["id"], result)
        assert second[-1]["outcome"] == {"type": "success"}


@pytest.mark.parametrize(
    ("resume", "problem"),
    [
        ({"interruptId": "nope", "status": "resolved", "payload": "approve"}, "waits for it"),
        ({"status": "resolved", "payload": "maybe"}, "the payload is a decision"),
        ({"status": "resolved", "payload": {"decision": "approve", "reason": 5}}, "payload"),
    ],
)
async def test_a_resume_entry_for_nothing_or_with_a_bad_decision_is_refused(
    resume: dict[str, Any], problem: str
) -> None:
    async with client_of(make_agent) as client:
        first = await ag_ui(client, "t", [user("u1", "Delete notes.txt")])
        entry = {"interruptId": first[-1]["outcome"]["interrupts"][0]["id"], **resume}
        response = await client.post(
            "/ag-ui", json={"threadId": "t", "runId": "r", "messages": [], "resume": [entry]}
        )
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_ag_ui_input"
        assert problem in response.json()["error"]["message"]


# -- what is refused --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "problem"),
    [
        ({"threadId": "t"}, "invalid_body", "runId"),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [{"name": "add", "description": "x"}],
            },
            "invalid_ag_ui_input",
            "one of the agent's own tools",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [{"name": "a b", "description": "x"}],
            },
            "invalid_ag_ui_input",
            "tools:",
        ),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "url", "value": "https://x/y.png"},
                            }
                        ],
                    }
                ],
            },
            "invalid_ag_ui_input",
            "only text content",
        ),
        ({"threadId": "", "runId": "r", "messages": []}, "invalid_ag_ui_input", "threadId"),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": "x", "status": "cancelled"}],
            },
            "invalid_ag_ui_input",
            "no tool call of this thread waits for it",
        ),
    ],
)
async def test_an_input_that_cannot_run_is_a_422_that_says_why(
    body: dict[str, Any], code: str, problem: str
) -> None:
    async with client_of(make_agent) as client:
        response = await client.post("/ag-ui", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == code
    assert problem in response.json()["error"]["message"]


async def test_a_thread_whose_run_is_busy_is_a_409() -> None:
    started, release = anyio.Event(), anyio.Event()

    @tool
    async def slow() -> str:
        """Wait."""
        started.set()
        await release.wait()
        return "done"

    def factory() -> Agent:
        return Agent(model=ScriptedModel([ToolCall(name="slow"), "ok"]), tools=[slow])

    async with client_of(factory) as client, anyio.create_task_group() as group:
        results: list[list[dict[str, Any]]] = []

        async def first() -> None:
            results.append(await ag_ui(client, "t", [user("u1", "go")]))

        group.start_soon(first)
        await started.wait()
        response = await client.post(
            "/ag-ui", json={"threadId": "t", "runId": "r2", "messages": [user("u2", "again")]}
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "run_in_progress"
        release.set()
    assert story_of_ag_ui(results[0])[-1] == ("text", "ok")


# -- context and instructions -----------------------------------------------------------


async def test_context_and_system_messages_reach_the_model_without_joining_the_conversation() -> (
    None
):
    seen: list[list[tuple[str, str]]] = []

    def answer(request: ModelRequest) -> ScriptItem:
        seen.append([(m.role, m.content) for m in request.messages])
        return "ok"

    def factory() -> Agent:
        return Agent(model=ScriptedModel(answer), instructions="Be brief.")

    async with client_of(factory) as client:
        messages = [{"id": "s", "role": "system", "content": "Speak French."}, user("u", "hi")]
        context = [{"description": "The page", "value": "settings"}]
        await ag_ui(client, "t", messages, context=context)
        assert seen == [
            [
                ("system", "Be brief."),
                ("system", "The page: settings\n\nSpeak French."),
                ("user", "hi"),
            ]
        ]
        assert conversation(client) == [
            ("system", "Be brief."),
            ("user", "hi"),
            ("assistant", "ok"),
        ]


# -- the projection alone ---------------------------------------------------------------


def _projection() -> AGUIProjection:
    ids = iter(range(100))
    return AGUIProjection("t", "r", model="m", new_id=lambda: f"id{next(ids)}")


def test_session_events_are_custom_events_and_a_compaction_is_a_step() -> None:
    projection = _projection()
    kinds: list[str] = [e.type for e in projection.started()]
    for event in (
        SessionCompactionEvent(session_id="s", agent_name="a", status="start"),
        SessionCompactionEvent(session_id="s", agent_name="a", status="started"),
        SessionTitleEvent(session_id="s", agent_name="a", title="Greetings"),
    ):
        kinds += [e.type for e in projection.feed(event)]
    closing = projection.finished()
    kinds += [e.type for e in closing]
    assert kinds == [
        EventType.RUN_STARTED,
        EventType.STEP_STARTED,
        EventType.CUSTOM,
        EventType.CUSTOM,
        EventType.CUSTOM,
        EventType.STEP_FINISHED,  # left open by a compaction that never completed
        EventType.RUN_FINISHED,
    ]


def test_an_error_followed_by_more_events_was_not_the_runs_end() -> None:
    projection = _projection()
    projection.started()
    assert projection.feed(ErrorEvent(session_id="s", agent_name="a", error="no title")) == []
    finished = projection.finished()
    custom = finished[0]
    assert isinstance(custom, CustomEvent)
    assert custom.value == {"error": "no title"}
    assert finished[-1].type == EventType.RUN_FINISHED
    with pytest.raises(RuntimeError, match="closed once"):
        projection.cancelled()


def test_a_cancelled_run_finishes_as_cancelled() -> None:
    projection = _projection()
    projection.started()
    projection.feed(ErrorEvent(session_id="s", agent_name="a", error="cancelled: stop"))
    (event,) = projection.cancelled()
    assert isinstance(event, RunFinishedEvent)
    assert event.outcome is not None
    assert event.outcome.type == "cancelled"


async def test_a_run_cancelled_over_http_finishes_as_cancelled_in_ag_ui() -> None:
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Wait."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    def factory() -> Agent:
        return Agent(model=ScriptedModel([ToolCall(name="slow"), "ok"]), tools=[slow])

    async with client_of(factory) as client, anyio.create_task_group() as group:
        results: list[list[dict[str, Any]]] = []

        async def run() -> None:
            results.append(await ag_ui(client, "t", [user("u1", "go")]))

        group.start_soon(run)
        await started.wait()
        (session,) = client.app.state.sessions  # type: ignore[attr-defined]
        await session.cancel()
    assert results[0][-1]["outcome"] == {"type": "cancelled"}
    assert story_of_ag_ui(results[0])[-1][0] == "result"
