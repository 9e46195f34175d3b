"""Every stored field, classified once: what is personal, how erasure treats it and what an export holds.

`FIELDS` names every concrete field of every installed model (`"games.Player.name"`), so a field a
later model adds is unclassified until someone decides about it: `tests/services/test_privacy.py`
fails on it. Erasure (`games.services.erasure`) and the player export (`games.services.exports`)
act on what this module says, field by field, and their tests check each such field with a marker
value after a whole game.

Kinds:
- `PERSONAL`: about the player themselves (their name, their app's id for them, a device token):
  gone after erasure (the row deleted, or the value blanked or replaced by the pseudonym); in the
  export.
- `NAMES`: a copy of seated players' names inside game data (a table's seating, a move's events,
  a delivered webhook body): each copy of the erased player's name becomes their pseudonym.
- `REFERENCE`: points to a player (a foreign key, a player id): kept, since the row it points to
  stays as the pseudonym; a game keeps its seats.
- `GAME`: the game itself and what follows from it (cards, scores, ratings' numbers, options).
- `SERVICE`: the service's bookkeeping (times, counters, states of deliveries).
- `SECRET`: a hash or an encrypted secret: never exported; deleted with its row.
- `OPERATOR`: data of the operator's own staff accounts (Django's admin), not of players.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings


class Kind(StrEnum):
    PERSONAL = "personal"
    NAMES = "names"
    REFERENCE = "reference"
    GAME = "game"
    SERVICE = "service"
    SECRET = "secret"
    OPERATOR = "operator"


class Erasure(StrEnum):
    """What erasing a player does to this field where it concerns them."""

    KEEP = "keep"  # nothing: not personal, or a reference to the (kept) pseudonymous row
    PSEUDONYM = "pseudonym"  # the value becomes the player's pseudonym
    BLANK = "blank"  # the value becomes empty
    DELETE_ROW = "delete_row"  # the player's rows of this model are deleted
    SCRUB = "scrub"  # copies of the player's name inside it become the pseudonym
    NOT_A_PLAYER = "not_a_player"  # operator data: no player's data is here


@dataclass(frozen=True)
class Field:
    kind: Kind
    erasure: Erasure
    exported: bool  # in the player's export (for the rows that are theirs)


def _f(kind: Kind, erasure: Erasure = Erasure.KEEP, exported: bool = False) -> Field:
    return Field(kind, erasure, exported)


P, N, R, G, S, X = (
    Kind.PERSONAL,
    Kind.NAMES,
    Kind.REFERENCE,
    Kind.GAME,
    Kind.SERVICE,
    Kind.SECRET,
)
KEEP, PSEUDONYM, BLANK, DELETE_ROW, SCRUB = (
    Erasure.KEEP,
    Erasure.PSEUDONYM,
    Erasure.BLANK,
    Erasure.DELETE_ROW,
    Erasure.SCRUB,
)
OPERATOR_ONLY = _f(Kind.OPERATOR, Erasure.NOT_A_PLAYER)


def _names(text: str) -> list[str]:
    return text.split()


FIELDS: dict[str, Field] = {
    # Django's own: staff accounts of the operator, their admin sessions and the admin's log.
    **{
        f"{model}.{name}": OPERATOR_ONLY
        for model, names in {
            "admin.LogEntry": "id action_time user content_type object_id object_repr action_flag "
            "change_message",
            "auth.Permission": "id name content_type codename",
            "auth.Group": "id name",
            "auth.User": "id password last_login is_superuser username first_name last_name email is_staff "
            "is_active date_joined",
            "contenttypes.ContentType": "id app_label model",
            "sessions.Session": "session_key session_data expire_date",
        }.items()
        for name in _names(names)
    },
    # An integrating app: an organisation, not a person.
    "games.App.id": _f(S),
    "games.App.name": _f(S),
    "games.App.retention_days": _f(S),
    "games.App.created_at": _f(S),
    # The player: the row stays as the pseudonym that their games keep.
    "games.Player.id": _f(R, exported=True),
    "games.Player.app": _f(R, exported=True),
    "games.Player.name": _f(P, PSEUDONYM, exported=True),
    "games.Player.external_id": _f(P, BLANK, exported=True),
    "games.Player.language": _f(P, BLANK, exported=True),
    "games.Player.erased_at": _f(S),
    "games.Player.created_at": _f(S, exported=True),  # when the (pseudonymous) row was made
    "games.PlayerToken.id": _f(S, DELETE_ROW),
    "games.PlayerToken.player": _f(R, DELETE_ROW),
    "games.PlayerToken.token_hash": _f(X, DELETE_ROW),
    "games.PlayerToken.created_at": _f(P, DELETE_ROW, exported=True),
    "games.PlayerToken.revoked_at": _f(P, DELETE_ROW, exported=True),
    "games.PlayerToken.expires_at": _f(P, DELETE_ROW, exported=True),
    # Tables: game data, with copies of the seated players' names.
    "games.Table.id": _f(G),
    "games.Table.app": _f(R),
    "games.Table.options": _f(G),
    "games.Table.status": _f(G),
    "games.Table.version": _f(G),
    "games.Table.seed": _f(G),
    "games.Table.state": _f(G),
    "games.Table.hand_number": _f(G),
    "games.Table.seating": _f(N, SCRUB, exported=True),
    "games.Table.clocks": _f(G),
    "games.Table.deadline": _f(G),
    "games.Table.reminder_at": _f(S),
    "games.Table.bot_turn": _f(S),
    "games.Table.rematch_of": _f(G),
    "games.Table.match_key": _f(S),
    "games.Table.fill_with": _f(G),
    "games.Table.rematch_votes": _f(R, SCRUB),  # the erased player's vote is withdrawn
    "games.Table.visibility": _f(G),
    "games.Table.invited": _f(R, SCRUB),  # the erased player is no longer invited
    "games.Table.spectator_delay": _f(G),
    "games.Table.rated": _f(G),
    "games.Table.hints": _f(G),
    "games.Table.tournament": _f(G),
    "games.Table.deal_set": _f(G),
    "games.Table.rotation": _f(G),
    "games.Table.bot_rng": _f(G),
    "games.Table.finished_at": _f(G),
    "games.Table.archived_at": _f(S),
    "games.Table.archive": _f(S),  # the archive itself holds seating and events: scrubbed like them
    "games.Table.created_at": _f(G),
    "games.Table.updated_at": _f(S),
    "games.Seat.id": _f(S),
    "games.Seat.table": _f(G),
    "games.Seat.position": _f(G, exported=True),
    "games.Seat.player": _f(R, exported=True),
    "games.Seat.bot_level": _f(G),
    "games.Seat.timeouts": _f(G),
    "games.Seat.away": _f(G),
    "games.Hand.id": _f(S),
    "games.Hand.table": _f(G),
    "games.Hand.number": _f(G),
    "games.Hand.pass_direction": _f(G),
    "games.Hand.seed": _f(G),
    "games.Hand.deal_commitment": _f(G),
    "games.Hand.finished": _f(G),
    # How many hints each seat of a table was given (games.services.hints): game data of the seat.
    "games.HintCount.id": _f(S),
    "games.HintCount.table": _f(G),
    "games.HintCount.seat": _f(G),
    "games.HintCount.count": _f(G),
    "games.ScoreRow.id": _f(S),
    "games.ScoreRow.table": _f(G),
    "games.ScoreRow.hand_number": _f(G),
    "games.ScoreRow.position": _f(G),
    "games.ScoreRow.points": _f(G),
    "games.ScoreRow.total": _f(G),
    "games.Move.id": _f(S),
    "games.Move.table": _f(G),
    "games.Move.seq": _f(G),
    "games.Move.hand": _f(G),
    "games.Move.position": _f(G),
    "games.Move.kind": _f(G),
    "games.Move.payload": _f(R, KEEP, exported=True),  # their actions; a join names them by id only
    "games.Move.events": _f(N, SCRUB),  # seat_taken events carry the name
    "games.Move.idempotency_key": _f(S),
    "games.Move.created_at": _f(G, exported=True),
    "games.FormerSeat.id": _f(S),
    "games.FormerSeat.table": _f(G),
    "games.FormerSeat.player": _f(R),  # kept: it is how erasure finds the table's copies of the name
    "games.GameRecord.table": _f(G),
    "games.GameRecord.data": _f(N, SCRUB),  # the sealed move log: its events, as Move.events
    "games.GameRecord.created_at": _f(S),
    # Exports: the documents hold the player's data, so the player's jobs and files go.
    "games.ExportJob.id": _f(S, DELETE_ROW),
    "games.ExportJob.uuid": _f(S, DELETE_ROW),
    "games.ExportJob.app": _f(R, DELETE_ROW),
    "games.ExportJob.player": _f(R, DELETE_ROW),
    "games.ExportJob.requested_by": _f(R, DELETE_ROW),
    "games.ExportJob.status": _f(S, DELETE_ROW),
    "games.ExportJob.file": _f(S, DELETE_ROW),  # a name made of the job's uuid; the document goes too
    "games.ExportJob.size": _f(S, DELETE_ROW),
    "games.ExportJob.error": _f(S, DELETE_ROW),
    "games.ExportJob.created_at": _f(S, DELETE_ROW),
    "games.ExportJob.finished_at": _f(S, DELETE_ROW),
    "games.ExportJob.expires_at": _f(S, DELETE_ROW),
    # Stored answers to retried requests: the player's own go; an app's that name them are scrubbed.
    "games.IdempotentRequest.id": _f(S),
    "games.IdempotentRequest.owner": _f(R, DELETE_ROW),
    "games.IdempotentRequest.key": _f(S),
    "games.IdempotentRequest.fingerprint": _f(S),
    "games.IdempotentRequest.status": _f(S),
    "games.IdempotentRequest.body": _f(N, SCRUB),
    "games.IdempotentRequest.created_at": _f(S),
    "games.ApiKey.id": _f(S),
    "games.ApiKey.app": _f(S),
    "games.ApiKey.name": _f(S),
    "games.ApiKey.prefix": _f(S),
    "games.ApiKey.key_hash": _f(X),
    "games.ApiKey.scopes": _f(S),
    "games.ApiKey.created_at": _f(S),
    "games.ApiKey.expires_at": _f(S),
    "games.ApiKey.revoked_at": _f(S),
    "games.ApiKey.last_used_at": _f(S),
    "games.ApiKey.replaced_by": _f(S),
    # The operator's quotas of an app (games/quotas.py).
    "games.AppQuota.id": _f(S),
    "games.AppQuota.app": _f(S),
    "games.AppQuota.streams_per_token": _f(S),
    "games.AppQuota.streams_per_app": _f(S),
    "games.AppQuota.open_tables": _f(S),
    "games.AppQuota.tournaments_per_day": _f(S),
    "games.AppQuota.bots": _f(S),
    "games.AppQuota.webhooks": _f(S),
    "games.AppQuota.updated_at": _f(S),
    # The audit trail (games/audit.py): append-only and hash-chained, so erasure never edits it; it
    # holds no personal data by design (a player appears only as a `player:<id>` target, the same
    # reference a game keeps; changes never record names, and never secrets).
    "games.AuditEntry.id": _f(S),
    "games.AuditEntry.app_id": _f(S),
    "games.AuditEntry.at": _f(S),
    "games.AuditEntry.actor_kind": _f(S),
    "games.AuditEntry.actor": _f(S),
    "games.AuditEntry.request_id": _f(S),
    "games.AuditEntry.action": _f(S),
    "games.AuditEntry.target": _f(R),
    "games.AuditEntry.changes": _f(S),
    "games.AuditEntry.prev_hash": _f(S),
    "games.AuditEntry.hash": _f(S),
    "games.WebhookEndpoint.id": _f(S),
    "games.WebhookEndpoint.app": _f(S),
    "games.WebhookEndpoint.url": _f(S),
    "games.WebhookEndpoint.event_types": _f(S),
    "games.WebhookEndpoint.description": _f(S),
    "games.WebhookEndpoint.secret_salt": _f(X),
    "games.WebhookEndpoint.active": _f(S),
    "games.WebhookEndpoint.created_at": _f(S),
    "games.WebhookEndpoint.updated_at": _f(S),
    "games.WebhookDelivery.id": _f(S),
    "games.WebhookDelivery.uuid": _f(S),
    "games.WebhookDelivery.endpoint": _f(S),
    "games.WebhookDelivery.table": _f(G),
    "games.WebhookDelivery.seq": _f(G),
    "games.WebhookDelivery.event_types": _f(S),
    "games.WebhookDelivery.body": _f(N, SCRUB),  # seat_taken events carry the name
    "games.WebhookDelivery.status": _f(S),
    "games.WebhookDelivery.attempts": _f(S),
    "games.WebhookDelivery.attempt_budget": _f(S),
    "games.WebhookDelivery.next_attempt_at": _f(S),
    "games.WebhookDelivery.queued_at": _f(S),
    "games.WebhookDelivery.claim": _f(S),
    "games.WebhookDelivery.last_attempt_at": _f(S),
    "games.WebhookDelivery.last_status_code": _f(S),
    "games.WebhookDelivery.last_error": _f(S),
    "games.WebhookDelivery.delivered_at": _f(S),
    "games.WebhookDelivery.log": _f(S),
    "games.WebhookDelivery.created_at": _f(S),
    "games.QuickPlay.id": _f(S, DELETE_ROW),
    "games.QuickPlay.player": _f(R, DELETE_ROW),
    "games.QuickPlay.table": _f(S, DELETE_ROW),
    "games.QuickPlay.created_at": _f(S, DELETE_ROW),
    "games.Invite.id": _f(S),
    "games.Invite.table": _f(G),
    "games.Invite.code_hash": _f(X),
    "games.Invite.hint": _f(S),
    "games.Invite.created_by": _f(R, DELETE_ROW),  # the player's invites go (and are theirs in the export)
    "games.Invite.expires_at": _f(S, exported=True),
    "games.Invite.uses_left": _f(S, exported=True),
    "games.Invite.revoked_at": _f(S, exported=True),
    "games.Invite.created_at": _f(S, exported=True),
    # Ratings: the numbers are game data; the player's own rows leave the leaderboards.
    "games.Rating.id": _f(S, DELETE_ROW),
    "games.Rating.app": _f(R, DELETE_ROW),
    "games.Rating.player": _f(R, DELETE_ROW, exported=True),
    "games.Rating.family": _f(G, DELETE_ROW, exported=True),
    "games.Rating.mu": _f(G, DELETE_ROW, exported=True),
    "games.Rating.sigma": _f(G, DELETE_ROW, exported=True),
    "games.Rating.score": _f(G, DELETE_ROW, exported=True),
    "games.Rating.games": _f(G, DELETE_ROW, exported=True),
    "games.Rating.updated_at": _f(G, DELETE_ROW, exported=True),
    "games.RatingChange.id": _f(S),
    "games.RatingChange.table": _f(G, exported=True),
    "games.RatingChange.player": _f(R, exported=True),
    "games.RatingChange.family": _f(G, exported=True),
    "games.RatingChange.position": _f(G, exported=True),
    "games.RatingChange.place": _f(G, exported=True),
    "games.RatingChange.mu_before": _f(G, exported=True),
    "games.RatingChange.sigma_before": _f(G, exported=True),
    "games.RatingChange.mu_after": _f(G, exported=True),
    "games.RatingChange.sigma_after": _f(G, exported=True),
    "games.RatingChange.created_at": _f(G, exported=True),
    "games.Tournament.id": _f(G),
    "games.Tournament.app": _f(S),
    "games.Tournament.name": _f(S),
    "games.Tournament.entrants": _f(N, SCRUB),
    "games.Tournament.options": _f(G),
    "games.Tournament.clocks": _f(G),
    "games.Tournament.deal_sets": _f(G),
    "games.Tournament.seed": _f(G),
    "games.Tournament.seed_given": _f(G),
    "games.Tournament.status": _f(G),
    "games.Tournament.tables_total": _f(G),
    "games.Tournament.tables_finished": _f(G),
    "games.Tournament.standings": _f(N, SCRUB),
    "games.Tournament.created_at": _f(G),
    "games.Tournament.finished_at": _f(G),
    # Bots an app brings: the app's configuration, no player's data.
    **{
        f"games.BotEndpoint.{name}": _f(X if name == "secret_salt" else S)
        for name in _names(
            "id app name url timeout_ms secret_salt enabled calls answered fallback_timeout "
            "fallback_failed fallback_bad_answer fallback_illegal fallback_disabled last_error "
            "last_called_at created_at updated_at"
        )
    },
    # Devices: the player's own, all of it personal; their messages go with them.
    "games.PushDevice.id": _f(S, DELETE_ROW, exported=True),
    "games.PushDevice.player": _f(R, DELETE_ROW),
    "games.PushDevice.scope": _f(S, DELETE_ROW),
    "games.PushDevice.kind": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.token": _f(P, DELETE_ROW, exported=True),  # exported as its last characters
    "games.PushDevice.keys": _f(X, DELETE_ROW),
    "games.PushDevice.topic": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.label": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.language": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.created_at": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.expires_at": _f(P, DELETE_ROW, exported=True),
    "games.PushDevice.last_pushed_at": _f(P, DELETE_ROW, exported=True),
    **{
        f"games.PushCredential.{name}": _f(X if name == "secret" else S)
        for name in _names("id scope provider public secret created_at updated_at")
    },
    **{
        f"games.PushMessage.{name}": _f(S, DELETE_ROW)  # deleted with the device (CASCADE)
        for name in _names(
            "id uuid device table kind key version seat status attempts not_before "
            "next_attempt_at queued_at claim sent_at last_status_code last_error created_at"
        )
    },
}


def field(label: str) -> Field:
    """The classification of `"app.Model.field"`; KeyError for a field nobody classified."""
    return FIELDS[label]


def of_kind(*kinds: Kind) -> list[str]:
    """The labels of the fields of these kinds."""
    return [label for label, f in FIELDS.items() if f.kind in kinds]


def erased_by(erasure: Erasure) -> list[str]:
    """The labels of the fields that erasure treats this way."""
    return [label for label, f in FIELDS.items() if f.erasure is erasure]


def pseudonym(player_id: int) -> str:
    """The name an erased player's seats keep: stable for the player (a MAC of their id under the
    SECRET_KEY, stored in `Player.name` at erasure), unlinkable to anything they were, and the
    same in every game, export and transcript, so other players' histories still read."""
    mac = hmac.new(settings.SECRET_KEY.encode(), f"pseudonym:{player_id}".encode(), hashlib.sha256).digest()
    return "Erased-" + base64.b32encode(mac[:5]).decode().lower()
