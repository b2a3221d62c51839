"""Model prices, for the cost figure of ``token_usage`` events."""

from collections.abc import Mapping
from dataclasses import dataclass

from agentrt.messages import Usage

__all__ = ("ModelPrices", "PriceTable", "cost_of")


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """US dollars per million tokens.

    Attributes:
        input: Per million input tokens not served from a prompt cache.
        output: Per million output tokens (reasoning included).
        cached_input: Per million input tokens served from a prompt cache; the
            input price when ``None``.
    """

    input: float
    output: float
    cached_input: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input"):
            value = getattr(self, name)
            if value is None and name == "cached_input":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(
                    f"ModelPrices.{name} must be a non-negative number, got {value!r}"
                )

    def cost(self, usage: Usage) -> float:
        """The price of ``usage``."""
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        ) / 1_000_000


PriceTable = Mapping[str, ModelPrices]
"""Prices by model name."""


def cost_of(usage: Usage, prices: ModelPrices | None) -> float:
    """``prices.cost(usage)``, or 0.0 when the prices are unknown."""
    return 0.0 if prices is None else prices.cost(usage)
