"""Result types that are never awaitable, for hot-path ``inspect.isawaitable`` tests.

``inspect.isawaitable`` ends in an ``isinstance`` against ``collections.abc.Awaitable``,
which costs about 0.2 µs for an ``int`` or a ``dict``; a run makes a few such tests
(tool results, sync hooks' outputs). Testing the exact type
against this set first answers the common results at once.
"""

__all__ = ("NEVER_AWAITABLE",)

NEVER_AWAITABLE: frozenset[type] = frozenset(
    {type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set}
)
