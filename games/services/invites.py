"""Who may join a table: its visibility, the players its creator named, and invite codes.

A code is 128 random bits (`secrets.token_urlsafe`), shown once to whoever created it and stored
as its SHA-256 hash, as keys and tokens are: a copy of the database lets no one in, and a lost
code is simply revoked and replaced. A code is created by a seated player of the table or by its
app, may expire and may be limited to a number of uses, and joins one table only. Using a code
happens in the join's own transaction, under the table's row lock (`lobby.seat_join`), so racing
joins with one code never overfill the table nor use a code beyond its uses.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from games import paging, reads
from games.errors import ServiceError
from games.models import App, Invite, Player, Table
from games.services.common import Scope, Unscoped, locked, require_open

CODE_BYTES = 16  # 128 random bits: 22 characters of token_urlsafe
EXPIRY_LIMITS = (60, 30 * 86_400)  # seconds a code may be valid for
USES_LIMITS = (1, 1_000)
MAX_INVITED = 20  # players named at creation
# Usable codes (not revoked, expired or used up) a table has at once: a table of four needs few,
# and its list (GET tables/{id}/invites) stays one page at the default size (docs/rest.md#limits).
INVITES_MAX = 20
INVITE_PAGES = paging.Keyset("invite", ("id",), (int,))  # oldest first (games/paging.py)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def check_visibility(visibility: object) -> str:
    if visibility not in reads.VISIBILITIES:
        raise ServiceError(
            "invalid_input",
            f"visibility must be one of {', '.join(reads.VISIBILITIES)}",
            kind="malformed",
            field="visibility",
        )
    return str(visibility)


def check_invited(invited: object, app: App | None) -> list[int]:
    """The named players: ids of players of the creator's scope (the app's players, or guests for
    a guest table), at most MAX_INVITED; anything else is `invalid_input` on `invited`."""
    if invited is None:
        return []
    if not isinstance(invited, list | tuple) or any(type(i) is not int for i in invited):
        raise ServiceError(
            "invalid_input", "invited is a list of player ids", kind="malformed", field="invited"
        )
    named = sorted(set(invited))
    if len(named) > MAX_INVITED:
        raise ServiceError(
            "invalid_input", f"at most {MAX_INVITED} players can be named", kind="malformed", field="invited"
        )
    found = set(Player.objects.filter(pk__in=named, app=app).values_list("pk", flat=True))
    if found != set(named):
        unknown = ", ".join(str(i) for i in named if i not in found)
        raise ServiceError(
            "invalid_input", f"no player {unknown} in your scope", kind="malformed", field="invited"
        )
    return named


def _bounded(value: object, name: str, limits: tuple[int, int]) -> int | None:
    if value is None:
        return None
    low, high = limits
    if type(value) is not int or not low <= value <= high:
        raise ServiceError(
            "invalid_input",
            f"{name} must be a whole number from {low} to {high}",
            kind="malformed",
            field=name,
        )
    return value


def invite_body(invite: Invite, code: str | None = None) -> dict[str, Any]:
    """An invite as its creators see it: the code itself only in the answer that created it."""
    body: dict[str, Any] = {
        "hint": invite.hint,
        "table": invite.table_id,
        "created_at": reads.iso(invite.created_at),
        "expires_at": reads.iso(invite.expires_at),
        "uses_left": invite.uses_left,
    }
    return {"code": code, **body} if code is not None else body


def _managed(table_id: int, scope: Scope, player: Player | None) -> Table:
    """The table, locked, when the caller may manage its codes: its app, or a seated player (a
    private table they cannot see is not found; an unseated player is `not_seated`)."""
    table, _ = locked(table_id, scope, with_seats=False, player=player)
    if player is not None and table.seat_of(player.pk) is None:
        raise ServiceError(
            "not_seated", "only the table's seated players or its app manage invites", kind="rules"
        )
    return table


def invite_create(
    *,
    table_id: int,
    player: Player | None,
    scope: Scope,
    expires_in: int | None = None,
    uses: int | None = None,
) -> dict[str, Any]:
    """A new code to an open table, by one of its seated players (`player`) or its app (None),
    valid for `expires_in` seconds and `uses` joins (None: no limit). The answer is the only
    place the code ever appears."""
    seconds = _bounded(expires_in, "expires_in", EXPIRY_LIMITS)
    count = _bounded(uses, "uses", USES_LIMITS)
    with transaction.atomic():
        table = _managed(table_id, scope, player)
        require_open(table)
        # Counted under the table's row lock: two racing creations cannot both pass the cap.
        if _live(table).count() >= INVITES_MAX:
            raise ServiceError(
                "too_many_invites",
                f"a table has at most {INVITES_MAX} usable invite codes: revoke one first",
                kind="conflict",
                limit=INVITES_MAX,
            )
        code = secrets.token_urlsafe(CODE_BYTES)
        invite = Invite.objects.create(
            table=table,
            code_hash=code_hash(code),
            hint=code[:4],
            created_by=f"player:{player.pk}" if player is not None else f"app:{table.app_id}",
            expires_at=None if seconds is None else timezone.now() + dt.timedelta(seconds=seconds),
            uses_left=count,
        )
    return invite_body(invite, code)


def _live(table: Table) -> QuerySet[Invite]:
    """The table's codes still usable: not revoked, expired or used up."""
    live = table.invites.filter(revoked_at__isnull=True).exclude(uses_left=0)
    return live.exclude(expires_at__lte=timezone.now())


