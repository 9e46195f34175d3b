"""Routes of the REST API, mounted at /api/v1/."""

from django.urls import path, re_path, register_converter
from django.views.decorators.csrf import csrf_exempt

from games.api import (
    apps,
    audit,
    bots,
    data_exports,
    erasure,
    exports,
    hints,
    invites,
    keys,
    matchmaking,
    push,
    ratings,
    review,
    streams,
    tickets,
    tournaments,
    turns,
    views,
    webhooks,
)
from hearts_service.views import not_found


class IdConverter:
    """A row id: 1 to 18 digits, so it always fits the 64-bit id columns (a longer number, a sign
    or a letter matches no route and is a JSON 404, never a failed query)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")


class InviteCodeConverter:
    """An invite code as token_urlsafe writes it (anything else matches no route: a JSON 404)."""

    regex = "[A-Za-z0-9_-]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(InviteCodeConverter, "code")

urlpatterns = [
    path("guests", views.GuestsView.as_view()),
    path("players", views.PlayersView.as_view()),
    path("players/<id:player_id>", erasure.PlayerView.as_view()),
    path("players/<id:player_id>/tokens", views.PlayerTokensView.as_view()),
    path("tokens/revoke", views.TokenRevokeView.as_view()),
    path("tokens/refresh", keys.TokenRefreshView.as_view()),
    path("ratings", ratings.RatingSystemView.as_view()),
    path("leaderboard", ratings.LeaderboardView.as_view()),
    path("players/<id:player_id>/ratings", ratings.PlayerRatingsView.as_view()),
    path("players/<id:player_id>/rating-history", ratings.RatingHistoryView.as_view()),
    path("tables", views.TablesView.as_view()),
    path("quick-play", matchmaking.QuickPlayView.as_view()),
    path("tables/<id:table_id>", views.TableView.as_view()),
    path("tables/<id:table_id>/join", views.JoinView.as_view()),
    path("tables/<id:table_id>/leave", views.LeaveView.as_view()),
    path("tables/<id:table_id>/bots", views.BotsView.as_view()),
    path("tables/<id:table_id>/start", views.StartView.as_view()),
    path("tables/<id:table_id>/abandon", views.AbandonView.as_view()),
    path("tables/<id:table_id>/actions", views.ActionsView.as_view()),
    path("tables/<id:table_id>/back", views.BackView.as_view()),
    path("tables/<id:table_id>/rematch", views.RematchView.as_view()),
    path("tables/<id:table_id>/invites", invites.InvitesView.as_view()),
    path("tables/<id:table_id>/invites/<code:code>", invites.InviteView.as_view()),
    path("invites/<code:code>", invites.InviteTableView.as_view()),
    path("invites/<code:code>/join", invites.JoinByInviteView.as_view()),
    path("tables/<id:table_id>/scoresheet", views.ScoresheetView.as_view()),
    path("tables/<id:table_id>/moves", views.MovesView.as_view()),
    path("tables/<id:table_id>/events", views.EventsView.as_view()),
    path("tables/<id:table_id>/stream", csrf_exempt(streams.table_stream)),
    path("tables/<id:table_id>/stream-tickets", tickets.TableStreamTicketView.as_view()),
    path("me", erasure.MeView.as_view()),
    path("me/stream", csrf_exempt(streams.player_stream)),
    path("me/stream-tickets", tickets.PlayerStreamTicketView.as_view()),
    path("me/turns", turns.MyTurnsView.as_view()),
    path("tables/<id:table_id>/hands", views.HandsView.as_view()),
    path("tables/<id:table_id>/export", exports.ExportView.as_view()),
    path("tables/<id:table_id>/transcript", exports.TranscriptView.as_view()),
    path("tables/<id:table_id>/hands/<id:number>", views.HandView.as_view()),
    path("tables/<id:table_id>/hands/<id:number>/review", review.HandReviewView.as_view()),
    path("tables/<id:table_id>/hint", hints.HintView.as_view()),
    path("tournaments", tournaments.TournamentsView.as_view()),
    path("tournaments/<id:tournament_id>", tournaments.TournamentView.as_view()),
    path("tournaments/<id:tournament_id>/standings", tournaments.StandingsView.as_view()),
    path("tournaments/<id:tournament_id>/tables", tournaments.TournamentTablesView.as_view()),
    path("webhooks", webhooks.WebhooksView.as_view()),
    path("webhooks/<id:webhook_id>", webhooks.WebhookView.as_view()),
    path("webhooks/<id:webhook_id>/secret", webhooks.WebhookSecretView.as_view()),
    path("webhooks/<id:webhook_id>/deliveries", webhooks.DeliveriesView.as_view()),
    path("webhooks/<id:webhook_id>/deliveries/<uuid:delivery_id>", webhooks.DeliveryView.as_view()),
    path(
        "webhooks/<id:webhook_id>/deliveries/<uuid:delivery_id>/redeliver", webhooks.RedeliverView.as_view()
    ),
    path("me/devices", push.MyDevicesView.as_view()),
    path("me/devices/<id:device_id>", push.MyDeviceView.as_view()),
    path("players/<id:player_id>/devices", push.PlayerDevicesView.as_view()),
    path("players/<id:player_id>/devices/<id:device_id>", push.PlayerDeviceView.as_view()),
    path("app/push", push.PushSettingsView.as_view()),
    path("app/push/fcm", push.FcmCredentialView.as_view()),
    path("app/push/apns", push.ApnsCredentialView.as_view()),
    path("push/vapid-key", push.VapidKeyView.as_view()),
    path("app", apps.AppView.as_view()),
    path("app/audit", audit.AuditView.as_view()),
    path("app/keys", keys.KeysView.as_view()),
    path("app/keys/<id:key_id>/revoke", keys.KeyRevokeView.as_view()),
    path("app/keys/<id:key_id>/rotate", keys.KeyRotateView.as_view()),
    path("tables/<id:table_id>/restore", apps.RestoreView.as_view()),
    path("bots", bots.BotsView.as_view()),
    path("bots/<id:bot_id>", bots.BotView.as_view()),
    path("bots/<id:bot_id>/secret", bots.BotSecretView.as_view()),
    path("me/exports", data_exports.MyExportsView.as_view()),
    path("players/<id:player_id>/exports", data_exports.PlayerExportsView.as_view()),
    path("exports/schema", data_exports.ExportSchemaView.as_view()),
    path("exports/<uuid:export_id>", data_exports.ExportView.as_view()),
    path("exports/<uuid:export_id>/document", data_exports.ExportDocumentView.as_view()),
    # Anything else under /api/ is a JSON 404 in the API's error shape, even with DEBUG on.
    re_path(r"^.*$", not_found),
]
