"""REST endpoints of an app's own settings (GET and PATCH /app: its retention period) and of restoring
one of its archived tables (POST /tables/{id}/restore); docs/data.md."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from rest_framework import serializers as F
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games.api import schemas
from games.api.auth import IsPrincipal
from games.api.run import documented, perform, principal_of
from games.errors import Code
from games.operations.apps import DENIED, RETENTION_MAX, app_body

TAG = "apps"


class AppSettingsOut(F.Serializer):
    id = F.IntegerField()
    name = F.CharField()
    retention_days = F.IntegerField(
        allow_null=True,
        min_value=0,
        max_value=RETENTION_MAX,
        help_text="Days your finished tables stay in the database before the archive (null: the "
        "service's default, ARCHIVE_AFTER_DAYS)",
    )


class AppView(APIView):
    """GET /app (app key): the calling app's settings. PATCH: change them."""

    permission_classes = [IsPrincipal]

    @documented(op="getApp", tag=TAG, ok=AppSettingsOut, errors=(Code.app_key_required,))
    def get(self, request: Request) -> Response:
        return Response(app_body(principal_of(request).require_app(DENIED)))

    @documented(ops.UPDATE_APP, tag=TAG, ok=AppSettingsOut)
    def patch(self, request: Request) -> HttpResponseBase:
        return perform(request, ops.UPDATE_APP)


class RestoreView(APIView):
    """POST /tables/{id}/restore (app key): bring an archived table of the app back into the database."""

    permission_classes = [IsPrincipal]

    @documented(ops.RESTORE_TABLE, tag="tables", ok=schemas.TableOut)
    def post(self, request: Request, table_id: int) -> HttpResponseBase:
        return perform(request, ops.RESTORE_TABLE, table_id=table_id)
