"""A2A served by agentrt, checked by the official client (``a2a-sdk``) on a real server.

Each test starts ``make_server`` on a free loopback port and talks to it with
``a2a.client`` over both bindings where the binding matters (JSON-RPC, HTTP+JSON): the
card, a streamed answer, tool calls, a confirmation round trip, a failure, a cancel,
reading and following tasks, and what is refused.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import A2AClientError, ClientConfig, create_client
from a2a.client.client import Client
from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotCancelableError
from google.protobuf.json_format import MessageToDict

from agentrt import Agent, ScriptedModel, ToolCall
from agentrt.a2a.server import CANCELLED_BY_A2A, context_session_id
from agentrt.server import AgentServer, SecurityPolicy, create_app
from agentrt.server.limits import ServerLimits

from .server_support import ADD_SCRIPT, Gate, add, confirm_script, delete_file, real_server

BINDINGS = ["JSONRPC", "HTTP+JSON"]
ANSWER = "Hello from agentrt, streamed in pieces over A2A."
TOKEN = "a-token-of-the-server"


def factory(*script: Any, tools: tuple[Any, ...] = ()) -> Callable[[], Agent]:
    def make() -> Agent:
        model = ScriptedModel(list(script), chunk_size=8)
        return Agent(
            model=model,
            tools=[add, delete_file, *tools],
            name="helper",
            description="Adds numbers and deletes files.",
        )

    return make


@asynccontextmanager
async def a2a_client(
    server: AgentServer, binding: str = "JSONRPC", *, streaming: bool = True, token: str = ""
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=20, headers=headers) as http:
        config = ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
        )
        client = await create_client(f"http://127.0.0.1:{server.port}", config)
        async with client:
            yield client


def user(text: str = "", *, task: Task | None = None, parts: list[Part] | None = None) -> Any:
    message = Message(message_id=f"m-{text or 'parts'}", role=Role.ROLE_USER)
    message.parts.extend(parts or [new_text_part(text)])
    if task is not None:
        message.task_id = task.id
        message.context_id = task.context_id
    return SendMessageRequest(message=message)


async def stream(client: Client, request: Any) -> list[StreamResponse]:
    return [response async for response in client.send_message(request)]


def kinds(responses: list[StreamResponse]) -> list[str]:
    """Each response's kind, and the state of tasks and status updates."""
    out = []
    for response in responses:
        kind = response.WhichOneof("payload")
        if kind == "task":
            out.append(f"task {TaskState.Name(response.task.status.state)}")
        elif kind == "status_update":
            out.append(f"status {TaskState.Name(response.status_update.status.state)}")
        else:
            out.append(str(kind))
    return out


def artifact_text(responses: list[StreamResponse], artifact_id: str) -> str:
    return "".join(
        part.text
        for response in responses
        if response.HasField("artifact_update")
        and response.artifact_update.artifact.artifact_id == artifact_id
        for part in response.artifact_update.artifact.parts
    )


def status_data(responses: list[StreamResponse]) -> list[dict[str, Any]]:
    """The data parts of the status messages, in order."""
    return [
        data
        for response in responses
        if response.HasField("status_update")
        for data in get_data_parts(response.status_update.status.message.parts)
    ]


def said(message: Message) -> str:
    """Who said a message of a task's history, and its text, or its data part's type
    (its keys, without one)."""
    who = "user" if message.role == Role.ROLE_USER else "agent"
    data = get_data_parts(message.parts)
    if not data:
        return f"{who}: {message.parts[0].text}"
    return f"{who}: {data[0].get('type') or ','.join(data[0])}"


def the_task(responses: list[StreamResponse]) -> Task:
    first = responses[0]
    assert first.HasField("task")
    return first.task


# -- the card --------------------------------------------------------------------------------


