"""The suite runs on the backend it was asked for (``nox -s trio``: AGENTRT_BACKEND=trio)."""

import os

import sniffio


async def test_coroutine_tests_run_on_the_chosen_backend() -> None:
    assert sniffio.current_async_library() == os.environ.get("AGENTRT_BACKEND", "asyncio")
