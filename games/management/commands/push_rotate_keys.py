"""`manage.py push_rotate_keys`: re-encrypt every push credential with the first of PUSH_ENCRYPTION_KEYS."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from games.push import credentials


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored push credential (FCM, APNs, VAPID) with the first key of "
        "PUSH_ENCRYPTION_KEYS; once it has run, the older keys can be removed from the setting."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            count = credentials.rotate_all()
        except credentials.CredentialUnreadable as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"re-encrypted {count} push credential(s) with the first of PUSH_ENCRYPTION_KEYS")
