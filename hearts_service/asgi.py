"""ASGI entry point for asynchronous application servers such as uvicorn."""

import gc
import os
import sys
from typing import Any

from django.core.asgi import get_asgi_application

from hearts_service.env import env_float

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# A request runs in a thread of its own beside the event loop that serves the streams; it gives the
# interpreter lock back at each database or Redis round trip and must get it back promptly after.
# Python's default switch interval (5 ms) made a thread wait up to 5 ms per round trip whenever the
# loop was busy: a play's answer took 90 ms at the median under load (bench/HISTORY.md, load.py).
sys.setswitchinterval(env_float("GIL_SWITCH_INTERVAL", 0.0005, minimum=0.000001, maximum=1.0))

django_application = get_asgi_application()
POLICY_VIOLATION = 1008  # WebSocket close code: a WebSocket at a path that serves none

from games.graphql import socket  # noqa: E402  (imports models: after get_asgi_application set Django up)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """HTTP (and lifespan) to Django; WebSockets at /graphql/ to GraphQL over WebSocket
    (games/graphql/socket.py); any other WebSocket path is refused (403 at the handshake)."""
    if scope["type"] == "websocket":
        if scope.get("path", "").rstrip("/") == "/graphql":
            await socket.application(scope, receive, send)
        else:
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})
        return
    await django_application(scope, receive, send)


# The cycle collector, tuned for a process holding thousands of open streams: with Python's default
# thresholds it ran a full collection over all their objects every few seconds, and one event
# delivery in a hundred waited 0.2 to 0.6 s for it (bench/streams.py: commit-to-client p99 350 ms
# with 2,000 streams, 8.5 ms with these thresholds). Reference counting still frees almost everything
# at once; the collector only looks for cycles, now after 50,000 allocations instead of 700, and
# rarely over the old objects. The objects of the code loaded so far are never scanned again.
gc.freeze()
gc.set_threshold(50_000, 50, 50)
