"""Django admin for tables and everything stored about them; the move log is read-only."""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import Model, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

import games.records.archive as archives
from games import accounts, audit, quotas
from games.models import (
    ApiKey,
    App,
    AppQuota,
    AuditEntry,
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

M = TypeVar("M", bound=Model)


class AuditedAdmin(admin.ModelAdmin[M]):
    """A model whose admin saves and deletions go into the audit trail (games/audit.py): the
    admin user, the request id and the changed fields before and after (secrets hidden)."""

    def _record(self, request: HttpRequest, verb: str, obj: M, before: dict[str, Any] | None) -> None:
        after = audit.snapshot(obj) if verb != "delete" else None
        app_id = obj.pk if isinstance(obj, App) else getattr(obj, "app_id", None)
        audit.append(
            app_id=app_id,
            actor_kind="admin",
            actor=request.user.get_username() if request.user.is_authenticated else "admin",
            action=f"admin.{verb}",
            target=f"{obj._meta.model_name}:{obj.pk}",
            changes=audit.diff(before, after),
        )

    def _before(self, obj: M) -> dict[str, Any] | None:
        return audit.snapshot(type(obj)._default_manager.filter(pk=obj.pk).first()) if obj.pk else None

    def save_model(self, request: HttpRequest, obj: M, form: Any, change: bool) -> None:
        with transaction.atomic():
            before = self._before(obj) if change else None
            super().save_model(request, obj, form, change)
            self._record(request, "change" if change else "add", obj, before)

    def delete_model(self, request: HttpRequest, obj: M) -> None:
        with transaction.atomic():
            before, pk = self._before(obj), obj.pk
            super().delete_model(request, obj)
            obj.pk = pk  # the row is gone; the audit row names it
            self._record(request, "delete", obj, before)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[M]) -> None:
        with transaction.atomic():
            for obj in queryset:
                self._record(request, "delete", obj, self._before(obj))
            super().delete_queryset(request, queryset)


@admin.register(App)
class AppAdmin(AuditedAdmin[App]):
    """Adding an app here issues its first API key (every scope): shown once in the confirmation
    message, stored hashed. Its keys are listed, and revoked, under API keys."""

    list_display = ("id", "name", "created_at")
    fields = ("name",)
    search_fields = ("name",)

    def save_model(self, request: HttpRequest, obj: App, form: ModelForm[App], change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            key = accounts.key_create(obj, name="first key", scopes=[accounts.Scope.admin])[1]
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
            for app in queryset.order_by("pk"):
                before = self._before(app)
                exports.delete_app(app.pk)
                self._record(request, "delete", app, before)
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


@admin.register(ApiKey)
class ApiKeyAdmin(AuditedAdmin[ApiKey]):
    """Keys are issued through the API (or with the app, above); here they can be seen (prefix and
    hash only, never the key) and revoked."""

    list_display = ("id", "app", "name", "prefix", "created_at", "expires_at", "revoked_at", "last_used_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    readonly_fields = (
        "app",
        "name",
        "prefix",
        "key_hash",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "replaced_by",
    )
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        n = 0
        for key in queryset.filter(revoked_at__isnull=True).order_by("pk"):
            with transaction.atomic():  # one audit row a key, with the revocation
                before = self._before(key)
                key.revoked_at = timezone.now()
                key.save(update_fields=["revoked_at"])
                self._record(request, "revoke", key, before)
                n += 1
        self.message_user(request, f"{n} keys revoked")


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
class WebhookEndpointAdmin(AuditedAdmin[WebhookEndpoint]):
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


@admin.register(AppQuota)
class AppQuotaAdmin(AuditedAdmin[AppQuota]):
    """An app's own quotas (games/quotas.py): a field left empty keeps the setting's default."""

    list_display = ("app", *quotas.QUOTAS, "updated_at")
    fields = ("app", *quotas.QUOTAS)
    search_fields = ("app__name",)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin[AuditEntry]):
    """The audit trail, read-only: rows are only appended (games/audit.py); `manage.py
    check_audit_chain` checks that none was changed or deleted."""

    list_display = ("id", "at", "app_id", "actor_kind", "actor", "action", "target", "request_id")
    list_filter = ("actor_kind", "action")
    search_fields = ("actor", "target", "request_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False
