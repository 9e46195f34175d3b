"""Registers the games app with Django; starts the embedded worker when running without Redis."""

from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "games"
    verbose_name = "Hearts games"

    def ready(self) -> None:
        from games import embedded
        from games.push import credentials  # noqa: F401  (connects: an app's push keys go with it)
        from hearts_service import outages

        outages.pace_pool_reconnection()  # a pool reconnects within a quarter second of a restart

        if embedded.wanted():
            embedded.start()
