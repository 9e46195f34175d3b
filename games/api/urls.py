"""Routes of the REST API, mounted at /api/v1/."""

from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from games import streams
from games.api import views, webhooks

urlpatterns = [
    path("guests", views.GuestsView.as_view()),
    path("players", views.PlayersView.as_view()),
    path("players/<int:player_id>/tokens", views.PlayerTokensView.as_view()),
    path("tokens/revoke", views.TokenRevokeView.as_view()),
    path("tables", views.TablesView.as_view()),
    path("tables/<int:table_id>", views.TableView.as_view()),
    path("tables/<int:table_id>/join", views.JoinView.as_view()),
    path("tables/<int:table_id>/leave", views.LeaveView.as_view()),
    path("tables/<int:table_id>/bots", views.BotsView.as_view()),
    path("tables/<int:table_id>/start", views.StartView.as_view()),
    path("tables/<int:table_id>/abandon", views.AbandonView.as_view()),
    path("tables/<int:table_id>/actions", views.ActionsView.as_view()),
    path("tables/<int:table_id>/back", views.BackView.as_view()),
    path("tables/<int:table_id>/scoresheet", views.ScoresheetView.as_view()),
    path("tables/<int:table_id>/moves", views.MovesView.as_view()),
    path("tables/<int:table_id>/events", views.EventsView.as_view()),
    path("tables/<int:table_id>/stream", csrf_exempt(streams.table_stream)),
    path("me/stream", csrf_exempt(streams.player_stream)),
    path("tables/<int:table_id>/hands", views.HandsView.as_view()),
    path("tables/<int:table_id>/hands/<int:number>", views.HandView.as_view()),
    path("webhooks", webhooks.WebhooksView.as_view()),
    path("webhooks/<int:webhook_id>", webhooks.WebhookView.as_view()),
    path("webhooks/<int:webhook_id>/secret", webhooks.WebhookSecretView.as_view()),
    path("webhooks/<int:webhook_id>/deliveries", webhooks.DeliveriesView.as_view()),
    path("webhooks/<int:webhook_id>/deliveries/<uuid:delivery_id>", webhooks.DeliveryView.as_view()),
    path(
        "webhooks/<int:webhook_id>/deliveries/<uuid:delivery_id>/redeliver", webhooks.RedeliverView.as_view()
    ),
]
