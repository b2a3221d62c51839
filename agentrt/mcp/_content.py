"""What a model reads of an MCP tool result: its text, its structured content, the rest described.

A ``tools/call`` result holds content blocks (text, images, audio, links to
resources, embedded resources) and, optionally, structured content. A tool
message is text, so each block becomes a line of it: text as is, anything else
described by kind, MIME type and size (``[image: image/png, 1234 bytes]``) so
that nothing disappears without a trace. Structured content is added as JSON
unless a text block already holds the same value (servers are asked to send
both; the SDKs send a value that is not an object as ``{"result": value}``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp_types

__all__ = ("describe_block", "result_text", "truncate")


def _decoded_size(data: str) -> int:
    """The byte count of base64 ``data`` without decoding it."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


def _same_json(text: str, value: object) -> bool:
    """Whether ``text`` says what structured ``value`` does.

    The SDKs wrap a tool's value that is not an object as ``{"result": value}`` and
    send the value itself as text; that counts as the same.
    """
    wrapped = value["result"] if isinstance(value, dict) and value.keys() == {"result"} else None
    try:
        parsed = json.loads(text)
    except ValueError:
        return isinstance(wrapped, str) and text == wrapped
    return bool(parsed == value or (wrapped is not None and parsed == wrapped))


def describe_block(block: object) -> str:
    """One content block as the model reads it: text as is, the rest described."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, mcp_types.ResourceLink):
        details = ", ".join(
            part
            for part in (
                block.mime_type,
                None if block.size is None else f"{block.size} bytes",
                block.description,
            )
            if part
        )
        return f"[resource link: {block.name} <{block.uri}>{f' ({details})' if details else ''}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        mime = f", {resource.mime_type}" if resource.mime_type else ""
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource: {resource.uri}{mime}]\n{resource.text}"
        return f"[resource: {resource.uri}{mime}, {_decoded_size(resource.blob)} bytes]"
    named = getattr(block, "type", None)
    return f"[{named if isinstance(named, str) else type(block).__name__} content]"


def result_text(content: Sequence[object], structured: Any = None) -> str:
    """The text of a tool result: one line per content block, then structured content as JSON.

    Args:
        content: The result's content blocks.
        structured: Its structured content, or ``None``.
    """
    parts = [describe_block(block) for block in content]
    if structured is not None and not any(
        isinstance(block, mcp_types.TextContent) and _same_json(block.text, structured)
        for block in content
    ):
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def truncate(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"
