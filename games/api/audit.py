"""REST's audit trail: GET /app/audit, the calling app's configuration changes, newest first, paged
(docs/audit.md). Only an app key reads it, and only its own app's rows."""

from __future__ import annotations

from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import audit
from games.api.auth import IsPrincipal
from games.api.run import CURSOR, documented, paged, principal_of
from games.errors import Code

DENIED = "the audit trail is read with an app key"


class AuditEntryOut(F.Serializer):
    id = F.IntegerField()
    at = F.DateTimeField()
    actor_kind = F.ChoiceField(choices=["app_key", "admin", "operator"], help_text="Who made the change")
    actor = F.CharField(
        help_text="The app key (`key <id> <label>`), the admin user or the operator's command"
    )
    request_id = F.CharField(help_text="The request's X-Request-ID (empty outside an HTTP request)")
    action = F.CharField(help_text="The operation (createWebhook...), admin.add/change/delete or set_quota")
    target = F.CharField(help_text="What changed: webhook:3, bot:2, app:1, player:7...")
    changes = F.DictField(
        child=F.ListField(child=F.JSONField(), min_length=2, max_length=2),
        help_text='{"field": [before, after]} of the changed fields; a secret shows only "(secret)"',
    )
    hash = F.CharField(help_text="SHA-256 over prev_hash and the row's canonical JSON (docs/audit.md)")
    prev_hash = F.CharField(help_text="The hash of the row before it in the service's whole chain")


class AuditPageOut(F.Serializer):
    next = F.URLField(allow_null=True, help_text="The next page (null on the last)")
    previous = F.URLField(allow_null=True, help_text="The page before (null on the first)")
    results = AuditEntryOut(many=True, help_text="Newest first")


class AuditView(APIView):
    """GET /app/audit: the app's configuration changes, newest first, in cursor pages of 20."""

    permission_classes = [IsPrincipal]

    @documented(
        op="listAuditEntries",
        tag="apps",
        ok=AuditPageOut,
        params=[CURSOR],
        errors=(Code.app_key_required, Code.invalid_cursor),
    )
    def get(self, request: Request) -> Response:
        app = principal_of(request).require_app(DENIED)
        return paged(request, audit.rows_of(app.pk), audit.PAGES, audit.body)
