"""Calling agents over A2A: a RemoteAgent in a team, against real A2A servers.

One server (tests/a2a_remote_server.py) is made of the a2a-sdk's own server pieces and runs
in a uvicorn process of its own; its ``/log`` says what it received. The other is an
agentrt agent served by ``agentrt serve``, in a process of its own too.
"""

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrt import Agent, ScriptedModel
from agentrt.a2a import RemoteAgent, RemoteAgentError
from agentrt.a2a.remote import INPUT_TOOL
from agentrt.deferred import Approval
from agentrt.stream import validate
from agentrt.stream.events import StreamEvent, ToolCallConfirmationEvent
from tests.cli.support import REPO, Served, child_env, listening, serving
from tests.test_team_stream import shape, transfer


@pytest.fixture(scope="module")
def ledger_server() -> Iterator[Served]:
    argv = lambda port: ["-m", "tests.a2a_remote_server", str(port)]  # noqa: E731
    with listening(argv, env=child_env(), cwd=REPO) as served:
        yield served


@pytest.fixture
async def ledger(ledger_server: Served) -> AsyncIterator[RemoteAgent]:
    remote = RemoteAgent(ledger_server.url)
    yield remote
    await remote.close()


def received(server: Served) -> list[dict[str, Any]]:
    """What the A2A server received so far, in order."""
    found: list[dict[str, Any]] = httpx.get(f"{server.url}/log").json()
    return found


def lead(script: list[Any], remote: Agent) -> Agent:
    return Agent(model=ScriptedModel(script, chunk_size=1000), name="lead", sub_agents=[remote])


async def run(agent: Agent, prompt: str, *decisions: tuple[str, str | None], **options: Any
              ) -> list[StreamEvent]:  # fmt: skip
    """The run's events, each confirmation answered with the next of ``decisions``."""
    answers = iter(decisions)
    events: list[StreamEvent] = []
    async with agent.stream(prompt, strict=True, **options) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolCallConfirmationEvent) and not options:
                decision, reason = next(answers)
                assert await stream.confirm(event.tool_call.id, decision, reason=reason)
    assert validate(events) == []
    return events


async def test_a_remote_agent_is_named_and_described_by_its_card(ledger: RemoteAgent) -> None:
    assert ledger.name == f"127.0.0.1:{ledger.url.rsplit(':', 1)[1]}"  # its address, until read
    await ledger.initialize()
    assert (ledger.name, ledger.description) == ("ledger", "Keeps the books.")
    assert ledger.card is not None
    assert ledger.card.capabilities.streaming


async def test_a_team_reads_its_remote_agents_card_before_its_model_is_called(
    ledger: RemoteAgent,
) -> None:
    model = ScriptedModel(["nothing to delegate"])
    team = Agent(model=model, name="lead", sub_agents=[ledger])
    await team.execute("hi")
    (transfer_tool,) = model.requests[0].tools
    assert "- ledger: Keeps the books." in transfer_tool["function"]["description"]
    await team.close()


