"""REST: a player's data export (docs/privacy.md): asked for by the player (POST me/exports) or their
app (POST players/{id}/exports), read as a job (GET exports/{id}) and downloaded once done (GET
exports/{id}/document); its JSON Schema at GET exports/schema."""

from __future__ import annotations

import functools
from typing import Any

from django.http import HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers as F
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from games import operations as ops
from games.api.auth import IsPrincipal
from games.api.run import documented, perform, principal_of
from games.contracts.openapi import openapi_document
from games.contracts.player_export_schema import export_schema
from games.errors import Code
from games.services import exports


class ExportJobOut(F.Serializer):
    """An export job: pending until its document is made, then done until it expires."""

    id = F.UUIDField(help_text="The job's id: GET exports/{id}")
    player = F.IntegerField(help_text="Whose data")
    status = F.ChoiceField(choices=["pending", "done", "failed"])
    size = F.IntegerField(allow_null=True, help_text="Bytes of the document, once done")
    error = F.CharField(allow_null=True, help_text="Why it failed (status failed); null otherwise")
    created_at = F.DateTimeField()
    finished_at = F.DateTimeField(allow_null=True)
    expires_at = F.DateTimeField(allow_null=True, help_text="The document and the job are deleted then")
    document = F.CharField(
        allow_null=True, help_text="The document's URL path (GET it with the same credentials) once done"
    )


_PENDING = {202: OpenApiResponse(ExportJobOut, "Pending: a background task makes it; GET exports/{id}")}


def _created(request: Request, operation: ops.Operation, **path: Any) -> HttpResponseBase:
    """201 with the job when its document was made at once, 202 while it is pending."""
    response = perform(request, operation, 201, **path)
    if isinstance(response, Response) and response.data["status"] == "pending":
        response.status_code = 202
    return response


class MyExportsView(APIView):
    """POST /me/exports (player token): an export of all your data."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_MY_EXPORT, tag="privacy", ok=ExportJobOut, status=201, more=_PENDING)
    def post(self, request: Request) -> HttpResponseBase:
        return _created(request, ops.CREATE_MY_EXPORT)


class PlayerExportsView(APIView):
    """POST /players/{id}/exports (app key): an export of one of the app's players' data."""

    permission_classes = [IsPrincipal]

    @documented(ops.CREATE_PLAYER_EXPORT, tag="privacy", ok=ExportJobOut, status=201, more=_PENDING)
    def post(self, request: Request, player_id: int) -> HttpResponseBase:
        return _created(request, ops.CREATE_PLAYER_EXPORT, player_id=player_id)


class ExportView(APIView):
    """GET /exports/{id}: an export job, for the player it is about or their app (404 for anyone else)."""

    permission_classes = [IsPrincipal]

    @documented(op="getExport", tag="privacy", ok=ExportJobOut, errors=(Code.not_found,))
    def get(self, request: Request, export_id: str) -> Response:
        return Response(exports.job_body(exports.job_of(principal_of(request), export_id)))


class ExportDocumentView(APIView):
    """GET /exports/{id}/document: the export's JSON document (format hearts-player-export/1), for
    the player it is about or their app; 422 not_finished while it is pending."""

    permission_classes = [IsPrincipal]

    @documented(
        op="downloadExport",
        tag="privacy",
        ok=OpenApiResponse(OpenApiTypes.OBJECT, "The document (docs/schemas/player-export.schema.json)"),
        errors=(Code.not_found, (Code.not_finished, 422)),
    )
    def get(self, request: Request, export_id: str) -> HttpResponse:
        data = exports.document_bytes(principal_of(request), export_id)
        response = HttpResponse(data, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="hearts-export-{export_id}.json"'
        response["Cache-Control"] = "private, no-store"
        return response


@functools.cache
def _schema() -> dict[str, Any]:
    return export_schema(openapi_document())


class ExportSchemaView(APIView):
    """GET /exports/schema (any caller, none needed): the JSON Schema of the export document."""

    permission_classes = [AllowAny]

    @documented(
        op="getExportSchema",
        tag="privacy",
        ok=OpenApiResponse(OpenApiTypes.OBJECT, "JSON Schema 2020-12 of the document"),
        auth=False,
        errors=(Code.authentication_failed,),
    )
    def get(self, request: Request) -> JsonResponse:
        return JsonResponse(_schema(), json_dumps_params={"indent": 2})
