"""The agent card a server publishes at ``/.well-known/agent-card.json``."""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from agentrt.agent import Agent

__all__ = ("JSONRPC_PATH", "MODES", "REST_PATH", "SECURITY_SCHEME", "agent_card")

JSONRPC_PATH = "/a2a"
"""Where the JSON-RPC binding answers (``POST``; a trailing slash is accepted too)."""

REST_PATH = "/a2a/rest"
"""The prefix of the HTTP+JSON binding's paths (``/a2a/rest/message:send``...)."""

SECURITY_SCHEME = "bearer"
"""The name of the card's security scheme when the server has a token."""

MODES = ["text/plain", "application/json"]
"""What a task takes and gives: text, and data parts (decisions; agentrt events)."""


def agent_card(agent: Agent, base_url: str, *, version: str, token: bool) -> AgentCard:
    """The card of ``agent`` served at ``base_url`` (``http://host:port``, no slash at the end).

    Its skills: the agent itself (what it does, from its description), then one per
    tool (the tool's name and description), tagged ``tool``. With ``token``, the card
    declares the server's bearer token as an HTTP security scheme that every request
    needs.
    """
    description = agent.description or f"The agentrt agent {agent.name}."
    skills = [
        AgentSkill(
            id=agent.name,
            name=agent.name,
            description=description,
            tags=["agent"],
            input_modes=MODES,
            output_modes=MODES,
        )
    ]
    for tool in agent.tools:
        skills.append(
            AgentSkill(
                id=f"{agent.name}.{tool.name}",
                name=tool.name,
                description=tool.description or tool.name,
                tags=["tool"],
            )
        )
    card = AgentCard(
        name=agent.name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=base_url + JSONRPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            ),
            AgentInterface(
                url=base_url + REST_PATH,
                protocol_binding=TransportProtocol.HTTP_JSON.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            ),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=skills,
    )
    if token:
        card.security_schemes[SECURITY_SCHEME].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="The server's token: Authorization: Bearer <token>.",
                )
            )
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={SECURITY_SCHEME: StringList()})
        )
    return card
