"""Issue 8, hostile model output: whatever a model answers, the run ends cleanly.

Tool names of any text (empty, huge, unicode, real names in odd case), argument strings
of any kind (random bytes, 10,000-deep nesting, numbers past every limit, NaN, wrong
types, JSON that is not an object), empty answers, repeated ids, thousands of calls in
one turn. The properties:

* ``execute`` never raises an unexpected exception: every call ends in a tool message
  (an ``Error: ...`` one when the call is unusable), or the run ends with a typed
  :class:`~agentrt.AgentrtError` (``MaxIterationsExceededError`` for a model that never
  stops calling tools; ``StreamProtocolError`` for a streamed call without a name);
* the conversation stays consistent: every assistant tool call is answered by exactly one
  tool message, in the model's order;
* ``agent.stream`` on the same script yields a session that validates.

Thousands of calls in one turn run at most ``max_concurrent_tools`` at a time (64 by
default, read from the agent; ``None`` is no bound).

Repeated ids: a call whose id is empty or repeats an id of the conversation (earlier in
the same turn, or in an earlier turn: some servers number calls per answer) gets a fresh
id before the assistant message is stored (streamed: at its first fragment, so that
``partial_tool_call`` shows the same id); the first call with an id keeps it.
"""

import json
import math
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrt import (
    Agent,
    AgentrtError,
    MaxIterationsExceededError,
    ModelResponse,
    ScriptedModel,
    StreamProtocolError,
    Tool,
    ToolCall,
)
from agentrt._loop import MAX_CONCURRENT_TOOLS
from agentrt.messages import AssistantMessage, Message, ToolMessage
from agentrt.models.scripted import ScriptItem
from agentrt.stream import (
    PartialToolCallEvent,
    StreamEvent,
    ToolCallEvent,
    ToolCallResponseEvent,
    validate,
)
from agentrt.tools import ToolLike

DONE = "done"
DEEP = "[" * 10_000 + "]" * 10_000


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def divide(a: float, b: float) -> float:
    """Divide a by b."""
    await anyio.lowlevel.checkpoint()
    return a / b


def echo(value: Any = None) -> Any:
    """Return what it was given (any JSON value)."""
    return value


TOOLS: list[ToolLike] = [add, divide, echo]

# -- strategies ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _dump(value: object) -> str:
    return json.dumps(value)  # NaN and Infinity as JavaScript writes them


tool_names = st.one_of(
    st.sampled_from(["add", "divide", "echo"]),
    st.sampled_from(["ADD", "Add", "add ", " add", "divide\n", "\u0435cho", "add\x00", "ech0"]),
    st.just(""),
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0x80), min_size=1, max_size=10),
    st.integers(1_000, 70_000).map(lambda n: "x" * n),
)

arguments = st.one_of(
    st.binary(max_size=64).map(lambda b: b.decode("utf-8", errors="replace")),
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "   ",
            "{}",
            "null",
            "[]",
            "42",
            '"text"',
            DEEP,
            '{"a": ' + DEEP + ', "b": 1}',
            '{"value": ' + DEEP + "}",
            '{"a": 1e999, "b": 1}',
            '{"a": -1e999, "b": 1}',
            '{"a": ' + "9" * 5000 + ', "b": 2}',
            '{"value": ' + "9" * 5000 + "}",
            '{"value": ' + "9" * 4000 + "}",
            '{"a": NaN, "b": 1}',
            '{"a": Infinity, "b": -Infinity}',
            '{"a": 1, "b": 0}',
            '{"a": 1, "b": 2, "c": 3}',
            '{"a": "1", "b": [2]}',
            '{"a": 1, "b": 2',
            '{"a": 1, "b": 2}}',
            '{"a": 1, "a": 2, "b": 3}',
        ]
    ),
    json_values.map(_dump),
    st.dictionaries(st.sampled_from(["a", "b", "value"]), json_values, max_size=3).map(_dump),
)

ids = st.one_of(st.sampled_from(["", "dup", "call_1"]), st.text(max_size=6))

tool_calls = st.builds(
    lambda call_id, name, args: ToolCall(id=call_id, name=name, arguments=args),
    ids,
    tool_names,
    arguments,
)

responses = st.builds(
    lambda text, calls: ModelResponse(content=text, tool_calls=tuple(calls)),
    st.one_of(st.just(""), st.text(max_size=40)),
    st.lists(tool_calls, max_size=5),
)

# -- checks -------------------------------------------------------------------------------------


