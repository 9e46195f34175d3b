"""ASGI entry point for asynchronous application servers such as uvicorn."""

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hearts_service.settings")
# A request runs in a thread of its own beside the event loop that serves the streams; it gives the
# interpreter lock back at each database or Redis round trip and must get it back promptly after.
# Python's default switch interval (5 ms) made a thread wait up to 5 ms per round trip whenever the
# loop was busy: a play's answer took 90 ms at the median under load (bench/README.md, load.py).
sys.setswitchinterval(float(os.environ.get("GIL_SWITCH_INTERVAL", "0.0005")))

application = get_asgi_application()