async def test_the_remote_agents_streamed_text_is_in_the_stream_attributed_to_it(
    ledger: RemoteAgent,
) -> None:
    team = lead([transfer("t1", "ledger", "hello there"), "It said hello."], ledger)
    events = await run(team, "greet")
    assert [shape(e) for e in events] == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "ledger")),
        ("partial_tool_call", "lead", None, "t1"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        # What the remote task streams, as it streams it; no usage: A2A tells none.
        ("agent_choice", "ledger", "t1", "Hello"),
        ("agent_choice", "ledger", "t1", ", "),
        ("agent_choice", "ledger", "t1", "world"),
        ("tool_call_response", "lead", None, "t1", "Hello, world"),
        ("agent_choice", "lead", None, "It said hello."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]
    await team.close()


async def test_a_remote_task_that_asks_for_input_is_a_confirmation_answered_on_that_task(
    ledger: RemoteAgent, ledger_server: Served
) -> None:
    team = lead([transfer("t1", "ledger", "transfer 5 EUR"), "Done."], ledger)
    before = len(received(ledger_server))
    events = await run(team, "pay", ("approve", None))
    (asked,) = [e for e in events if isinstance(e, ToolCallConfirmationEvent)]
    assert (asked.agent_name, asked.tool_call.function.name) == ("ledger", INPUT_TOOL)
    question = json.loads(asked.tool_call.function.arguments)
    assert question["question"] == "Approve the transfer of 5 EUR?"
    assert question["data"] == [
        {
            "pending": [
                {"tool_call_id": "remote-1", "name": "transfer", "arguments": '{"amount": 5}'}
            ]
        }
    ]
    first, answer = received(ledger_server)[before:]
    assert (first["text"], first["task"]) == (["transfer 5 EUR"], question["task_id"])
    # The answer is the next message on that task.
    assert (answer["task"], answer["context"]) == (question["task_id"], question["context_id"])
    assert answer["text"] == ["approve"]
    assert answer["data"] == [{"decisions": {"remote-1": {"decision": "approve"}}}]
    ask = asked.tool_call.id
    assert [shape(e) for e in events][5:] == [
        ("tool_call", "lead", None, "t1"),
        ("agent_choice", "ledger", "t1", "Checking the transfer."),
        # The remote task asks: a confirmation of the remote agent's, in our stream.
        ("partial_tool_call", "ledger", "t1", ask),
        ("tool_call_confirmation", "ledger", "t1", ask),
        ("tool_call", "ledger", "t1", ask),
        ("tool_call_response", "ledger", "t1", ask, "approve"),
        # The task goes on after the answer; its last turn answers the delegation.
        ("agent_choice", "ledger", "t1", "approved: transferred"),
        ("tool_call_response", "lead", None, "t1", "approved: transferred"),
        ("agent_choice", "lead", None, "Done."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]
    await team.close()


async def test_a_rejection_goes_to_the_remote_task_with_its_reason(
    ledger: RemoteAgent, ledger_server: Served
) -> None:
    team = lead([transfer("t1", "ledger", "transfer 5 EUR"), "Not paid."], ledger)
    events = await run(team, "pay", ("reject", "too much"))
    answer = received(ledger_server)[-1]
    assert answer["text"] == ["reject"]
    assert answer["data"] == [
        {"decisions": {"remote-1": {"decision": "reject", "reason": "too much"}}}
    ]
    ask = next(e.tool_call.id for e in events if isinstance(e, ToolCallConfirmationEvent))
    assert [shape(e) for e in events][10:13] == [
        ("tool_call_response", "ledger", "t1", ask, "rejected by the user: too much"),
        ("agent_choice", "ledger", "t1", "rejected: too much"),
        ("tool_call_response", "lead", None, "t1", "rejected: too much"),
    ]
    await team.close()


async def test_a_deferred_confirmation_of_a_remote_task_is_answered_by_a_later_run(
    ledger: RemoteAgent, ledger_server: Served
) -> None:
    team = lead([transfer("t1", "ledger", "transfer 5 EUR"), "Done."], ledger)
    events = await run(team, "pay", defer_confirmations=True)
    (asked,) = [e for e in events if isinstance(e, ToolCallConfirmationEvent)]
    waiting = len(received(ledger_server))
    # Nothing waits in memory: a later run answers the call, and the task goes on.
    result = await team.execute(tool_results={asked.tool_call.id: Approval("approve")})
    assert result.output == "Done."
    answer = received(ledger_server)[waiting]
    assert (answer["task"], answer["text"]) == (
        json.loads(asked.tool_call.function.arguments)["task_id"],
        ["approve"],
    )
    await team.close()


async def test_a_failed_remote_task_fails_the_delegation_with_its_message(
    ledger: RemoteAgent,
) -> None:
    team = lead([transfer("t1", "ledger", "fail now"), "It failed."], ledger)
    events = await run(team, "try")
    (response,) = [e for e in events if shape(e)[0] == "tool_call_response"]
    said = shape(response)[-1]
    assert said.startswith("Error: sub-agent 'ledger' failed: RemoteAgentError: the remote task ")
    assert said.endswith(" ended FAILED: the ledger is down")
    await team.close()


async def test_cancelling_the_run_cancels_the_remote_task(
    ledger: RemoteAgent, ledger_server: Served
) -> None:
    team = lead([transfer("t1", "ledger", "slow work")], ledger)
    async with team.stream("work") as stream:
        async for event in stream:
            if shape(event) == ("agent_choice", "ledger", "t1", "working"):
                break  # the remote task works: leave the stream, which cancels the run
    started = [entry for entry in received(ledger_server) if entry.get("text") == ["slow work"]]
    assert received(ledger_server)[-1] == {"cancelled": started[-1]["task"]}
    await team.close()


class CutOnce(httpx.AsyncBaseTransport):
    """A network that cuts the first streamed answer to a request carrying ``sent``, right
    after the chunk carrying ``marker``: with an error, or ``quietly`` (as if the server
    had ended the stream there)."""

    def __init__(self, marker: bytes, sent: bytes = b"", *, quietly: bool = False) -> None:
        self.network = httpx.AsyncHTTPTransport()
        self.marker = marker
        self.sent = sent
        self.quietly = quietly
        self.cut = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.network.handle_async_request(request)
        body = request.content
        if self.cut or b"SendStreamingMessage" not in body or self.sent not in body:
            return response
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=Cutting(self, response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.network.aclose()


class Cutting(httpx.AsyncByteStream):
    def __init__(self, network: CutOnce, stream: httpx.AsyncByteStream) -> None:
        self.network = network
        self.stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream:
            yield chunk
            if self.network.marker in chunk:
                self.network.cut = True
                if self.network.quietly:
                    return
                raise httpx.ReadError("the connection was cut")

    async def aclose(self) -> None:
        await self.stream.aclose()


async def test_a_stream_cut_before_the_task_ends_is_followed_again_without_repeats(
    ledger_server: Served,
) -> None:
    network = CutOnce(b"part one")
    async with httpx.AsyncClient(transport=network) as http:
        remote = RemoteAgent(ledger_server.url, http_client=http)
        team = lead([transfer("t1", "ledger", "resume please"), "Both parts."], remote)
        events = await run(team, "go")
        await team.close()
        await remote.close()
    assert network.cut
    assert [shape(e) for e in events][5:9] == [
        ("tool_call", "lead", None, "t1"),
        ("agent_choice", "ledger", "t1", "part one"),
        ("agent_choice", "ledger", "t1", " and two"),
        ("tool_call_response", "lead", None, "t1", "part one and two"),
    ]
    task = next(e["task"] for e in received(ledger_server) if e.get("text") == ["resume please"])
    assert {"subscribed": task} in received(ledger_server)


async def test_an_answers_stream_that_ends_at_the_task_as_it_stood_is_followed_to_its_end(
    ledger_server: Served,
) -> None:
    # The answer's stream starts with the task as it stood (still asking), and ends
    # there: the request it shows is the one answered, not a new one.
    network = CutOnce(b"TASK_STATE_INPUT_REQUIRED", b'"approve"', quietly=True)
    async with httpx.AsyncClient(transport=network) as http:
        remote = RemoteAgent(ledger_server.url, http_client=http)
        team = lead([transfer("t1", "ledger", "wire 5 EUR"), "Done."], remote)
        events = await run(team, "pay", ("approve", None))
        await team.close()
        await remote.close()
    assert network.cut
    asked = [e for e in events if isinstance(e, ToolCallConfirmationEvent)]
    assert len(asked) == 1
    assert [shape(e) for e in events][-5:-3] == [
        ("agent_choice", "ledger", "t1", "approved: transferred"),
        ("tool_call_response", "lead", None, "t1", "approved: transferred"),
    ]


async def test_a_remote_agent_that_cannot_be_reached_fails_only_the_delegation() -> None:
    remote = RemoteAgent("http://127.0.0.1:9/nowhere")
    with pytest.raises(RemoteAgentError, match="cannot read the A2A agent card of http"):
        await remote.initialize()
    team = lead([transfer("t1", "127.0.0.1:9/nowhere", "hello"), "It is down."], remote)
    result = await team.execute("greet")
    assert result.output == "It is down."
    await team.close()
    await remote.close()


@pytest.mark.parametrize("url", ["ftp://host/agent", "localhost:8000", "", "http://"])
def test_a_remote_agents_url_is_an_http_url(url: str) -> None:
    with pytest.raises(ValueError, match="a remote agent's url is an http\\(s\\) URL"):
        RemoteAgent(url)


async def test_a_remote_agents_headers_are_given_once() -> None:
    async with httpx.AsyncClient() as http:
        with pytest.raises(ValueError, match="give headers or an http_client"):
            RemoteAgent("http://127.0.0.1:9", headers={"X": "y"}, http_client=http)
    with pytest.raises(TypeError, match=r"http_client must be an httpx\.AsyncClient"):
        RemoteAgent("http://127.0.0.1:9", http_client="client")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="headers must be a mapping"):
        RemoteAgent("http://127.0.0.1:9", headers=[("X", "y")])  # type: ignore[arg-type]


# The agentrt agent examples/a2a_team.py serves: it knows one fact, and books (a tool that
# asks for approval). Its text streams in pieces of 8 characters.
RESEARCHER = f"{REPO / 'examples' / 'a2a_team.py'}:make_researcher"


def joined(events: list[StreamEvent]) -> list[tuple[Any, ...]]:
    """The shapes of ``events``, an agent's consecutive pieces of text joined."""
    shapes: list[tuple[Any, ...]] = []
    for event in events:
        item = shape(event)
        if item[0] == "agent_choice" and shapes and shapes[-1][:3] == item[:3]:
            item = (*item[:3], shapes.pop()[3] + item[3])
        shapes.append(item)
    return shapes


@pytest.fixture(scope="module")
def researcher_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``agentrt serve`` of an agentrt agent, in a process of its own."""
    with serving(RESEARCHER, env=child_env(), cwd=tmp_path_factory.mktemp("served")) as served:
        yield served


@pytest.mark.parametrize(
    ("decision", "reason", "done"),
    [
        ("approve", None, "Done: ticket to Lyon booked."),
        ("reject", "not today", "Done: rejected by the user: not today."),
    ],
)
async def test_an_agentrt_agent_calls_another_served_by_agentrt_serve_over_a2a(
    researcher_server: Served, decision: str, reason: str | None, done: str
) -> None:
    script = [
        transfer("t1", "researcher", "How many people live in Lyon?"),
        transfer("t2", "researcher", "Book a ticket to Lyon."),
        "Booked.",
    ]
    async with RemoteAgent(researcher_server.url) as researcher:
        team = lead(script, researcher)
        events = await run(team, "Lyon?", (decision, reason))
        await team.close()
    (asked,) = [e for e in events if isinstance(e, ToolCallConfirmationEvent)]
    ask = asked.tool_call.id
    question = json.loads(asked.tool_call.function.arguments)
    # The served agent's own confirmation, as agentrt serve asks for it over A2A.
    assert question["question"] == 'Approve the call of book with {"city": "Lyon"}?'
    (pending,) = question["data"][0]["pending"]
    assert (pending["name"], pending["arguments"]) == ("book", '{"city": "Lyon"}')
    answered = "approve" if reason is None else f"rejected by the user: {reason}"
    assert joined(events) == [
        ("user_message",),
        ("stream_started",),
        ("team_info", ("lead", "researcher")),
        ("partial_tool_call", "lead", None, "t1"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t1"),
        ("agent_choice", "researcher", "t1", "Lyon has 522,250 inhabitants."),
        ("tool_call_response", "lead", None, "t1", "Lyon has 522,250 inhabitants."),
        ("partial_tool_call", "lead", None, "t2"),
        ("token_usage", "lead", None),
        ("tool_call", "lead", None, "t2"),
        ("partial_tool_call", "researcher", "t2", ask),
        ("tool_call_confirmation", "researcher", "t2", ask),
        ("tool_call", "researcher", "t2", ask),
        ("tool_call_response", "researcher", "t2", ask, answered),
        # The decision reached the served run: its tool ran, or was rejected with the reason.
        ("agent_choice", "researcher", "t2", done),
        ("tool_call_response", "lead", None, "t2", done),
        ("agent_choice", "lead", None, "Booked."),
        ("token_usage", "lead", None),
        ("stream_stopped",),
    ]


async def test_a_server_with_a_token_is_called_with_it_in_the_headers(tmp_path: Path) -> None:
    task = transfer("t1", "researcher", "How many people live in Lyon?")
    with serving(RESEARCHER, "--token", "s3cret-token", env=child_env(), cwd=tmp_path) as s:
        bearer = {"Authorization": "Bearer s3cret-token"}
        async with RemoteAgent(s.url, headers=bearer) as researcher:
            team = lead([task, "Big."], researcher)
            events = await run(team, "Lyon?")
            await team.close()
        # Without it, the card is read (it says a token is needed), the task is refused.
        async with RemoteAgent(s.url) as stranger:
            team = lead([task, "Refused."], stranger)
            refused = await run(team, "Lyon?")
            await team.close()
    assert ("tool_call_response", "lead", None, "t1", "Lyon has 522,250 inhabitants.") in [
        shape(e) for e in events
    ]
    (response,) = [shape(e) for e in refused if shape(e)[0] == "tool_call_response"]
    assert "failed: RemoteAgentError: the A2A agent at http" in response[-1]
    assert "401" in response[-1]