def invites_of(*, table_id: int, player: Player | None, scope: Scope) -> QuerySet[Invite]:
    """The table's codes still usable (not revoked, expired or used up), for a seated player or
    its app; a list pages them oldest first (INVITE_PAGES) and shows each through `invite_body`,
    without the code itself (only its hint)."""
    with transaction.atomic():
        table = _managed(table_id, scope, player)
    return _live(table)


def invite_revoke(*, table_id: int, code: str, player: Player | None, scope: Scope) -> None:
    """Revoke a code of this table for good; a code that is not one of its live codes is
    `invite_invalid`."""
    with transaction.atomic():
        table = _managed(table_id, scope, player)
        found = table.invites.filter(code_hash=code_hash(code), revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not found:
            raise _invalid("unknown")


def _invalid(reason: str) -> ServiceError:
    return ServiceError(
        "invite_invalid",
        {
            "unknown": "no such invite code for this table",
            "revoked": "this invite code was revoked",
            "used_up": "this invite code has no uses left",
        }[reason],
        kind="rules",
        reason=reason,
    )


def redeem(table: Table, code: str, player: Player) -> Invite:
    """The invite `code` of this (locked) table, checked before a join: `invite_invalid` (with
    `reason` unknown, revoked or used_up) or `invite_expired`. A code of no table, or of another
    one, sent to a private table the player may not otherwise see is `not_found`."""
    invite = Invite.objects.filter(code_hash=code_hash(code), table=table).first()
    if invite is None:
        if not reads.may_enter(table, player.pk):
            raise ServiceError("not_found", "no such table", kind="not_found")
        raise _invalid("unknown")
    return _usable(invite)


def _usable(invite: Invite) -> Invite:
    if invite.revoked_at is not None:
        raise _invalid("revoked")
    if invite.expires_at is not None and invite.expires_at <= timezone.now():
        raise ServiceError("invite_expired", "this invite code has expired", kind="rules")
    if invite.uses_left == 0:
        raise _invalid("used_up")
    return invite


def table_of_code(code: str, scope: Scope) -> int:
    """The table an invite code joins, in the caller's scope (else `invite_invalid`)."""
    invites = Invite.objects.filter(code_hash=code_hash(code))
    if not isinstance(scope, Unscoped):
        invites = invites.filter(table__app=scope)
    table_id = invites.values_list("table_id", flat=True).first()
    if table_id is None:
        raise _invalid("unknown")
    return table_id


def table_by_code(code: str, scope: Scope) -> Table:
    """The table of a code for a preview before joining: only while the code could be used
    (else `invite_invalid` or `invite_expired`)."""
    table_of_code(code, scope)  # in the caller's scope
    return _usable(Invite.objects.select_related("table").get(code_hash=code_hash(code))).table
