"""The erasure operations: an app erases one of its players, a player (a guest too) erases themselves.

Each is declared once: REST serves it (games/api/erasure.py) and GraphQL too (games/graphql/erasure.py).
"""

from __future__ import annotations

from typing import Any

from games import accounts
from games.accounts import Scope
from games.audit import Audited
from games.errors import Code
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn
from games.services.erasure import erase_player


def _erase_player(c: Call) -> dict[str, Any]:
    player = accounts.player_of(c.app, c["player_id"])  # another app's player: not_found
    return erase_player(player.pk, by=c.principal.owner).body()


def _erase_me(c: Call) -> dict[str, Any]:
    player = c.principal.require_player()
    return erase_player(player.pk, by=c.principal.owner).body()


_WHAT = (
    "every token is revoked at once; a seat at an open table is left, a started game's seat is "
    "played by the server to the end; quick play, invites made, devices, exports and ratings go; "
    "the name, external id and language are deleted, and the games played keep the seat under a "
    "stable pseudonym (docs/privacy.md#erasure). Your endpoints subscribed to player.erased get it. "
    "Erasing an erased player changes nothing and answers the same."
)

ERASE_PLAYER = Operation(
    name="erasePlayer",
    audited=Audited("player", id_in="player_id", changed=lambda _: {"erased": [None, True]}),
    scope=Scope.erasure,
    description=f"App key: erase one of your players (another app's player: not_found): {_WHAT}",
    input=EmptyIn,
    path=("player_id",),
    access=Access.APP,
    denied="only an app key can erase its players: a player erases themselves with DELETE /me",
    run=_erase_player,
    errors=(Code.not_found,),
)

ERASE_ME = Operation(
    name="eraseMe",
    description=f"Player token (a guest's too): erase yourself: {_WHAT} This token stops working at once.",
    input=EmptyIn,
    access=Access.PLAYER,
    denied="only a player can erase themselves: an app erases a player with DELETE /players/{id}",
    run=_erase_me,
)
