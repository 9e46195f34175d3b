"""The app's own settings (its retention period) and the restoring of its archived tables.

Each is declared once: REST serves it (games/api/apps.py) and GraphQL too (games/graphql/apps.py).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer

import games.records.archive as archive
from games import reads, services
from games.accounts import Scope
from games.audit import Audited
from games.errors import Code, ServiceError
from games.models import App
from games.operations.base import Access, Call, Operation
from games.operations.fields import EmptyIn, StrictIntegerField, StrictSerializer

RETENTION_MAX = 3650  # days: ten years
DENIED = "only an app key has app settings"


def app_body(app: App) -> dict[str, Any]:
    """An app as it reads its own settings: never its key."""
    return {"id": app.pk, "name": app.name, "retention_days": app.retention_days}


@extend_schema_serializer(component_name="UpdateApp")
class UpdateAppIn(StrictSerializer):
    """What an app may change about itself."""

    retention_days = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=RETENTION_MAX,
        help_text=f"0 to {RETENTION_MAX}: your finished tables move to the archive this many days after "
        "their end (0: at the next housekeeping after they are sealed); null: the service's default "
        "(ARCHIVE_AFTER_DAYS); left out: unchanged. Archived tables still answer every read",
    )


def _update(c: Call) -> dict[str, Any]:
    app = c.app
    if "retention_days" in c.input:
        app.retention_days = c["retention_days"]
        App.objects.filter(pk=app.pk).update(retention_days=app.retention_days)
    return app_body(app)


UPDATE_APP = Operation(
    name="updateApp",
    audited=Audited("app", App, ("retention_days",), app=True),
    scope=Scope.app_write,
    description="App key: change your app's settings: how many days your finished tables stay in the "
    "database before they move to the archive (docs/data.md). Answers the app after the change.",
    input=UpdateAppIn,
    access=Access.APP,
    denied=DENIED,
    run=_update,
)


def _restore(c: Call) -> services.Outcome:
    app = c.app
    table = reads.table_for(c.principal, c["table_id"])
    if table.app_id != app.pk:
        raise ServiceError("not_found", "no such table", kind="not_found")
    if not archive.restore(table.pk):
        raise ServiceError("not_archived", "this table is not archived", kind="conflict")
    return services.Outcome(reads.table_for(c.principal, table.pk))


RESTORE_TABLE = Operation(
    name="restoreTable",
    audited=Audited("table", id_in="table_id"),  # data retention: recorded too
    scope=Scope.tables_write,
    description="App key: bring one of your archived tables back into the database (sealed, as it was "
    "before archiving). Every read answers the same either way; a restored table stays for a whole "
    "retention period again. Answers the table.",
    input=EmptyIn,
    path=("table_id",),
    access=Access.APP,
    denied="only the table's app can restore it",
    run=_restore,
    errors=(Code.not_found, Code.not_archived),
)
