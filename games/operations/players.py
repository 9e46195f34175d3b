"""The player operations: guests, an app's players, their bearer tokens.

Each is declared once: REST serves it (games/api/views.py) and GraphQL too (games/graphql/players.py).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_serializer

from games import accounts
from games.accounts import Scope
from games.errors import Code, ServiceError
from games.models import Player
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn, StrictCharField, StrictIntegerField, StrictSerializer


def name_field() -> StrictCharField:
    """A player's name: 1 to accounts.NAME_MAX characters."""
    return StrictCharField(max_length=accounts.NAME_MAX, help_text=f"1 to {accounts.NAME_MAX} characters")


def credential(player: Player, token: str, expires_at: dt.datetime | None = None) -> dict[str, Any]:
    """A player and a new bearer token of theirs (shown once: only its hash is stored), and when
    the token expires (None: never)."""
    shown = {"id": player.pk, "name": player.name, "external_id": player.external_id}
    return {"player": shown, "token": token, "expires_at": expires_at}


def expires_in_field(help_text: str) -> StrictIntegerField:
    return StrictIntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=accounts.TOKEN_LIFETIME_MIN,
        max_value=accounts.TOKEN_LIFETIME_MAX,
        help_text=help_text,
    )


@extend_schema_serializer(component_name="CreatePlayerToken")
class CreatePlayerTokenIn(StrictSerializer):
    """A token's lifetime."""

    expires_in = expires_in_field(
        f"Seconds the token works ({accounts.TOKEN_LIFETIME_MIN} to {accounts.TOKEN_LIFETIME_MAX}), then "
        "401 token_expired; left out or null: until revoked"
    )


@extend_schema_serializer(component_name="CreateGuest")
class CreateGuestIn(StrictSerializer):
    """A guest player: only a name."""

    name = name_field()


CREATE_GUEST = Operation(
    name="createGuest",
    description="A self-service guest player and its bearer token (no credentials needed).",
    input=CreateGuestIn,
    access=Access.ANYONE,
    run=lambda c: credential(*accounts.player_create(app=None, name=c["name"])),
)


@extend_schema_serializer(component_name="CreatePlayer")
class CreatePlayerIn(StrictSerializer):
    """A player of the app, with the app's own id for the user."""

    name = name_field()
    external_id = StrictCharField(
        max_length=accounts.EXTERNAL_ID_MAX,
        required=False,
        default="",
        allow_blank=True,
        help_text="Your own id for the user (at most 128 characters)",
    )


CREATE_PLAYER = Operation(
    name="createPlayer",
    scope=Scope.players_write,
    description="App key: a player for one of the app's users, and a first bearer token.",
    input=CreatePlayerIn,
    access=Access.APP,
    denied="only an app key can create players",
    run=lambda c: credential(
        *accounts.player_create(app=c.principal.app, name=c["name"], external_id=c["external_id"])
    ),
)


def _token(c: Call) -> dict[str, Any]:
    app = c.principal.app
    assert app is not None  # Access.APP
    player = accounts.player_of(app, c["player_id"])
    return credential(player, *accounts.token_issued(player=player, expires_in=c.get("expires_in")))


CREATE_PLAYER_TOKEN = Operation(
    name="createPlayerToken",
    scope=Scope.players_write,
    description="App key: another bearer token for one of the app's players, which works until revoked "
    "or, with `expires_in`, for that many seconds (then 401 token_expired; the player refreshes it "
    "with refreshToken before then).",
    input=CreatePlayerTokenIn,
    path=("player_id",),
    access=Access.APP,
    denied="only an app key can issue its players' tokens",
    run=_token,
    errors=(Code.not_found,),
)


def _revoke(c: Call) -> None:
    if not accounts.token_revoke(token=c["bearer"]):
        raise ServiceError("not_a_player_token", "only a player token can be revoked here", kind="rules")


REVOKE_TOKEN = Operation(
    name="revokeToken",
    scope=Scope.players_write,
    description="Revoke the player token this request is made with.",
    input=EmptyIn,
    path=("bearer",),
    run=_revoke,
    errors=(Code.not_a_player_token,),
)


@extend_schema_serializer(component_name="RefreshToken")
class RefreshTokenIn(StrictSerializer):
    """The new token's lifetime."""

    expires_in = expires_in_field(
        f"Seconds the new token works ({accounts.TOKEN_LIFETIME_MIN} to {accounts.TOKEN_LIFETIME_MAX}); "
        "left out or null: as long as the old one was given (never, for a token without expiry)"
    )


def _refresh(c: Call) -> dict[str, Any]:
    player = c.principal.require_player()
    return credential(player, *accounts.token_refresh(c.principal, c.get("expires_in")))


REFRESH_TOKEN = Operation(
    name="refreshToken",
    description="Player token: exchange the token of this request for a new one. The old token keeps "
    f"working {accounts.REFRESH_OVERLAP} seconds more (requests already on their way), then 401 "
    "token_expired. Answers the player and the new token (shown once).",
    input=RefreshTokenIn,
    access=Access.PLAYER,
    denied="only a player token can be refreshed",
    run=_refresh,
    errors=(Code.token_expired,),
)


@extend_schema_serializer(component_name="MeIn")  # its name in the OpenAPI document since 0.1
class UpdateMeIn(StrictSerializer):
    """What a player may change about themselves: the language of their error details."""

    language = StrictCharField(
        required=False,
        allow_blank=True,
        help_text=f"{', '.join(code for code, _ in settings.LANGUAGES)}: error details in that language, "
        "whatever Accept-Language says; empty: follow Accept-Language again. Another value: invalid_language",
    )


def _update_me(c: Call) -> Player:
    player = c.principal.require_player()
    if "language" in c.input:
        accounts.set_language(player, c["language"])
    return player


UPDATE_ME = Operation(
    name="updateMe",
    description="Player token: change what a player may change about themselves: the language of "
    "your error details, whatever Accept-Language says (empty: follow Accept-Language again; left "
    "out: unchanged). Answers you after the change.",
    input=UpdateMeIn,
    access=Access.PLAYER,
    denied="only a player has a language: use a player's token",
    run=_update_me,
    errors=(Code.invalid_language,),
)
