"""GraphQL's audit trail: `auditEntries`, the calling app's configuration changes, newest first, paged
as every list is (games/graphql/pages.py; docs/audit.md). Only an app key reads it, only its rows."""

from __future__ import annotations

import json
from typing import Any

import graphene

from games import audit
from games.graphql import pages
from games.graphql.base import app_of

DENIED = "the audit trail is read with an app key"


class AuditEntry(graphene.ObjectType):
    """One configuration change: who, when, in which request, and what changed."""

    id = graphene.Int(required=True)
    at = graphene.String(required=True, description="When (ISO 8601, UTC)")
    actor_kind = graphene.String(required=True, description="app_key, admin or operator")
    actor = graphene.String(
        required=True, description="The app key (`key <id> <label>`), admin user or command"
    )
    request_id = graphene.String(required=True, description="The request's X-Request-ID (may be empty)")
    action = graphene.String(
        required=True, description="The operation (createWebhook...), admin.<verb> or set_quota"
    )
    target = graphene.String(required=True, description="What changed: webhook:3, bot:2, app:1...")
    changes = graphene.String(
        required=True, description='JSON {"field": [before, after]}; a secret shows only "(secret)"'
    )
    hash = graphene.String(required=True, description="SHA-256 over prevHash and the row's canonical JSON")
    prev_hash = graphene.String(required=True, description="The hash of the row before it in the whole chain")


class AuditEntryConnection(graphene.relay.Connection):
    class Meta:
        node = AuditEntry


def _node(row: Any) -> dict[str, Any]:
    body = audit.body(row)
    return {**body, "changes": json.dumps(body["changes"], sort_keys=True)}


class AuditQueries(graphene.ObjectType):
    """The Query field of the audit trail (a base of games.graphql.schema.Query)."""

    audit_entries = graphene.Field(
        AuditEntryConnection,
        required=True,
        **pages.args(),
        description="App key: your app's configuration changes, newest first (docs/audit.md)",
    )

    def resolve_audit_entries(
        root: Any, info: Any, first: int | None = None, after: str | None = None
    ) -> Any:
        app = app_of(info, DENIED)
        return pages.connection(AuditEntryConnection, audit.rows_of(app.pk), audit.PAGES, _node, first, after)
