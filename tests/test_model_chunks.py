"""agentrt/models/base.py chunks and agentrt/models/_assemble.py: what a stream is made of."""

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentrt.models._assemble import ResponseAssembler
from agentrt.models.base import ReasoningDelta, StreamChunk, TextDelta, ToolCallDelta


@pytest.mark.parametrize("cls", [TextDelta, ReasoningDelta])
def test_text_chunks_are_frozen_slotted_values(
    cls: type[TextDelta] | type[ReasoningDelta],
) -> None:
    # Their __init__ sets the slot directly (a third cheaper than the dataclass's);
    # everything else is the dataclass's own.
    chunk = cls("Hel")
    assert chunk.text == "Hel"
    assert chunk == cls(text="Hel") != cls("lo")
    assert hash(chunk) == hash(cls("Hel"))
    assert repr(chunk) == f"{cls.__name__}(text='Hel')"
    assert not hasattr(chunk, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunk.text = "other"  # type: ignore[misc]
    assert dataclasses.replace(chunk, text="lo") == cls("lo")
    assert pickle.loads(pickle.dumps(chunk)) == chunk
    assert copy.copy(chunk) == chunk
    with pytest.raises(TypeError):
        cls()  # type: ignore[call-arg]


chunks = st.lists(
    st.one_of(
        st.builds(TextDelta, st.text(max_size=5)),
        st.builds(ReasoningDelta, st.text(max_size=5)),
    ),
    max_size=20,
)


@given(chunks)
def test_add_text_is_add_of_a_text_delta(stream: list[StreamChunk]) -> None:
    by_add, by_add_text = ResponseAssembler(), ResponseAssembler()
    for chunk in stream:
        by_add.add(chunk)
        if type(chunk) is TextDelta:
            by_add_text.add_text(chunk.text)
        else:
            by_add_text.add(chunk)
    assert by_add_text.response() == by_add.response()
    assert by_add.response().content == "".join(
        chunk.text for chunk in stream if type(chunk) is TextDelta
    )


def test_tool_call_delta_keeps_the_dataclass_init() -> None:
    assert ToolCallDelta(0, id="c", name="f") == ToolCallDelta(
        index=0, id="c", name="f", arguments=""
    )
