"""Django admin for tables and everything stored about them; the move log is read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

import games.records.archive as archives
from games import accounts
from games.models import (
    App,
    Hand,
    IdempotentRequest,
    Move,
    Player,
    PlayerToken,
    ScoreRow,
    Seat,
    Table,
    WebhookDelivery,
    WebhookEndpoint,
)
from games.services import exports


@admin.register(App)
class AppAdmin(admin.ModelAdmin[App]):
    """Adding an app here issues its API key: shown once in the confirmation message, stored hashed."""

    list_display = ("id", "name", "created_at")
    fields = ("name",)
    search_fields = ("name",)

    def save_model(self, request: HttpRequest, obj: App, form: ModelForm[App], change: bool) -> None:
        if not change:
            key, obj.key_hash = accounts.new_secret(accounts.APP_PREFIX)
            super().save_model(request, obj, form, change)
            messages.warning(request, f"API key for {obj.name} (shown only now, copy it): {key}")
            return
        super().save_model(request, obj, form, change)

    actions = ["export_data", "delete_data"]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        """Without Django's bulk delete: an app is deleted with its files (delete_data)."""
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Export the selected apps' data (JSON Lines, no secrets)")
    def export_data(self, request: HttpRequest, queryset: QuerySet[App]) -> HttpResponse:
        response = HttpResponse(content_type="application/x-ndjson; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="hearts-apps.jsonl"'
        for app in queryset.order_by("pk"):
            exports.write_app_export(app, response)
        return response

    @admin.action(description="Delete the selected apps and all their data", permissions=["delete"])
    def delete_data(self, request: HttpRequest, queryset: QuerySet[App]) -> TemplateResponse | None:
        """Asks first, as Django's delete does; once confirmed, deletes each app with its archive
        and export files (games.services.exports.delete_app)."""
        if request.POST.get("post") == "yes":
            ids = list(queryset.values_list("pk", flat=True))
            for app_id in ids:
                exports.delete_app(app_id)
            self.message_user(request, f"{len(ids)} apps deleted with all their data")
            return None
        rows = [
            {"app": app, "players": app.players.count(), "tables": app.tables.count()}
            for app in queryset.order_by("pk")
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Delete apps and all their data?",
            "rows": rows,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/games/app/delete_app_data.html", context)


@admin.register(PlayerToken)
class PlayerTokenAdmin(admin.ModelAdmin[PlayerToken]):
    """Tokens are issued through the API; here they can be seen (hash only) and revoked."""

    list_display = ("id", "player", "created_at", "revoked_at")
    list_filter = ("revoked_at",)
    readonly_fields = ("player", "token_hash", "created_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[PlayerToken]) -> None:
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


@admin.register(IdempotentRequest)
class IdempotentRequestAdmin(admin.ModelAdmin[IdempotentRequest]):
    list_display = ("owner", "key", "status", "created_at")
    readonly_fields = ("owner", "key", "fingerprint", "status", "body", "created_at")


class SeatInline(admin.TabularInline[Seat, Table]):
    model = Seat
    extra = 0


@admin.register(Table)
class TableAdmin(admin.ModelAdmin[Table]):
    list_display = ("id", "status", "hand_number", "version", "created_at", "archived_at")
    list_filter = ("status",)
    readonly_fields = (
        "version",
        "seed",
        "state",
        "hand_number",
        "deadline",
        "finished_at",
        "archived_at",
        "archive",
    )
    inlines = [SeatInline]
    actions = ["archive", "restore"]

    @admin.action(description="Archive the selected finished tables (whatever their age)")
    def archive(self, request: HttpRequest, queryset: QuerySet[Table]) -> None:
        done = sum(archives.archive(pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done} tables archived (the others are not over, or archived already)")

    @admin.action(description="Restore the selected archived tables")
    def restore(self, request: HttpRequest, queryset: QuerySet[Table]) -> None:
        done = sum(archives.restore(pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done} tables restored (the others were not archived)")


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin[Player]):
    list_display = ("id", "name", "created_at")
    search_fields = ("name",)


@admin.register(Hand)
class HandAdmin(admin.ModelAdmin[Hand]):
    list_display = ("table", "number", "pass_direction", "finished")


@admin.register(ScoreRow)
class ScoreRowAdmin(admin.ModelAdmin[ScoreRow]):
    list_display = ("table", "hand_number", "position", "points", "total")


@admin.register(Move)
class MoveAdmin(admin.ModelAdmin[Move]):
    """Append-only: the admin can read the log but never add, change or delete a move."""

    list_display = ("table", "seq", "kind", "position", "created_at")
    list_filter = ("kind",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Move | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Move | None = None) -> bool:
        return False


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin[WebhookEndpoint]):
    """Endpoints are registered through the API (which shows the secret once); here they can be
    seen and disabled. The secret's salt is not shown."""

    list_display = ("id", "app", "url", "active", "created_at")
    list_filter = ("active",)
    fields = ("app", "url", "event_types", "description", "active")
    readonly_fields = ("app", "event_types")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin[WebhookDelivery]):
    """Deliveries are read-only: their attempts are recorded by the sender."""

    list_display = ("uuid", "endpoint", "table", "seq", "status", "attempts", "last_status_code")
    list_filter = ("status",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WebhookDelivery | None = None) -> bool:
        return False