def check_conversation(messages: Sequence[Message], sent: Sequence[ModelResponse]) -> None:
    """Each stored turn answers its calls once each, in order; ids are never reused.

    ``sent`` are the model's responses, in order: the stored calls keep their names and
    arguments, and their ids unless empty or used before (in this turn or an earlier
    one), which get a fresh id.
    """
    turns = [m for m in messages if isinstance(m, AssistantMessage)]
    seen: set[str] = set()
    for turn, response in zip(turns, sent, strict=False):
        assert [(c.name, c.arguments) for c in turn.tool_calls] == [
            (c.name, c.arguments) for c in response.tool_calls
        ]
        for stored, given_call in zip(turn.tool_calls, response.tool_calls, strict=True):
            if given_call.id and given_call.id not in seen:
                assert stored.id == given_call.id  # the first of an id keeps it
            else:
                assert stored.id.startswith("call_")
                assert stored.id not in seen
            seen.add(stored.id)
    called: list[str] = []
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            answers = messages[index + 1 : index + 1 + len(message.tool_calls)]
            assert all(isinstance(m, ToolMessage) for m in answers), answers
            assert [m.tool_call_id for m in answers] == [  # type: ignore[union-attr]
                c.id for c in message.tool_calls
            ]
            assert [m.name for m in answers] == [  # type: ignore[union-attr]
                c.name for c in message.tool_calls
            ]
            called.extend(c.id for c in message.tool_calls)
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(answered) == sorted(called)