async def test_the_card_names_the_agent_its_tools_both_bindings_and_streaming() -> None:
    async with real_server(factory("hi")) as (server, client):
        card = (await client.get("/.well-known/agent-card.json")).json()
        base = f"http://127.0.0.1:{server.port}"
    assert card["name"] == "helper"
    assert card["description"] == "Adds numbers and deletes files."
    assert card["capabilities"] == {"streaming": True, "pushNotifications": False}
    assert card["supportedInterfaces"] == [
        {"url": f"{base}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": f"{base}/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    assert [(s["id"], s["tags"]) for s in card["skills"]] == [
        ("helper", ["agent"]),
        ("helper.add", ["tool"]),
        ("helper.delete_file", ["tool"]),
    ]
    assert card["skills"][1]["description"] == "Add two integers."
    assert "securitySchemes" not in card


def test_without_the_a2a_sdk_installed_no_a2a_is_served_whatever_import_a2a_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `import a2a` finds the SDK here; a folder named a2a beside a served file would be
    # found the same way, and is not the SDK: what is installed decides.
    real = importlib.metadata.distribution

    def distribution(name: str) -> importlib.metadata.Distribution:
        if name == "a2a-sdk":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    paths = {getattr(route, "path", None) for route in create_app(factory("hi")).routes}
    assert "/.well-known/agent-card.json" not in paths
    assert "/sessions" in paths
    monkeypatch.undo()
    paths = {getattr(route, "path", None) for route in create_app(factory("hi")).routes}
    assert "/.well-known/agent-card.json" in paths


async def test_the_card_is_cached_by_etag_for_five_minutes() -> None:
    async with real_server(factory("hi")) as (_, client):
        first = await client.get("/.well-known/agent-card.json")
        etag = first.headers["etag"]
        again = await client.get("/.well-known/agent-card.json", headers={"If-None-Match": etag})
    assert first.headers["cache-control"] == "public, max-age=300"
    assert first.headers["last-modified"].endswith(" GMT")
    assert etag.startswith('W/"')
    assert again.status_code == 304
    assert again.headers["etag"] == etag


async def test_with_a_token_the_card_declares_it_and_is_the_one_thing_read_without_it() -> None:
    security = SecurityPolicy(token=TOKEN)
    async with real_server(factory(ANSWER), security=security) as (server, client):
        card = (await client.get("/.well-known/agent-card.json")).json()
        assert card["securitySchemes"] == {
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "The server's token: Authorization: Bearer <token>.",
                }
            }
        }
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
        for binding in BINDINGS:
            async with a2a_client(server, binding) as a2a:
                with pytest.raises(A2AClientError, match="401"):
                    await stream(a2a, user("hi"))
            async with a2a_client(server, binding, token=TOKEN) as a2a:
                responses = await stream(a2a, user("hi"))
            assert artifact_text(responses, "text-1") == ANSWER
        # The Host rule holds for the card too.
        refused = await client.get("/.well-known/agent-card.json", headers={"Host": "evil.test"})
        assert refused.status_code == 403


async def test_a_foreign_origin_or_a_form_body_cannot_send_a_task() -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    }
    async with real_server(factory(ANSWER)) as (server, client):
        foreign = await client.post(
            "/a2a", json=body, headers={"A2A-Version": "1.0", "Origin": "https://evil.test"}
        )
        form = await client.post(
            "/a2a/rest/message:send",
            content=json.dumps(body["params"]),
            headers={"A2A-Version": "1.0", "Content-Type": "text/plain"},
        )
        assert (foreign.status_code, foreign.json()["error"]["code"]) == (
            403,
            "origin_not_allowed",
        )
        assert (form.status_code, form.json()["error"]["code"]) == (415, "unsupported_media_type")
        assert len(server.sessions) == 0


