"""`BotServer`: a `Bot` served over HTTP as a bot the app brings (docs/bots-byo.md): each turn the
service POSTs is verified with the Standard Webhooks library and answered with `bot.act(view, legal)`.

    from hearts_client import Bot
    from hearts_client.botserver import BotServer

    BotServer(Bot(), secret="whsec_...").serve(port=8080)  # then register its URL: client.register_bot

The signature is checked by `standardwebhooks` (pip install 'hearts-client[server]'), the reference
library, never by code of our own: a request that does not verify (wrong secret, tampered, older
than five minutes) gets 401 and no move. A bot that answers late gets the basic bot's move instead,
so `act` should return well within the endpoint's `timeout_ms`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from hearts_client.bot import Bot
from hearts_client.models import BotTurn

log = logging.getLogger("hearts_client.botserver")
BODY_TYPE = "bot.turn"
MAX_BODY = 1_000_000  # a turn is a few kilobytes


class BotServer:
    """Answers the service's turns for one bot endpoint with `bot`'s decisions."""

    def __init__(self, bot: Bot, secret: str) -> None:
        from standardwebhooks import Webhook  # the optional `server` extra

        self.bot = bot
        self._webhook = Webhook(secret)

    def answer(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """The HTTP status and JSON body answering one request: 200 and the action, 401 when the
        signature does not verify, 400 when the body is not a turn."""
        from standardwebhooks import WebhookVerificationError

        try:
            turn = self._webhook.verify(body, {k.lower(): v for k, v in headers.items()})
        except WebhookVerificationError as exc:
            log.warning("refused a request: %s", exc)
            return 401, b'{"error":"signature"}'
        if not isinstance(turn, dict) or turn.get("type") != BODY_TYPE or not turn.get("legal_actions"):
            return 400, b'{"error":"not a turn"}'
        decided = self.act(cast(BotTurn, turn))
        return 200, json.dumps(decided).encode()

    def act(self, turn: BotTurn) -> Any:
        """The action for a turn: the bot's `act` on the seat's view and legal actions."""
        return self.bot.act(turn["view"], turn["legal_actions"])

    def make_server(self, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
        """An HTTP server answering every POST with `answer` (port 0: any free port)."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    status, out = 413, b'{"error":"too large"}'
                else:
                    status, out = owner.answer(self.rfile.read(length), dict(self.headers.items()))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug(format, *args)

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        return server

    def serve(self, host: str = "127.0.0.1", port: int = 8080) -> None:
        """Serve until interrupted."""
        with self.make_server(host, port) as server:
            server.serve_forever()

    def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
        """Serve from a background thread; returns the server (`shutdown()` it) and its URL."""
        server = self.make_server(host, port)
        threading.Thread(target=server.serve_forever, name="hearts-bot-server", daemon=True).start()
        address = server.server_address
        return server, f"http://{address[0]!s}:{address[1]}/"
