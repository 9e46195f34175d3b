"""The scope an app key needs for each read, declared once, as each write's is on its Operation.

REST checks `REST_READS` by the route a GET matched (games/api/auth.py), GraphQL checks
`GRAPHQL_READS` for each root Query field (games/graphql/view.py) and `SUBSCRIPTIONS` when a
subscription starts (games/graphql/socket.py); event streams opened with an app key need
`STREAMS` (games/api/streams.py). None: any key may read it (the caller's own identity, public
facts), or only a player's token can (an app key gets the read's own refusal). A read that is not
listed needs `admin`, so a new route is closed to narrow keys until it is declared here
(tests/api/test_scopes.py holds every route and field listed).
"""

from __future__ import annotations

from games.accounts import Scope

ADMIN_ONLY = Scope.admin  # the scope of a read nobody declared

# REST: the route (as games/api/urls.py writes it) of each GET.
REST_READS: dict[str, Scope | None] = {
    "ratings": Scope.ratings_read,
    "leaderboard": Scope.ratings_read,
    "players/<id:player_id>/ratings": Scope.ratings_read,
    "players/<id:player_id>/rating-history": Scope.ratings_read,
    "tables": Scope.tables_read,
    "quick-play": Scope.tables_read,
    "tables/<id:table_id>": Scope.tables_read,
    "tables/<id:table_id>/invites": Scope.tables_read,
    "invites/<code:code>": Scope.tables_read,
    "tables/<id:table_id>/scoresheet": Scope.tables_read,
    "tables/<id:table_id>/moves": Scope.tables_read,
    "tables/<id:table_id>/events": Scope.tables_read,
    "tables/<id:table_id>/hands": Scope.tables_read,
    "tables/<id:table_id>/export": Scope.tables_read,
    "tables/<id:table_id>/transcript": Scope.tables_read,
    "tables/<id:table_id>/hands/<id:number>": Scope.tables_read,
    "tables/<id:table_id>/hands/<id:number>/review": Scope.tables_read,
    "tables/<id:table_id>/hint": None,  # a seated player's own hint (games/services/hints.py): tokens only
    "me": None,  # who is calling
    "me/turns": None,  # a player's own
    "me/devices": None,
    "tournaments": Scope.tournaments_read,
    "tournaments/<id:tournament_id>": Scope.tournaments_read,
    "tournaments/<id:tournament_id>/standings": Scope.tournaments_read,
    "tournaments/<id:tournament_id>/tables": Scope.tournaments_read,
    "webhooks": Scope.webhooks_read,
    "webhooks/<id:webhook_id>": Scope.webhooks_read,
    "webhooks/<id:webhook_id>/deliveries": Scope.webhooks_read,
    "webhooks/<id:webhook_id>/deliveries/<uuid:delivery_id>": Scope.webhooks_read,
    "players/<id:player_id>/devices": Scope.push_read,
    "app/push": Scope.push_read,
    "push/vapid-key": None,  # the service's public key
    "app": Scope.app_read,
    "app/keys": Scope.keys_read,
    "app/audit": Scope.app_read,  # the app's audit trail (games/audit.py)
    "bots": Scope.bots_read,
    "bots/<id:bot_id>": Scope.bots_read,
    "exports/schema": None,  # public: the export document's schema
    "exports/<uuid:export_id>": Scope.exports_read,
    "exports/<uuid:export_id>/document": Scope.exports_read,
}

# GraphQL: each root Query field.
GRAPHQL_READS: dict[str, Scope | None] = {
    "me": None,
    "app": Scope.app_read,
    "apiKeys": Scope.keys_read,
    "auditEntries": Scope.app_read,
    "tables": Scope.tables_read,
    "table": Scope.tables_read,
    "quickPlay": Scope.tables_read,
    "invites": Scope.tables_read,
    "inviteTable": Scope.tables_read,
    "tableExport": Scope.tables_read,
    "tableTranscript": Scope.tables_read,
    "myTurns": None,
    "myDevices": None,
    "playerDevices": Scope.push_read,
    "pushSettings": Scope.push_read,
    "vapidKey": None,
    "bots": Scope.bots_read,
    "bot": Scope.bots_read,
    "webhooks": Scope.webhooks_read,
    "webhook": Scope.webhooks_read,
    "deliveries": Scope.webhooks_read,
    "delivery": Scope.webhooks_read,
    "export": Scope.exports_read,
    "tournaments": Scope.tournaments_read,
    "tournament": Scope.tournaments_read,
    "leaderboard": Scope.ratings_read,
    "playerRatings": Scope.ratings_read,
    "ratingHistory": Scope.ratings_read,
    "ratingSystem": Scope.ratings_read,
    # the paged forms of lists (games/graphql/pages.py)
    "botPage": Scope.bots_read,
    "invitePage": Scope.tables_read,
    "myDevicePage": None,
    "playerDevicePage": Scope.push_read,
    "tournamentPage": Scope.tournaments_read,
    "webhookPage": Scope.webhooks_read,
    "__schema": None,  # introspection
    "__type": None,
    "__typename": None,
}

# GraphQL subscriptions, by root field.
SUBSCRIPTIONS: dict[str, Scope | None] = {"tableEvents": Scope.tables_read, "myEvents": None}

# Event streams (SSE, NDJSON): `table:<id>` streams and the player's own.
STREAMS: dict[str, Scope | None] = {"table": Scope.tables_read, "me": None}


def rest_read(route: str) -> Scope | None:
    """The scope a GET of this route needs (`route` as resolved, with or without /api/v1/)."""
    return REST_READS.get(route.removeprefix("api/v1/"), ADMIN_ONLY)


def graphql_read(field: str) -> Scope | None:
    """The scope a root Query field needs."""
    return GRAPHQL_READS.get(field, ADMIN_ONLY)
