"""agentrt.deferred: runs that end waiting on tool calls, and the runs that answer them."""

from typing import Any

import pytest

from agentrt import (
    DEFER,
    Agent,
    Approval,
    AssistantMessage,
    ExternalTool,
    Message,
    ModelResponse,
    NotPendingError,
    ScriptedModel,
    ToolCall,
    ToolError,
    ToolMessage,
    ToolResponse,
    ToolResultError,
    UserMessage,
    tool,
)
from agentrt._loop import CANCELLED_TOOL_RESPONSE
from agentrt.bus import EventContext
from agentrt.deferred import UNANSWERED_TOOL_RESPONSE
from agentrt.exceptions import ToolDefinitionError
from agentrt.testing import EventRecorder
from tests.conftest import AgentFactory, add

LOCATE = ExternalTool(
    "locate",
    "Where the user's browser is.",
    {"type": "object", "properties": {"precise": {"type": "boolean"}}},
)
PICK = ExternalTool(
    "pick_colour",
    "Ask the user to pick a colour.",
    {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
)
WHERE = ToolCall(id="call_where", name="locate", arguments={"precise": True})
COLOUR = ToolCall(id="call_colour", name="pick_colour", arguments={"prompt": "Which?"})
ADD = ToolCall(id="call_add", name="add", arguments={"a": 1, "b": 2})

ran: list[str] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


DELETE = ToolCall(id="call_delete", name="delete_file", arguments={"path": "a.txt"})


def defer_every_call(ctx: EventContext[Any, Any]) -> None:
    """A tool:call:before handler that holds every call for a later run."""
    ctx.output = DEFER


def roles(messages: Any) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def plain(messages: list[Message]) -> list[Message]:
    """``messages`` with the usage of assistant messages left out (the script estimates it)."""
    return [m.model_copy(update={"usage": None}) if m.role == "assistant" else m for m in messages]


# -- ExternalTool ----------------------------------------------------------------------------


def test_an_external_tool_offers_its_own_schema_to_the_model() -> None:
    assert LOCATE.signature() == {
        "type": "function",
        "function": {
            "name": "locate",
            "description": "Where the user's browser is.",
            "parameters": {"type": "object", "properties": {"precise": {"type": "boolean"}}},
        },
    }
    assert repr(LOCATE) == "ExternalTool(name='locate')"


async def test_an_external_tool_never_runs_in_the_agent() -> None:
    with pytest.raises(ToolError, match="runs in the caller"):
        await LOCATE.run({"precise": True})
    with pytest.raises(ToolError, match="runs in the caller"):
        LOCATE()


@pytest.mark.parametrize(
    ("parameters", "error", "message"),
    [
        ("{}", TypeError, "parameters is a JSON schema"),
        ({"type": "string"}, ValueError, "must be an object schema"),
        ({"properties": {}}, ValueError, "must be an object schema"),
        ({"type": "object", "properties": []}, ValueError, "properties .* must be an object"),
        ({"type": "object", "default": {1, 2}}, ValueError, "is not JSON"),
    ],
)
def test_an_external_tool_refuses_a_schema_that_is_not_an_object_schema(
    parameters: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ExternalTool("locate", "Where.", parameters)


def test_an_external_tool_refuses_a_malformed_name_or_description() -> None:
    with pytest.raises(ToolDefinitionError, match="1 to 64 letters"):
        ExternalTool("no spaces", "Where.", {"type": "object"})
    with pytest.raises(TypeError, match="name is a string"):
        ExternalTool(3, "Where.", {"type": "object"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="description is a string"):
        ExternalTool("locate", None, {"type": "object"})  # type: ignore[arg-type]


# -- a run that ends waiting -------------------------------------------------------------------


async def test_a_call_to_an_external_tool_ends_the_run_waiting_after_the_turns_other_calls(
    make_agent: AgentFactory, recorder: EventRecorder
) -> None:
    agent = make_agent(
        [ModelResponse(content="Let me look.", tool_calls=(WHERE, ADD)), "never asked"],
        tools=[add, LOCATE],
    )
    agent.events.on("tool:call:*", recorder)
    result = await agent.execute("Where am I, and what is 1 + 2?")
    assert result.pending_tool_calls == (WHERE,)
    assert result.output == "Let me look."
    assert result.value == "Let me look."
    assert result.iterations == 1
    # The conversation keeps the open call; the other call ran and was answered.
    assert plain(result.messages) == [
        UserMessage(content="Where am I, and what is 1 + 2?"),
        AssistantMessage(content="Let me look.", tool_calls=(WHERE, ADD)),
        ToolMessage(content="3", tool_call_id="call_add", name="add"),
    ]
    assert [(r.event, r.parameters["tool_call"].id) for r in recorder.events] == [
        ("tool:call:before", "call_where"),
        ("tool:call:before", "call_add"),
        ("tool:call:after", "call_add"),
    ]
    assert len(agent.model.requests) == 1  # type: ignore[attr-defined]


async def test_a_run_that_finishes_has_no_pending_calls(make_agent: AgentFactory) -> None:
    agent = make_agent(["done"])
    result = await agent.execute("hi")
    assert result.pending_tool_calls == ()


async def test_tool_results_give_the_external_tools_result_and_the_model_goes_on(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([[WHERE, COLOUR], "You are in Lyon and like blue."], tools=[LOCATE, PICK])
    waiting = await agent.execute("Where am I?")
    assert waiting.pending_tool_calls == (WHERE, COLOUR)
    result = await agent.execute(tool_results={"call_where": {"city": "Lyon"}, COLOUR.id: "blue"})
    assert result.pending_tool_calls == ()
    assert result.output == "You are in Lyon and like blue."
    assert result.iterations == 1
    assert roles(result.messages) == [
        ("tool", '{"city":"Lyon"}'),
        ("tool", "blue"),
        ("assistant", "You are in Lyon and like blue."),
    ]
    # The model read both results, each under its call's id.
    request = agent.model.requests[-1]  # type: ignore[attr-defined]
    assert [(m.role, getattr(m, "tool_call_id", None)) for m in request.messages[-2:]] == [
        ("tool", "call_where"),
        ("tool", "call_colour"),
    ]


@pytest.mark.parametrize(
    ("value", "content", "is_error"),
    [
        ("plain text", "plain text", False),
        ({"city": "Lyon", "n": [1, 2]}, '{"city":"Lyon","n":[1,2]}', False),
        ([1, "two"], '[1,"two"]', False),
        (42, "42", False),
        (None, "None", False),
        (ToolError("the browser refused"), "Error: the browser refused", True),
        (ToolResponse("exact", is_error=True), "exact", True),
    ],
)
async def test_each_kind_of_result_becomes_the_tool_message_the_model_reads(
    make_agent: AgentFactory, value: Any, content: str, is_error: bool
) -> None:
    agent = make_agent([WHERE, "ok"], tools=[LOCATE])
    await agent.execute("Where am I?")
    result = await agent.execute(tool_results={WHERE.id: value})
    assert result.messages[0] == ToolMessage(
        content=content, tool_call_id=WHERE.id, name="locate", is_error=is_error
    )


async def test_calls_may_be_answered_over_several_runs(make_agent: AgentFactory) -> None:
    agent = make_agent(
        [ModelResponse(content="Asking.", tool_calls=(WHERE, COLOUR)), "Done."],
        tools=[LOCATE, PICK],
    )
    await agent.execute("Where am I?")
    # One answer of two: the run ends waiting on the other, without asking the model.
    partial = await agent.execute(tool_results={COLOUR.id: "green"})
    assert partial.pending_tool_calls == (WHERE,)
    assert partial.output == "Asking."
    assert partial.iterations == 0
    assert roles(partial.messages) == [("tool", "green")]
    assert len(agent.model.requests) == 1  # type: ignore[attr-defined]
    # Nothing answered: still waiting, nothing changed.
    again = await agent.execute()
    assert again.pending_tool_calls == (WHERE,)
    assert again.messages == []
    done = await agent.execute(tool_results={WHERE.id: "Lyon"})
    assert done.pending_tool_calls == ()
    assert roles(done.messages) == [("tool", "Lyon"), ("assistant", "Done.")]


async def test_a_new_user_message_answers_the_calls_left_open_with_an_error(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([[WHERE, COLOUR], "Fine, no location."], tools=[LOCATE, PICK])
    await agent.execute("Where am I?")
    result = await agent.execute("Never mind that.", tool_results={COLOUR.id: "red"})
    assert result.pending_tool_calls == ()
    assert plain(result.messages) == [
        ToolMessage(content="red", tool_call_id=COLOUR.id, name="pick_colour"),
        ToolMessage(
            content=UNANSWERED_TOOL_RESPONSE, tool_call_id=WHERE.id, name="locate", is_error=True
        ),
        UserMessage(content="Never mind that."),
        AssistantMessage(content="Fine, no location."),
    ]
    assert UNANSWERED_TOOL_RESPONSE.startswith("Error: ")
    assert "never answered" in UNANSWERED_TOOL_RESPONSE


async def test_a_structured_run_ends_waiting_too(make_agent: AgentFactory) -> None:
    agent = make_agent([WHERE, '{"city": "Lyon"}'], tools=[LOCATE])
    waiting = await agent.execute("Where am I?", output_type=dict, output_mode="native")
    assert waiting.pending_tool_calls == (WHERE,)
    assert waiting.value is None
    done = await agent.execute(tool_results={WHERE.id: "Lyon"}, output_type=dict)
    assert done.value == {"city": "Lyon"}


async def test_a_run_that_fails_after_deferring_leaves_nothing_waiting(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([[WHERE, ADD]], tools=[add, LOCATE])

    def fail(ctx: EventContext[Any, Any]) -> None:
        raise RuntimeError("an observer broke")

    agent.events.on("tool:call:after", fail)
    with pytest.raises(RuntimeError, match="an observer broke"):
        await agent.execute("Where am I?")
    # Every call is answered: the open one as cut short.
    assert agent.conversation.pending_calls() == []
    assert [(m.tool_call_id, m.content) for m in agent.messages if m.role == "tool"] == [
        (WHERE.id, CANCELLED_TOOL_RESPONSE),
        (ADD.id, CANCELLED_TOOL_RESPONSE),
    ]


# -- DEFER from tool:call:before: the calls that wait for a person -----------------------------


async def test_a_handler_defers_a_call_and_an_approval_runs_it(make_agent: AgentFactory) -> None:
    ran.clear()
    agent = make_agent([DELETE, "Deleted."], tools=[delete_file])
    agent.events.on("tool:call:before", defer_every_call)
    waiting = await agent.execute("Delete a.txt")
    assert waiting.pending_tool_calls == (DELETE,)
    assert ran == []
    # The handler defers every call, but a person approved this one: it runs.
    done = await agent.execute(tool_results={DELETE.id: Approval("approve")})
    assert ran == ["a.txt"]
    assert roles(done.messages) == [("tool", "deleted a.txt"), ("assistant", "Deleted.")]


async def test_a_rejected_call_gets_the_rejection_and_never_runs(make_agent: AgentFactory) -> None:
    ran.clear()
    agent = make_agent([DELETE, "I will not delete it."], tools=[delete_file])
    agent.events.on("tool:call:before", defer_every_call)
    await agent.execute("Delete a.txt")
    done = await agent.execute(tool_results={DELETE.id: Approval("reject", reason="keep it")})
    assert ran == []
    assert done.messages[0] == ToolMessage(
        content="rejected by the user: keep it",
        tool_call_id=DELETE.id,
        name="delete_file",
        is_error=True,
    )
    assert done.output == "I will not delete it."


async def test_session_wide_approvals_given_in_tool_results_are_kept(
    make_agent: AgentFactory,
) -> None:
    again = DELETE.model_copy(update={"id": "d2"})
    agent = make_agent([DELETE, "ok", again, "ok"], tools=[delete_file])
    agent.events.on("tool:call:before", defer_every_call)
    await agent.execute("Delete a.txt")
    await agent.execute(tool_results={DELETE.id: Approval("approve-tool")})
    assert agent.stream_state.approvals.tools == {"delete_file"}
    assert agent.stream_state.approvals.everything is False
    await agent.execute("And again")
    await agent.execute(tool_results={"d2": Approval("approve-session")})
    assert agent.stream_state.approvals.everything is True


# -- bad input ----------------------------------------------------------------------------------


async def test_an_answer_for_a_call_that_is_not_open_is_refused_before_anything_runs(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([WHERE, "ok"], tools=[LOCATE])
    await agent.execute("Where am I?")
    version = agent.version
    with pytest.raises(NotPendingError) as caught:
        await agent.execute(tool_results={WHERE.id: "Lyon", "call_nope": "?"})
    assert caught.value.tool_call_id == "call_nope"
    assert caught.value.pending == (WHERE.id,)
    assert "'call_nope', which is no open tool call" in str(caught.value)
    assert isinstance(caught.value, LookupError)
    assert agent.version == version
    # Nothing is open any more once answered: answering again is refused too.
    await agent.execute(tool_results={WHERE.id: "Lyon"})
    with pytest.raises(NotPendingError, match="open calls: none"):
        await agent.execute(tool_results={WHERE.id: "Lyon"})


async def test_a_decision_for_an_external_tools_call_is_refused(make_agent: AgentFactory) -> None:
    agent = make_agent([WHERE], tools=[LOCATE])
    await agent.execute("Where am I?")
    with pytest.raises(ToolResultError, match=r"external tool 'locate'.*not a decision") as caught:
        await agent.execute(tool_results={WHERE.id: Approval("approve")})
    assert caught.value.tool_call_id == WHERE.id
    assert agent.conversation.pending_calls() == [WHERE]


async def test_a_result_for_a_call_that_waits_for_approval_is_refused(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent([DELETE], tools=[delete_file])
    agent.events.on("tool:call:before", defer_every_call)
    await agent.execute("Delete a.txt")
    with pytest.raises(ToolResultError, match=r"waits for approval.*Approval"):
        await agent.execute(tool_results={DELETE.id: "deleted"})
    assert agent.conversation.pending_calls() == [DELETE]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1, 2}, "a value of type set"),
        (b"bytes", "a value of type bytes"),
        (ValueError("no"), "an exception of type ValueError; a failure is a ToolError"),
        ({"when": object()}, "a dict that is not JSON"),
    ],
)
async def test_a_value_that_is_no_kind_of_answer_is_refused_before_the_run(
    make_agent: AgentFactory, value: Any, message: str
) -> None:
    agent = make_agent([WHERE], tools=[LOCATE])
    await agent.execute("Where am I?")
    with pytest.raises(ToolResultError, match=message):
        await agent.execute(tool_results={WHERE.id: value})


async def test_tool_results_must_map_call_ids(make_agent: AgentFactory) -> None:
    agent = make_agent(["ok"])
    with pytest.raises(TypeError, match="tool_results maps tool call ids"):
        await agent.execute(tool_results=[("call", "x")])  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="a tool_results key is a tool call id"):
        await agent.execute(tool_results={1: "x"})  # type: ignore[dict-item]


def test_an_approval_takes_only_known_decisions() -> None:
    with pytest.raises(ValueError, match="invalid decision 'maybe'"):
        Approval("maybe")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a string"):
        Approval("reject", reason=3)  # type: ignore[arg-type]
    assert Approval("reject", "no") == Approval("reject", reason="no")
    assert repr(Approval("approve")) == "Approval(decision='approve', reason=None)"
    with pytest.raises(AttributeError):
        Approval("approve").decision = "reject"  # type: ignore[misc]
    assert not Approval("reject").approved
    assert Approval("approve-tool").approved


async def test_a_waiting_agent_built_in_another_process_continues_from_its_messages() -> None:
    """Nothing waits in memory: a new agent with the same messages continues the run."""
    first = Agent(model=ScriptedModel([WHERE]), tools=[LOCATE])
    await first.execute("Where am I?")
    second = Agent(model=ScriptedModel(["You are in Lyon."]), tools=[LOCATE])
    for message in first.messages:
        await second.append(message)
    result = await second.execute(tool_results={WHERE.id: "Lyon"})
    assert result.output == "You are in Lyon."
    await first.close()
    await second.close()


async def test_an_external_tool_a_tools_provide_handler_offers_takes_results_too(
    make_agent: AgentFactory,
) -> None:
    """A client's tools (AG-UI's frontend tools) are offered per run, not owned by the agent."""
    agent = make_agent([WHERE, "You are in Lyon."], tools=[])

    def offer_the_clients_tools(ctx: EventContext[Any, Any]) -> None:
        ctx.output = [*ctx.parameters["tools"], LOCATE]

    agent.events.on("tools:provide", offer_the_clients_tools)
    waiting = await agent.execute("Where am I?")
    assert waiting.pending_tool_calls == (WHERE,)
    done = await agent.execute(tool_results={WHERE.id: "Lyon"})
    assert done.output == "You are in Lyon."