# -- answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_streamed_answer_is_artifact_chunks_that_append_to_the_runs_answer(
    binding: str,
) -> None:
    async with real_server(factory(ANSWER)) as (server, _), a2a_client(server, binding) as a2a:
        responses = await stream(a2a, user("hi"))
    chunks = [r.artifact_update for r in responses if r.HasField("artifact_update")]
    assert [(c.append, c.last_chunk) for c in chunks] == [
        (False, False),
        *[(True, False)] * 5,
        (True, True),
    ]
    assert artifact_text(responses, "text-1") == ANSWER
    assert kinds(responses) == [
        "task TASK_STATE_SUBMITTED",
        "status TASK_STATE_WORKING",
        *["artifact_update"] * 6,
        "status TASK_STATE_WORKING",  # the usage
        "artifact_update",
        "status TASK_STATE_COMPLETED",
    ]
    usage = MessageToDict(responses[-3].status_update.metadata)["agentrt"]["usage"]
    assert usage["outputTokens"] > 0
    task = the_task(responses)
    assert task.context_id
    assert task.id.startswith(context_session_id(task.context_id) + ".")


async def test_send_message_without_streaming_returns_the_completed_task() -> None:
    async with (
        real_server(factory(ANSWER)) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        [response] = await stream(a2a, user("hi"))
        task = response.task
        assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
        assert [(a.artifact_id, a.parts[0].text) for a in task.artifacts] == [("text-1", ANSWER)]
        # The conversation: the client's message (its own id), then the agent's answer.
        assert [(m.message_id, m.role, m.parts[0].text) for m in task.history] == [
            ("m-hi", Role.ROLE_USER, "hi"),
            (f"{task.id}.text-1", Role.ROLE_AGENT, ANSWER),
        ]
        again = await a2a.get_task(GetTaskRequest(id=task.id))
        assert again == task
        # The context goes on: the next task is another run of the same session.
        following = user("again")
        following.message.context_id = task.context_id
        [second] = await stream(a2a, following)
        assert second.task.context_id == task.context_id
        assert second.task.id != task.id


async def test_a_tool_call_and_its_response_are_status_messages_and_each_turn_its_artifact() -> (
    None
):
    async with real_server(factory(*ADD_SCRIPT)) as (server, _), a2a_client(server) as a2a:
        responses = await stream(a2a, user("add 1 and 2"))
        data = status_data(responses)
        assert [(d["type"], d["tool_call"]["id"]) for d in data] == [
            ("tool_call", "call-add"),
            ("tool_call_response", "call-add"),
        ]
        assert data[0]["tool_call"]["function"] == {"name": "add", "arguments": '{"a": 1, "b": 2}'}
        assert data[1]["response"] == "3"
        assert artifact_text(responses, "text-1") == "1 + 2 = 3"
        task = await a2a.get_task(GetTaskRequest(id=the_task(responses).id))
        assert [said(m) for m in task.history] == [
            "user: add 1 and 2",
            "agent: tool_call",
            "agent: tool_call_response",
            "agent: 1 + 2 = 3",
        ]


async def test_text_said_before_a_tool_call_is_its_own_artifact_and_the_last_the_answer() -> None:
    from agentrt.messages import AssistantMessage

    script = [
        AssistantMessage(
            content="Let me add them.",
            tool_calls=(ToolCall(id="call-add", name="add", arguments={"a": 2, "b": 3}),),
        ),
        "The sum is 5.",
    ]
    async with (
        real_server(factory(*script)) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        [response] = await stream(a2a, user("add"))
    assert [(a.artifact_id, a.parts[0].text) for a in response.task.artifacts] == [
        ("text-1", "Let me add them."),
        ("text-2", "The sum is 5."),
    ]


async def test_a_failed_run_is_a_failed_task_whose_status_message_is_the_error() -> None:
    async with (
        real_server(factory(RuntimeError("the model is unavailable"))) as (server, _),
        a2a_client(server) as a2a,
    ):
        responses = await stream(a2a, user("hi"))
    last = responses[-1].status_update.status
    assert TaskState.Name(last.state) == "TASK_STATE_FAILED"
    assert "the model is unavailable" in last.message.parts[0].text


# -- confirmations ---------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_confirmation_is_input_required_and_a_decisions_data_part_answers_it(
    binding: str,
) -> None:
    async with (
        real_server(factory(*confirm_script())) as (server, _),
        a2a_client(server, binding) as a2a,
    ):
        asked = await stream(a2a, user("delete notes.txt"))
        assert kinds(asked)[-1] == "status TASK_STATE_INPUT_REQUIRED"
        question = asked[-1].status_update.status.message
        assert question.parts[0].text == (
            'Approve the call of delete_file with {"path": "notes.txt"}?'
        )
        assert get_data_parts(question.parts)[0] == {
            "type": "tool_call_confirmation",
            "pending": [
                {
                    "toolCallId": "call-del",
                    "name": "delete_file",
                    "arguments": '{"path": "notes.txt"}',
                    "agentName": "helper",
                }
            ],
            "decisions": ["approve", "approve-session", "approve-tool", "reject"],
        }
        task = the_task(asked)
        read = await a2a.get_task(GetTaskRequest(id=task.id))
        assert TaskState.Name(read.status.state) == "TASK_STATE_INPUT_REQUIRED"
        answer = user(task=task, parts=[new_data_part({"decisions": {"call-del": "approve"}})])
        rest = await stream(a2a, answer)
    assert kinds(rest)[0] == "task TASK_STATE_WORKING"
    assert kinds(rest)[-1] == "status TASK_STATE_COMPLETED"
    assert [(d["type"], d.get("response")) for d in status_data(rest)] == [
        ("tool_call", None),
        ("tool_call_response", "deleted notes.txt"),
    ]
    assert artifact_text(rest, "text-1") == "done with the file"


@pytest.mark.parametrize(
    ("text", "response"),
    [
        ("reject", "rejected by the user"),
        ("Reject", "rejected by the user"),
        ("not that file, it is mine", "rejected by the user: not that file, it is mine"),
    ],
)
async def test_text_other_than_approve_rejects_every_call_waiting_and_the_task_goes_on(
    text: str, response: str
) -> None:
    async with (
        real_server(factory(*confirm_script())) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        [asked] = await stream(a2a, user("delete notes.txt"))
        assert TaskState.Name(asked.task.status.state) == "TASK_STATE_INPUT_REQUIRED"
        [done] = await stream(a2a, user(text, task=asked.task))
    assert TaskState.Name(done.task.status.state) == "TASK_STATE_COMPLETED"
    history = done.task.history
    assert [said(m) for m in history] == [
        "user: delete notes.txt",
        "agent: tool_call_confirmation",
        f"user: {text}",
        "agent: tool_call",
        "agent: tool_call_response",
        "agent: done with the file",
    ]
    answer = get_data_parts(history[-2].parts)[0]
    assert answer["response"] == response


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_tasks_history_is_its_conversation_with_the_clients_own_messages(
    binding: str,
) -> None:
    async with (
        real_server(factory(*confirm_script())) as (server, _),
        a2a_client(server, binding) as a2a,
    ):
        asked = await stream(a2a, user("delete notes.txt"))
        task = the_task(asked)
        # The first task of the stream holds the message that started it, as sent.
        [first] = task.history
        assert (first.message_id, first.task_id, first.context_id) == (
            "m-delete notes.txt",
            task.id,
            task.context_id,
        )
        assert first.parts[0].text == "delete notes.txt"
        decisions = new_data_part({"decisions": {"call-del": "approve"}})
        answer = user(task=task, parts=[decisions])
        answer.message.message_id = "m-my-answer"
        rest = await stream(a2a, answer)
        assert [said(m) for m in the_task(rest).history] == [
            "user: delete notes.txt",
            "agent: tool_call_confirmation",
            "user: decisions",
        ]
        read = await a2a.get_task(GetTaskRequest(id=task.id))
        last_two = await a2a.get_task(GetTaskRequest(id=task.id, history_length=2))
    assert [(m.message_id, said(m)) for m in read.history] == [
        ("m-delete notes.txt", "user: delete notes.txt"),
        (f"{task.id}.input-1", "agent: tool_call_confirmation"),
        ("m-my-answer", "user: decisions"),
        (f"{task.id}.tool_call-2", "agent: tool_call"),
        (f"{task.id}.tool_call_response-3", "agent: tool_call_response"),
        (f"{task.id}.text-1", "agent: done with the file"),
    ]
    assert get_data_parts(read.history[2].parts) == [{"decisions": {"call-del": "approve"}}]
    assert list(last_two.history) == list(read.history[-2:])


async def test_each_answer_to_a_task_that_asks_again_is_in_its_history_in_order() -> None:
    # The A2A TCK's CORE-HIST-005/006: follow-up messages to a task that waits, then
    # GetTask with historyLength; here the agent asks twice, each answer a text.
    script = [
        ToolCall(id="call-1", name="delete_file", arguments={"path": "a.txt"}),
        ToolCall(id="call-2", name="delete_file", arguments={"path": "b.txt"}),
        "kept both",
    ]
    async with (
        real_server(factory(*script)) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        [asked] = await stream(a2a, user("delete two files"))
        task = asked.task
        [again] = await stream(a2a, user("history message 1", task=task))
        assert TaskState.Name(again.task.status.state) == "TASK_STATE_INPUT_REQUIRED"
        [done] = await stream(a2a, user("history message 2", task=task))
        assert TaskState.Name(done.task.status.state) == "TASK_STATE_COMPLETED"
        read = await a2a.get_task(GetTaskRequest(id=task.id, history_length=10))
    assert [(m.message_id, said(m)) for m in read.history if m.role == Role.ROLE_USER] == [
        ("m-delete two files", "user: delete two files"),
        ("m-history message 1", "user: history message 1"),
        ("m-history message 2", "user: history message 2"),
    ]
    assert [said(m) for m in read.history] == [
        "user: delete two files",
        "agent: tool_call_confirmation",
        "user: history message 1",
        "agent: tool_call",
        "agent: tool_call_response",
        "agent: tool_call_confirmation",
        "user: history message 2",
        "agent: tool_call",
        "agent: tool_call_response",
        "agent: kept both",
    ]


async def test_a_task_whose_events_left_the_log_still_tells_how_it_ended() -> None:
    async with (
        real_server(factory(ANSWER, ANSWER), retain=6) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        [sent] = await stream(a2a, user("hi"))
        task = sent.task
        # Its own first events are gone already (10 events, 6 kept): what is left tells it.
        read = await a2a.get_task(GetTaskRequest(id=task.id))
        # The next task of the context pushes the rest out of the log.
        following = user("again")
        following.message.context_id = task.context_id
        await stream(a2a, following)
        ended = await a2a.get_task(GetTaskRequest(id=task.id))
        listed = await a2a.list_tasks(ListTasksRequest(context_id=task.context_id))
    gone = "its events are no longer kept (a session keeps its retain latest)"
    assert TaskState.Name(read.status.state) == "TASK_STATE_COMPLETED"
    assert MessageToDict(read.metadata)["agentrt"]["partial"] == (
        f"{gone}: what is told starts at its event 5"
    )
    assert [m.message_id for m in read.history] == ["m-hi", f"{task.id}.text-1"]
    assert read.artifacts[0].parts[0].text == ANSWER[16:]  # from its 3rd delta of 6
    assert TaskState.Name(ended.status.state) == "TASK_STATE_COMPLETED"
    assert ended.status.timestamp == read.status.timestamp
    assert MessageToDict(ended.metadata)["agentrt"] == {
        "runId": MessageToDict(task.metadata)["agentrt"]["runId"],
        "partial": f"{gone}: this is its end",
    }
    assert [m.message_id for m in ended.history] == ["m-hi"]
    assert [TaskState.Name(t.status.state) for t in listed.tasks] == ["TASK_STATE_COMPLETED"] * 2


# -- reading, following, cancelling ----------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_task_stops_the_run_and_the_task_is_canceled(binding: str) -> None:
    gate = Gate()
    async with (
        real_server(factory(*gate.script(), tools=(gate.tool,))) as (server, _),
        a2a_client(server, binding, streaming=False) as a2a,
    ):
        request = user("wait")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        responses = await stream(a2a, request)
        task = the_task(responses)
        await gate.entered.wait()
        cancelled = await a2a.cancel_task(CancelTaskRequest(id=task.id))
        assert TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
        assert cancelled.status.message.parts[0].text == CANCELLED_BY_A2A
        read = await a2a.get_task(GetTaskRequest(id=task.id))
        assert TaskState.Name(read.status.state) == "TASK_STATE_CANCELED"
        with pytest.raises(TaskNotCancelableError, match="canceled already"):
            await a2a.cancel_task(CancelTaskRequest(id=task.id))


async def test_subscribe_follows_a_task_at_work_to_its_end_and_list_tasks_shows_it() -> None:
    gate = Gate()
    async with (
        real_server(factory(*gate.script(), tools=(gate.tool,))) as (server, _),
        a2a_client(server, streaming=False) as sender,
        a2a_client(server) as a2a,
    ):
        request = user("wait")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        task = the_task(await stream(sender, request))
        await gate.entered.wait()
        followed: list[StreamResponse] = []

        async def subscribe() -> None:
            async for response in a2a.subscribe(SubscribeToTaskRequest(id=task.id)):
                followed.append(response)
                if len(followed) == 1:
                    gate.opened.set()

        with anyio.fail_after(20):
            await subscribe()
        listed = await a2a.list_tasks(ListTasksRequest(context_id=task.context_id))
        with pytest.raises(A2AError, match="completed"):
            await stream_subscription(a2a, task.id)
    assert kinds(followed)[0] == "task TASK_STATE_WORKING"
    assert kinds(followed)[-1] == "status TASK_STATE_COMPLETED"
    assert artifact_text(followed, "text-1") == "after the gate"
    assert [(t.id, TaskState.Name(t.status.state)) for t in listed.tasks] == [
        (task.id, "TASK_STATE_COMPLETED")
    ]
    assert listed.total_size == 1


async def test_list_tasks_pages_by_cursor_latest_change_first_and_filters_by_time() -> None:
    async with (
        real_server(factory(ANSWER)) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        first, second, third = [(await stream(a2a, user(t)))[0].task for t in "abc"]
        one = await a2a.list_tasks(ListTasksRequest(page_size=1))
        # A task that changes between two pages does not shift the pages that follow.
        fourth = (await stream(a2a, user("d")))[0].task
        two = await a2a.list_tasks(ListTasksRequest(page_size=1, page_token=one.next_page_token))
        three = await a2a.list_tasks(ListTasksRequest(page_size=2, page_token=two.next_page_token))
        since = await a2a.list_tasks(
            ListTasksRequest(status_timestamp_after=second.status.timestamp)
        )
        with pytest.raises(A2AError, match="pageToken 'page-2' is not one this server gave"):
            await a2a.list_tasks(ListTasksRequest(page_token="page-2"))
    assert [t.id for t in one.tasks] == [third.id]
    assert [t.id for t in two.tasks] == [second.id]
    assert ([t.id for t in three.tasks], three.next_page_token) == ([first.id], "")
    assert (one.total_size, two.total_size) == (3, 4)
    # At or after the time given: the task whose status has that very time too.
    assert [t.id for t in since.tasks] == [fourth.id, third.id, second.id]


async def test_a_fork_of_a_contexts_session_is_no_context_of_list_tasks() -> None:
    async with (
        real_server(factory(ANSWER)) as (server, client),
        a2a_client(server, streaming=False) as a2a,
    ):
        task = (await stream(a2a, user("hi")))[0].task
        forked = await client.post(
            f"/sessions/{context_session_id(task.context_id)}/fork", json={"at": 2}
        )
        assert forked.status_code == 201
        listed = await a2a.list_tasks(ListTasksRequest())
    assert [t.id for t in listed.tasks] == [task.id]


async def stream_subscription(client: Client, task_id: str) -> list[StreamResponse]:
    return [r async for r in client.subscribe(SubscribeToTaskRequest(id=task_id))]


# -- refusals --------------------------------------------------------------------------------


async def test_what_cannot_run_is_refused_with_an_error_that_says_why() -> None:
    async with (
        real_server(factory(*confirm_script(), ANSWER)) as (server, _),
        a2a_client(server, streaming=False) as a2a,
    ):
        with pytest.raises(A2AError, match="no task 'nothing'"):
            await a2a.get_task(GetTaskRequest(id="nothing"))
        too_long = user("hi")
        too_long.message.context_id = "c" * 257
        with pytest.raises(A2AError, match="contextId must be at most 256 characters"):
            await stream(a2a, too_long)
        with pytest.raises(A2AError, match="text parts only"):
            await stream(a2a, user(parts=[new_data_part({"x": 1})]))
        [asked] = await stream(a2a, user("delete"))
        task = asked.task
        with pytest.raises(A2AError, match="waits for decisions"):
            await stream(a2a, user(task=task, parts=[new_data_part({"yes": True})]))
        wrong = new_data_part({"decisions": {"other": "approve"}})
        with pytest.raises(A2AError, match="no tool call 'other'"):
            await stream(a2a, user(task=task, parts=[wrong]))
        following = user("hello")
        following.message.context_id = task.context_id
        with pytest.raises(A2AError, match="has a task at work"):
            await stream(a2a, following)
        [done] = await stream(a2a, user("approve", task=task))
        assert TaskState.Name(done.task.status.state) == "TASK_STATE_COMPLETED"
        with pytest.raises(A2AError, match="is completed: it takes no more messages"):
            await stream(a2a, user("approve", task=task))


async def test_a_body_over_the_servers_limit_is_refused_before_any_run() -> None:
    async with real_server(factory(ANSWER), max_body_size=2000) as (server, client):
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x" * 4000}]}
            },
        }
        answer = await client.post("/a2a", json=body, headers={"A2A-Version": "1.0"})
        assert answer.json()["error"]["message"] == "Payload too large"
        rest = await client.post(
            "/a2a/rest/message:send", json=body["params"], headers={"A2A-Version": "1.0"}
        )
        assert (rest.status_code, rest.json()["error"]["code"]) == (413, 413)

        async def chunks() -> AsyncIterator[bytes]:
            # Sent in chunks: no Content-Length tells the size beforehand.
            text = json.dumps(body["params"]).encode()
            for start in range(0, len(text), 1000):
                yield text[start : start + 1000]

        chunked = await client.post(
            "/a2a/rest/message:send", content=chunks(), headers={"A2A-Version": "1.0"}
        )
        assert "content-length" not in chunked.request.headers
        assert (chunked.status_code, chunked.json()["error"]) == (
            413,
            {
                "code": 413,
                "status": "INVALID_ARGUMENT",
                "message": "the request body is over the server's 2000 bytes",
            },
        )
        assert server.sessions.runs == 0
        assert len(server.sessions) == 0


async def test_a2a_calls_count_as_event_streams_for_the_servers_cap() -> None:
    gate = Gate()
    limits = ServerLimits(max_streams=1)
    async with (
        real_server(factory(*gate.script(), tools=(gate.tool,)), limits=limits) as (server, _),
        a2a_client(server) as a2a,
        anyio.create_task_group() as group,
    ):
        group.start_soon(stream, a2a, user("wait"))
        await gate.entered.wait()
        for binding in BINDINGS:
            async with a2a_client(server, binding) as other:
                # Bounded: past the cap, this task would wait at the gate too.
                with anyio.fail_after(10), pytest.raises(A2AClientError, match="429"):
                    await stream(other, user("hi"))
        gate.opened.set()


async def test_a_message_over_the_servers_limit_is_refused() -> None:
    limits = ServerLimits(max_message_chars=10)
    async with (
        real_server(factory(ANSWER), limits=limits) as (server, _),
        a2a_client(server) as a2a,
    ):
        with pytest.raises(A2AError, match="10"):
            await stream(a2a, user("a message longer than ten characters"))
