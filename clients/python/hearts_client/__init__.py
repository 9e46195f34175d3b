"""Python client of the Hearts service API: sync and async clients, typed models and events, `Bot`."""

from hearts_client._core import Retry, __version__
from hearts_client.aclient import AsyncEventStream, AsyncHeartsClient
from hearts_client.bot import Bot
from hearts_client.client import EventStream, HeartsClient
from hearts_client.errors import (
    AuthenticationError,
    BadRequest,
    Conflict,
    HeartsError,
    NotFound,
    PermissionDenied,
    RateLimited,
    RulesError,
    ServerError,
    ServiceUnavailable,
    StaleVersion,
    TransportError,
)
from hearts_client.models import (
    EVENT_TYPES,
    Action,
    Error,
    ErrorCode,
    Event,
    Game,
    LegalActions,
    Me,
    Seat,
    StreamTicket,
    Table,
    YourTurn,
)

__all__ = [
    "EVENT_TYPES",
    "Action",
    "AsyncEventStream",
    "AsyncHeartsClient",
    "AuthenticationError",
    "BadRequest",
    "Bot",
    "Conflict",
    "Error",
    "ErrorCode",
    "Event",
    "EventStream",
    "Game",
    "GameExport",
    "HeartsClient",
    "HeartsError",
    "LegalActions",
    "Me",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "Retry",
    "RulesError",
    "Seat",
    "ServerError",
    "ServiceUnavailable",
    "StaleVersion",
    "StreamTicket",
    "Table",
    "TransportError",
    "YourTurn",
    "__version__",
]
