"""`manage.py check_audit_chain`: walk the audit trail's hash chain (games/audit.py) and exit
non-zero naming the first row that was changed, or that follows a deleted one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from games import audit


class Command(BaseCommand):
    help = (
        "Check the audit trail's hash chain: every row's hash is SHA-256 over the previous row's hash and "
        "its own content. Exits 1 naming the first row that does not follow (changed, or after a deleted "
        "row)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        checked, broken = audit.verify()
        if broken is not None:
            raise CommandError(
                f"audit chain broken at row {broken.row_id}: {broken.reason} ({checked} rows read)"
            )
        self.stdout.write(f"audit chain intact: {checked} rows")
