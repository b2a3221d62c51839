"""What a span says: GenAI attribute names, the provider of a model, content as JSON.

The names follow the OpenTelemetry GenAI semantic conventions (development status):
``gen_ai.*`` attributes, ``error.type`` and ``server.*``. Content (messages, tool
arguments and results) is rendered in the conventions' JSON message format, and only
when the user opted in (``capture_content=True``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from agentrt.messages import Message, ToolCall
from agentrt.models.base import ModelRequest, ModelResponse
from agentrt.models.scripted import ScriptedModel

__all__ = (
    "ERROR_TYPE",
    "OPERATION",
    "ModelInfo",
    "error_type",
    "input_messages",
    "model_info",
    "output_message",
    "request_attributes",
    "system_instructions",
    "to_json",
)

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# Request settings with a GenAI attribute of their own: setting -> (attribute, types).
_SETTINGS: Mapping[str, tuple[str, tuple[type, ...]]] = {
    "temperature": ("gen_ai.request.temperature", (int, float)),
    "top_p": ("gen_ai.request.top_p", (int, float)),
    "top_k": ("gen_ai.request.top_k", (int, float)),
    "max_tokens": ("gen_ai.request.max_tokens", (int,)),
    "max_completion_tokens": ("gen_ai.request.max_tokens", (int,)),
    "seed": ("gen_ai.request.seed", (int,)),
    "frequency_penalty": ("gen_ai.request.frequency_penalty", (int, float)),
    "presence_penalty": ("gen_ai.request.presence_penalty", (int, float)),
    "n": ("gen_ai.request.choice.count", (int,)),
}

# API hosts with a well-known provider name in the conventions' registry.
_HOSTS: Sequence[tuple[str, str]] = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure.ai.openai"),
    (".services.ai.azure.com", "azure.ai.inference"),
    ("api.anthropic.com", "anthropic"),
    ("api.groq.com", "groq"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("aiplatform.googleapis.com", "gcp.vertex_ai"),
)


class ModelInfo:
    """What the spans say about one model object: provider, model name, server, span kind.

    Attributes:
        provider: ``gen_ai.provider.name``.
        name: ``gen_ai.request.model`` (the model's ``name``).
        remote: Whether calls leave the process (a ``CLIENT`` span) or not (``INTERNAL``).
        server: ``server.address`` and ``server.port`` attributes, when known.
    """

    __slots__ = ("model", "name", "provider", "remote", "server")

    def __init__(
        self, model: object, provider: str, name: str, remote: bool, server: dict[str, Any]
    ) -> None:
        self.model = model
        self.provider = provider
        self.name = name
        self.remote = remote
        self.server = server


def model_info(model: object) -> ModelInfo:
    """The provider and server of ``model``, derived from its class and base URL.

    * A model with a ``base_url`` (``OpenAIChatModel``, or any model exposing one):
      the well-known provider of its host (``api.openai.com`` is ``openai``,
      ``api.groq.com`` is ``groq``...), else ``openai``: the model speaks the OpenAI
      API, and ``server.address`` names the host actually called.
    * ``LocalModel``: ``llama_cpp``, in process.
    * ``ScriptedModel``: ``agentrt.scripted``, in process.
    * Any other model: its class, ``module.QualName``, in process.
    """
    name = getattr(model, "name", None)
    name = name if isinstance(name, str) else type(model).__name__
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str):
        parts = urlsplit(base_url)
        host = (parts.hostname or "").lower()
        provider = next(
            (
                known
                for suffix, known in _HOSTS
                if host == suffix.lstrip(".") or (suffix[0] == "." and host.endswith(suffix))
            ),
            "openai",
        )
        server: dict[str, Any] = {SERVER_ADDRESS: host} if host else {}
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:  # a malformed port: no port attribute rather than a failed run
            port = None
        if host and port is not None:
            server[SERVER_PORT] = port
        return ModelInfo(model, provider, name, True, server)
    if isinstance(model, ScriptedModel):
        return ModelInfo(model, "agentrt.scripted", name, False, {})
    local = sys.modules.get("agentrt.models.local")
    if local is not None and isinstance(model, local.LocalModel):
        return ModelInfo(model, "llama_cpp", name, False, {})
    cls = type(model)
    return ModelInfo(model, f"{cls.__module__}.{cls.__qualname__}", name, False, {})


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's canonical name (``module.QualName``, builtins bare).

    A tool's own exception is what happened, not agentrt's wrapper: a
    ``ToolExecutionError`` is named after its cause.
    """
    cause = error.__cause__
    if cause is not None and type(error).__name__ == "ToolExecutionError":
        error = cause
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def request_attributes(request: ModelRequest) -> dict[str, Any]:
    """The ``gen_ai.request.*`` attributes of the settings a request carries."""
    attributes: dict[str, Any] = {}
    settings = request.settings
    if not settings:
        return attributes
    for key, (attribute, types) in _SETTINGS.items():
        value = settings.get(key)
        if isinstance(value, types) and not isinstance(value, bool):
            attributes[attribute] = value
    stop = settings.get("stop")
    if isinstance(stop, str):
        attributes["gen_ai.request.stop_sequences"] = (stop,)
    elif isinstance(stop, list | tuple) and all(isinstance(item, str) for item in stop):
        attributes["gen_ai.request.stop_sequences"] = tuple(stop)
    return attributes


def to_json(value: Any) -> str:
    """``value`` as compact JSON; what JSON cannot hold becomes its ``str()``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _arguments(call: ToolCall) -> Any:
    # The conventions want an object; arguments a model garbled stay the text it sent.
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        return [
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        ]
    if message.role == "assistant" and message.reasoning:
        parts.append({"type": "reasoning", "content": message.reasoning})
    if message.content:
        parts.append({"type": "text", "content": message.content})
    if message.role == "assistant":
        parts.extend(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": _arguments(call)}
            for call in message.tool_calls
        )
    return parts


def system_instructions(messages: Sequence[Message]) -> str | None:
    """``gen_ai.system_instructions`` as JSON: the system messages' text parts."""
    texts = [
        {"type": "text", "content": message.content}
        for message in messages
        if message.role == "system"
    ]
    return to_json(texts) if texts else None


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages`` as JSON: the chat history sent, without system messages."""
    return to_json(
        [
            {"role": message.role, "parts": _parts(message)}
            for message in messages
            if message.role != "system"
        ]
    )


def output_message(response: ModelResponse) -> str:
    """``gen_ai.output.messages`` as JSON: the model's answer as one assistant message."""
    parts: list[dict[str, Any]] = []
    if response.reasoning:
        parts.append({"type": "reasoning", "content": response.reasoning})
    if response.content:
        parts.append({"type": "text", "content": response.content})
    parts.extend(
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": _arguments(call)}
        for call in response.tool_calls
    )
    finish = response.finish_reason or ("tool_call" if response.tool_calls else "stop")
    return to_json([{"role": "assistant", "parts": parts, "finish_reason": finish}])