def check_tool_messages(messages: Sequence[Message]) -> None:
    """A call to an unknown tool or with unusable arguments is an error the model reads."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.is_error:
            assert message.content.startswith("Error: "), message.content[:200]


async def run_execute(script: list[Any], **options: Any) -> tuple[Agent, BaseException | None]:
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, strict=True, **options)
    error: BaseException | None = None
    with anyio.fail_after(30):
        try:
            await agent.execute("go")
        except AgentrtError as exc:
            error = exc
    return agent, error


async def run_stream(
    script: list[Any], **options: Any
) -> tuple[Agent, list[StreamEvent], BaseException | None]:
    agent = Agent(model=ScriptedModel(script, chunk_size=7), tools=TOOLS, strict=True)
    events: list[StreamEvent] = []
    error: BaseException | None = None
    with anyio.fail_after(30):
        try:
            async with agent.stream("go", **options) as stream:
                async for event in stream:
                    events.append(event)
        except AgentrtError as exc:
            error = exc
    assert validate(events) == [], validate(events)[:3]
    assert events[-1].type == "stream_stopped"
    return agent, events, error


# -- properties ---------------------------------------------------------------------------------


@settings(max_examples=250, deadline=None)
@given(response=responses)
async def test_any_single_turn_ends_in_tool_messages_and_a_valid_stream(
    response: ModelResponse,
) -> None:
    await check_single_turn(response)


@pytest.mark.slow
@settings(max_examples=2_000, deadline=None)
@given(response=responses)
async def test_any_single_turn_many_more_examples(response: ModelResponse) -> None:
    await check_single_turn(response)


async def check_single_turn(response: ModelResponse) -> None:
    script = [response, DONE]
    agent, error = await run_execute(script)
    assert error is None, error  # complete(): every call is answered, none can fail the run
    messages = agent.messages
    check_conversation(messages, [response])
    check_tool_messages(messages)
    assert messages[-1].content == (DONE if response.tool_calls else response.content)
    await agent.close()

    agent, events, error = await run_stream(script)
    if any(call.name == "" for call in response.tool_calls):
        # A streamed call opens with its name: an empty one is a broken stream, a typed
        # error before the assistant message is stored.
        assert isinstance(error, StreamProtocolError), error
        assert not any(isinstance(m, AssistantMessage) for m in agent.messages)
    else:
        assert error is None, error
        check_conversation(agent.messages, [response])
        calls = [e.tool_call.id for e in events if isinstance(e, ToolCallEvent)]
        answers = [e.tool_call.id for e in events if isinstance(e, ToolCallResponseEvent)]
        stored = [
            call.id
            for m in agent.messages
            if isinstance(m, AssistantMessage)
            for call in m.tool_calls
        ]
        assert calls == answers == stored
    await agent.close()


@settings(max_examples=80, deadline=None)
@given(
    turns=st.lists(responses, min_size=1, max_size=4),
    max_iterations=st.integers(1, 4),
)
async def test_many_turns_end_in_an_answer_or_a_typed_error(
    turns: list[ModelResponse], max_iterations: int
) -> None:
    agent, error = await run_execute([*turns, DONE], max_iterations=max_iterations)
    check_conversation(agent.messages, turns)
    check_tool_messages(agent.messages)
    # The run stops at the first turn without calls: which turns ran is known.
    ran = 0
    for response in [*turns, ModelResponse(content=DONE)]:
        ran += 1
        if not response.tool_calls:
            break
    if ran > max_iterations:
        assert isinstance(error, MaxIterationsExceededError), error
    else:
        assert error is None, error
    await agent.close()


# -- explicit cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(DEEP, "recursion limit", id="deep-array"),
        pytest.param('{"a": ' + DEEP + ', "b": 1}', "recursion limit", id="deep-in-object"),
        pytest.param('{"a": ' + "9" * 5000 + ', "b": 2}', "number out of range", id="5000-digits"),
        pytest.param('{"a": 1e999, "b": 1}', "finite number", id="1e999"),
        pytest.param('{"a": NaN, "b": 1}', "finite number", id="NaN"),
        pytest.param("[1, 2]", "not an object", id="array"),
        pytest.param('"text"', "not an object", id="string"),
        pytest.param('{"a": "x", "b": 1}', "valid integer", id="wrong-type"),
        pytest.param("\ufffd\ufffd{", "not valid JSON", id="replaced-bytes"),
    ],
)
async def test_unusable_arguments_become_an_error_the_model_reads(
    text: str, expected: str
) -> None:
    agent, error = await run_execute([ToolCall(id="c1", name="add", arguments=text), DONE])
    assert error is None
    answer = agent.messages[2]
    assert isinstance(answer, ToolMessage)
    assert answer.is_error
    assert answer.content.startswith("Error: invalid arguments for tool 'add'")
    assert expected in answer.content
    assert len(answer.content) < 1_000  # the model's text is quoted, not repeated whole
    await agent.close()


async def test_huge_numbers_a_tool_takes_as_any_are_passed_or_refused_cleanly() -> None:
    big = "9" * 4000  # under Python's 4300-digit limit: a real int reaches the tool
    agent, error = await run_execute(
        [ToolCall(id="c1", name="echo", arguments='{"value": ' + big + "}"), DONE]
    )
    assert error is None
    assert agent.messages[2].content == big
    await agent.close()


async def test_names_of_real_tools_in_odd_case_are_unknown_tools() -> None:
    calls = [
        ToolCall(id=f"c{i}", name=name, arguments='{"a": 1, "b": 2}')
        for i, name in enumerate(["ADD", "Add", " add", "add\n", "\u0430dd"])
    ]  # the last one starts with a Cyrillic a
    agent, error = await run_execute([ModelResponse(tool_calls=tuple(calls)), DONE])
    assert error is None
    answers = [m for m in agent.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == [c.id for c in calls]
    for call, answer in zip(calls, answers, strict=True):
        assert answer.is_error
        assert answer.content.startswith(f"Error: unknown tool {call.name!r}")
    await agent.close()


async def test_an_empty_answer_is_an_empty_final_answer() -> None:
    agent, error = await run_execute([ModelResponse()])
    assert error is None
    assert agent.messages[-1] == AssistantMessage(content="", usage=agent.messages[-1].usage)  # type: ignore[union-attr]
    await agent.close()
    _, events, error = await run_stream([ModelResponse()])
    assert error is None
    assert [e.type for e in events] == [
        "user_message",
        "stream_started",
        "token_usage",
        "stream_stopped",
    ]


async def test_duplicate_ids_in_one_turn_get_fresh_ids_after_the_first() -> None:
    calls = (
        ToolCall(id="dup", name="add", arguments={"a": 1, "b": 1}),
        ToolCall(id="dup", name="add", arguments={"a": 2, "b": 2}),
        ToolCall(id="", name="add", arguments={"a": 3, "b": 3}),
        ToolCall(id="other", name="add", arguments={"a": 4, "b": 4}),
        ToolCall(id="dup", name="add", arguments={"a": 5, "b": 5}),
    )
    for stream in (False, True):
        if stream:
            agent, _, error = await run_stream([ModelResponse(tool_calls=calls), DONE])
        else:
            agent, error = await run_execute([ModelResponse(tool_calls=calls), DONE])
        assert error is None
        stored = agent.messages[1]
        assert isinstance(stored, AssistantMessage)
        new_ids = [call.id for call in stored.tool_calls]
        assert new_ids[0] == "dup"
        assert new_ids[3] == "other"
        assert len(set(new_ids)) == 5
        assert all(new_id.startswith("call_") for new_id in (new_ids[1], new_ids[2], new_ids[4]))
        answers = [m for m in agent.messages if isinstance(m, ToolMessage)]
        assert [(m.tool_call_id, m.content) for m in answers] == list(
            zip(new_ids, ["2", "4", "6", "8", "10"], strict=True)
        )
        await agent.close()


async def test_an_id_reused_in_a_later_turn_or_run_gets_a_fresh_id() -> None:
    call = ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2})
    agent = Agent(model=ScriptedModel([call, call, DONE, call, DONE]), tools=TOOLS, strict=True)
    events: list[StreamEvent] = []
    async with agent.stream("go") as stream:
        async for event in stream:
            events.append(event)
    assert validate(events) == []
    await agent.execute("more")  # a second run on the same conversation
    ids = [c.id for m in agent.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert ids[0] == "call_1"
    assert len(set(ids)) == 3
    check_conversation(agent.messages, [ModelResponse(tool_calls=(call,))] * 2)
    # The stream showed each call under its final id from the first fragment on.
    partial = {e.tool_call.id for e in events if isinstance(e, PartialToolCallEvent)}
    shown = [e.tool_call.id for e in events if isinstance(e, ToolCallEvent)]
    assert partial == set(shown) == set(ids[:2])
    await agent.close()


async def test_a_model_that_never_stops_calling_tools_hits_max_iterations() -> None:
    call = ModelResponse(tool_calls=(ToolCall(name="nope", arguments="{"),))
    agent, error = await run_execute([call] * 3, max_iterations=3)
    assert isinstance(error, MaxIterationsExceededError)
    check_conversation(agent.messages, [call] * 3)
    assert sum(isinstance(m, ToolMessage) for m in agent.messages) == 3
    await agent.close()


# -- thousands of calls in one turn -------------------------------------------------------------


class Gauge:
    """Counts the tool calls running at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.calls = 0

    async def __call__(self, n: int) -> int:
        self.running += 1
        self.calls += 1
        self.peak = max(self.peak, self.running)
        try:
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
            return n
        finally:
            self.running -= 1


