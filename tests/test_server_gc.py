"""While a server serves, what survives the garbage collector's middle generation is frozen.

The full collections of CPython 3.11-3.13 walk every tracked object, the idle sessions
a server keeps included; frozen objects are not walked. Cycles among them are found
again once the heap has doubled (see ``agentrt.server._gc``).
"""

import gc
import sys
import weakref
from collections.abc import Iterator

import pytest

from agentrt.server._gc import _LOOK_EVERY, FULL_COLLECTION_THRESHOLD, server_collections
from tests.server_support import ADD_SCRIPT, factory_of, real_server

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 14), reason="3.14's incremental collector has no full collections"
)


class Node:
    """An object that can be part of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def frozen_cycle() -> weakref.ref[Node]:
    """A two-node cycle referred to while the middle generation is collected, then not.

    Returns a weak reference to one of its nodes.
    """
    first, second = Node(), Node()
    first.other, second.other = second, first
    gc.collect(1)
    return weakref.ref(first)


@pytest.fixture
def nothing_frozen() -> Iterator[None]:
    gc.collect()
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("nothing_frozen")
def test_what_survives_the_middle_generation_is_frozen_and_no_full_collection_walks_it() -> None:
    with server_collections():
        kept = [Node() for _ in range(100)]
        gc.collect(1)
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        assert not [node for node in gc.get_objects() if type(node) is Node]
        # A cycle frozen by a collection of the middle generation that ran while it was
        # still referred to outlives its last reference: no collection walks it.
        gone = frozen_cycle()
        gc.collect()
        assert gone() is not None
        # Objects that leave no cycle are freed by their reference count as ever.
        tracked = weakref.ref(kept[0])
        del kept
        assert tracked() is None
    gc.collect()
    assert gone() is None  # unfrozen as the server ended


@pytest.mark.usefixtures("nothing_frozen")
def test_frozen_cycles_are_collected_once_the_heap_has_doubled() -> None:
    with server_collections():
        gc.collect()  # a full collection: the heap from here on is the measure
        gone = frozen_cycle()
        gc.collect()
        assert gone() is not None
        padding = [[n] for n in range(sys.getallocatedblocks() + 1000)]
        # The heap has doubled: at most _LOOK_EVERY collections of the middle generation
        # later, everything is thawed...
        for _ in range(_LOOK_EVERY):
            gc.collect(1)
        assert gc.get_freeze_count() == 0
        gc.collect()  # ...for the next full collection, which walks all of it
        assert gone() is None
        assert gc.get_freeze_count() >= len(padding)  # and what survived is frozen again
        del padding


@pytest.mark.usefixtures("nothing_frozen")
def test_the_collector_is_set_back_when_serving_ends() -> None:
    before = gc.get_threshold()
    callbacks = list(gc.callbacks)
    with server_collections():
        assert gc.get_threshold()[2] == max(before[2], FULL_COLLECTION_THRESHOLD)
        gc.collect(1)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.callbacks == callbacks
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("nothing_frozen")
def test_a_process_that_froze_objects_itself_keeps_its_own_policy() -> None:
    gc.freeze()  # a pre-fork server's parent, say
    frozen = gc.get_freeze_count()
    with server_collections():
        kept = [Node() for _ in range(100)]
        gc.collect(1)
        assert gc.get_freeze_count() == frozen  # nothing more frozen here...
        assert len([node for node in gc.get_objects() if type(node) is Node]) == len(kept)
    assert gc.get_freeze_count() == frozen  # ...and nothing thawed


@pytest.mark.usefixtures("nothing_frozen")
async def test_an_agent_server_collects_so_while_it_serves() -> None:
    async with real_server(factory_of(ADD_SCRIPT)) as (_, client):
        assert (await client.get("/healthz")).status_code == 200
        gc.collect(1)
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
