"""agentrt.stream._channel.Channel: the bounded buffer between a run and its reader."""

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from agentrt.stream._channel import Channel


async def test_items_come_out_in_the_order_they_went_in() -> None:
    channel = Channel[int](3)
    assert [channel.put_nowait(i) for i in range(4)] == [True, True, True, False]
    assert [channel.get_nowait() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(anyio.WouldBlock):
        channel.get_nowait()


async def test_a_full_channel_holds_the_writer_back_until_the_reader_takes() -> None:
    channel = Channel[int](2)
    written: list[int] = []

    async def write() -> None:
        for i in range(5):
            await channel.put(i)
            written.append(i)

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        await wait_all_tasks_blocked()
        assert written == [0, 1]  # the third waits for room
        assert await channel.get() == 0
        await wait_all_tasks_blocked()
        assert written == [0, 1, 2]
        assert [await channel.get() for _ in range(4)] == [1, 2, 3, 4]
    assert written == [0, 1, 2, 3, 4]


async def test_a_reader_waits_for_the_next_item_and_the_end() -> None:
    channel = Channel[str](4)
    got: list[str] = []

    async def read() -> None:
        while True:
            try:
                got.append(await channel.get())
            except anyio.EndOfStream:
                got.append("<end>")
                return

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await wait_all_tasks_blocked()
        assert channel.put_nowait("a")
        await wait_all_tasks_blocked()
        assert got == ["a"]
        assert channel.put_nowait("b")
        channel.close()  # what is buffered is still read, then the end
    assert got == ["a", "b", "<end>"]
    with pytest.raises(anyio.ClosedResourceError):
        channel.put_nowait("late")


async def test_size_zero_hands_over_only_to_a_waiting_reader() -> None:
    channel = Channel[int](0)
    assert not channel.put_nowait(1)  # nobody is waiting
    got: list[int] = []

    async def read_two() -> None:
        got.append(await channel.get())
        got.append(await channel.get())

    async with anyio.create_task_group() as group:
        group.start_soon(read_two)
        await wait_all_tasks_blocked()
        assert channel.put_nowait(1)
        assert not channel.put_nowait(2)  # handed over one; the reader has not run yet
        await channel.put(2)  # waits until the reader asks again
    assert got == [1, 2]


async def test_a_cancelled_reader_is_no_longer_counted_as_waiting() -> None:
    channel = Channel[int](0)
    with anyio.move_on_after(0):
        await channel.get()
    assert not channel.put_nowait(1)


async def test_a_departed_reader_breaks_waiting_and_later_writers() -> None:
    channel = Channel[int](1)
    assert channel.put_nowait(0)
    failures: list[type[BaseException]] = []

    async def write() -> None:
        try:
            await channel.put(1)
        except anyio.BrokenResourceError as error:
            failures.append(type(error))

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        group.start_soon(write)
        await wait_all_tasks_blocked()
        channel.close_reader()
    assert failures == [anyio.BrokenResourceError, anyio.BrokenResourceError]
    with pytest.raises(anyio.BrokenResourceError):
        channel.put_nowait(2)


async def test_writers_waiting_together_all_get_through_in_turn() -> None:
    channel = Channel[str](1)
    assert channel.put_nowait("first")

    async with anyio.create_task_group() as group:
        for name in ("a", "b", "c"):
            group.start_soon(channel.put, name)
        await wait_all_tasks_blocked()
        got = [channel.get_nowait()]
        while len(got) < 4:
            await checkpoint()
            try:
                got.append(channel.get_nowait())
            except anyio.WouldBlock:
                await wait_all_tasks_blocked()
    assert got[0] == "first"
    assert sorted(got[1:]) == ["a", "b", "c"]


async def test_items_yield_in_order_wait_for_more_and_end_at_close() -> None:
    channel = Channel[int](2)
    got: list[int] = []

    async def read() -> None:
        async for item in channel.items():
            got.append(item)
        got.append(-1)  # the end

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await wait_all_tasks_blocked()
        assert channel.put_nowait(0)
        await wait_all_tasks_blocked()
        assert got == [0]
        assert channel.put_nowait(1)
        assert channel.put_nowait(2)
        channel.close()  # what is buffered is still read, then the end
    assert got == [0, 1, 2, -1]


async def test_items_make_room_for_a_waiting_writer() -> None:
    channel = Channel[int](1)
    written: list[int] = []

    async def write() -> None:
        for i in range(4):
            await channel.put(i)
            written.append(i)
        channel.close()

    items = channel.items()
    async with anyio.create_task_group() as group:
        group.start_soon(write)
        await wait_all_tasks_blocked()
        assert written == [0]
        assert await items.__anext__() == 0
        await wait_all_tasks_blocked()
        assert written == [0, 1]
        assert [item async for item in items] == [1, 2, 3]
    assert written == [0, 1, 2, 3]


async def test_items_of_a_channel_closed_before_reading_end_at_once() -> None:
    channel = Channel[int](2)
    channel.close()
    assert [item async for item in channel.items()] == []


async def test_items_waiting_on_an_empty_channel_end_when_it_closes() -> None:
    channel = Channel[int](2)
    got: list[int] = []

    async def read() -> None:
        async for item in channel.items():
            got.append(item)
        got.append(-1)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await wait_all_tasks_blocked()  # the reader waits in items()
        channel.close()
    assert got == [-1]


async def test_the_channel_waits_on_fresh_events_of_the_running_backend() -> None:
    # Made from the first event's class, not through anyio.Event()'s backend lookup.
    channel = Channel[int](1)
    first, second = channel._event(), channel._event()
    assert first is not second
    assert type(first) is type(second) is type(anyio.Event())
    first.set()
    assert not second.is_set()