def gauge_agent(gauge: Gauge, calls: int, **options: Any) -> Agent:
    probe = Tool(gauge.__call__, name="probe", description="Return n.")
    script: list[ScriptItem] = [
        ModelResponse(
            tool_calls=tuple(
                ToolCall(id=f"c{i}", name="probe", arguments={"n": i}) for i in range(calls)
            )
        ),
        DONE,
    ]
    return Agent(model=ScriptedModel(script), tools=[probe], strict=True, **options)


@pytest.mark.parametrize(
    ("limit", "peak"),
    [("default", MAX_CONCURRENT_TOOLS), (None, 2_000), (1, 1), (7, 7)],
    ids=["default", "unbounded", "1", "7"],
)
async def test_two_thousand_calls_in_one_turn_run_with_bounded_concurrency(
    limit: int | str | None, peak: int
) -> None:
    gauge = Gauge()
    agent = gauge_agent(gauge, 2_000)
    if limit != "default":
        agent.max_concurrent_tools = None if limit is None else int(limit)
    with anyio.fail_after(30):
        result = await agent.execute("go")
    assert result.output == DONE
    assert gauge.calls == 2_000
    assert gauge.peak == peak
    answers = [m for m in agent.messages if isinstance(m, ToolMessage)]
    assert [m.content for m in answers] == [str(i) for i in range(2_000)]  # the model's order
    await agent.close()


@pytest.mark.parametrize(
    ("limit", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_an_unusable_bound_is_a_clear_error(limit: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_concurrent_tools must be"):
        Agent(model=ScriptedModel([]), max_concurrent_tools=limit)  # type: ignore[arg-type]


async def test_two_thousand_calls_stream_and_validate() -> None:
    gauge = Gauge()
    agent = gauge_agent(gauge, 2_000)
    events: list[StreamEvent] = []
    with anyio.fail_after(30):
        async with agent.stream("go") as stream:
            async for event in stream:
                events.append(event)
    assert validate(events) == []
    responses_seen = [e for e in events if isinstance(e, ToolCallResponseEvent)]
    assert [e.tool_call.id for e in responses_seen] == [f"c{i}" for i in range(2_000)]
    assert gauge.peak <= MAX_CONCURRENT_TOOLS
    await agent.close()


async def test_cancelling_thousands_of_calls_answers_every_one() -> None:
    gauge = Gauge()
    agent = gauge_agent(gauge, 2_000)
    with anyio.CancelScope() as scope:

        @agent.hooks.on_tool_call_after
        def stop(ctx: Any) -> None:
            if gauge.calls == 500:
                scope.cancel()

        await agent.execute("go")
    assert scope.cancelled_caught
    answers = [m for m in agent.messages if isinstance(m, ToolMessage)]
    assert len(answers) == 2_000
    assert sum(m.is_error for m in answers) >= 2_000 - 500 - MAX_CONCURRENT_TOOLS
    # Workers stop taking calls once cancelled: the calls left were never started.
    assert gauge.calls < 500 + 2 * MAX_CONCURRENT_TOOLS
    await agent.close()


def test_non_finite_floats_survive_the_strategy() -> None:
    # The strategies above rely on json.dumps writing NaN and Infinity literally.
    assert _dump([math.nan, math.inf]) == "[NaN, Infinity]"
