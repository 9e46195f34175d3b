"""The web client's notifications (/play/) in headless Chromium, against a real uvicorn server,
PostgreSQL, Redis, Celery workers (the push lane among them) and a local Web Push service
(tests/push/providers.py's FakeWebPush): "Tell me when it is my turn" subscribes with the service's
VAPID key and registers the browser as a device in the page's language; the service pushes the
player's turn, and the service worker (web/sw.js, active at /play/) shows it; a click on it brings the
player to the table; "Turn off" removes the device. Refused permission, a browser without push and
a device the service refuses register nothing.

Headless Chromium reaches no push service, so two parts of the browser are stood in for: the page's
PushManager hands out a FakeWebPush subscription (an init script, which records the key it was asked
to subscribe with), and the message the service sent, decrypted by FakeWebPush as only the browser
could, is delivered to the service worker as a real push event through the DevTools protocol
(ServiceWorker.deliverPushMessage, DevTools' own "Push" button). Nor can a notification be clicked
without a person: sw.js's click logic (openTable) is called in the worker, with the browser's
focus() and openWindow(), which need the person's click, recorded instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx
import pytest
from django.db import connection

from games.models import PushDevice
from games.push import texts
from tests.e2e.test_web_client import DESKTOP, _catalog, _chromium, _goto, _page
from tests.push.providers import FakeWebPush

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_postgres,
    pytest.mark.needs_redis,
    pytest.mark.django_db(transaction=True),  # the servers must see committed rows
]
ENV = {"PUSH_GRACE_SECONDS": "1", "BOT_PACE_MS": "0"}
CARD = re.compile(r"\b(?:10|[2-9TJQKA])[CDHS]\b")

# The page's PushManager, as a browser with a push service would answer, with FakeWebPush's
# subscription (SUBSCRIPTION); what the page asked for is kept in localStorage for the test to read.
PUSH_STUB = """
(() => {
  const made = SUBSCRIPTION;
  const text = (key) => {
    if (typeof key === "string") return key;
    const view = ArrayBuffer.isView(key) ? key : new DataView(key);
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    const base64 = btoa(String.fromCharCode(...bytes));
    return base64.replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  };
  const bytes = (key) => {
    const base64 = key.replace(/-/g, "+").replace(/_/g, "/");
    return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
  };
  const subscription = (key) => ({
    endpoint: made.endpoint,
    expirationTime: null,
    options: { userVisibleOnly: true, applicationServerKey: bytes(key) },
    toJSON: () => made,
    unsubscribe: async () => {
      localStorage.removeItem("stub.active");
      const ended = Number(localStorage.getItem("stub.unsubscribed") || 0) + 1;
      localStorage.setItem("stub.unsubscribed", String(ended));
      return true;
    },
  });
  PushManager.prototype.subscribe = async function (options) {
    const asked = JSON.parse(localStorage.getItem("stub.asked") || "[]");
    asked.push({ userVisibleOnly: options.userVisibleOnly, key: text(options.applicationServerKey) });
    localStorage.setItem("stub.asked", JSON.stringify(asked));
    localStorage.setItem("stub.active", text(options.applicationServerKey));
    return subscription(text(options.applicationServerKey));
  };
  PushManager.prototype.getSubscription = async function () {
    const key = localStorage.getItem("stub.active");
    return key ? subscription(key) : null;
  };
})();
"""
# The page's service worker registration: its scope, and its active worker's script and state.
REGISTRATION = """async () => {
  const r = await navigator.serviceWorker.getRegistration();
  return r && [r.scope, r.active && r.active.scriptURL, r.active && r.active.state];
}"""
NOTIFICATIONS = """async () => (await self.registration.getNotifications()).map(
  (n) => ({title: n.title, body: n.body, tag: n.tag, lang: n.lang, data: n.data, renotify: n.renotify}))"""
# sw.js's click logic with the browser's parts that need a person's click recorded, not done.
CLICK = """async (data) => {
  const done = [];
  WindowClient.prototype.focus = function () {
    done.push(["focus", this.url]);
    return Promise.resolve(this);
  };
  Clients.prototype.openWindow = async (url) => { done.push(["open", url]); return null; };
  await openTable(data);
  return done;
}"""


T = TypeVar("T")


def _db(read: Callable[[], T]) -> T:
    """A database read while the browser runs: Playwright's event loop holds this thread, where
    Django refuses synchronous queries, so the read runs in a thread of its own."""

    def run() -> T:
        try:
            return read()
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def _stub(subscription: dict[str, Any]) -> str:
    return PUSH_STUB.replace("SUBSCRIPTION", json.dumps(subscription))


def _wait(page: Any, check: Callable[[], Any], what: str, seconds: float = 20) -> Any:
    """Wait for `check()`, letting Playwright deliver its events meanwhile (page.wait_for_timeout)."""
    for _ in range(int(seconds * 10)):
        found = check()
        if found:
            return found
        page.wait_for_timeout(100)
    raise AssertionError(f"timed out waiting for {what}")


def _worker(context: Any, page: Any) -> Any:
    """The running service worker of /play/."""
    return _wait(
        page,
        lambda: next((w for w in context.service_workers if w.url.endswith("/play/sw.js")), None),
        "the service worker",
    )


def _deliver(context: Any, page: Any, base: str, payload: dict[str, Any]) -> None:
    """A push event with this payload at the service worker of /play/, as the push service's message
    would be after the browser decrypted it."""
    cdp = context.new_cdp_session(page)
    found: list[str] = []
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda e: found.extend(
            r["registrationId"]
            for r in e["registrations"]
            if r["scopeURL"] == f"{base}/play/" and not r["isDeleted"]
        ),
    )
    cdp.send("ServiceWorker.enable")
    _wait(page, lambda: found, "the registration of /play/")
    cdp.send(
        "ServiceWorker.deliverPushMessage",
        {"origin": base, "registrationId": found[0], "data": json.dumps(payload, ensure_ascii=False)},
    )
    cdp.detach()


def test_the_page_tells_the_player_when_it_is_their_turn(
    web: Callable[..., str], workers: Callable[..., object]
) -> None:
    with FakeWebPush() as fake:
        env = {**ENV, **fake.settings}
        base = web(**env)
        workers(queues="clocks,people,bots,push", beat=True, **env)
        api = f"{base}/api/v1"
        served = httpx.get(f"{api}/push/vapid-key").json()["public_key"]  # a guest's: the service's pair
        subscription = fake.subscription(server_key=served)  # takes only messages signed with that key
        words = _catalog("mi")
        problems: list[str] = []
        with _chromium() as browser:
            context = browser.new_context(viewport=DESKTOP)
            context.grant_permissions(["notifications"], origin=base)
            context.add_init_script(script=_stub(subscription))
            page = _page(context, problems, "Ada")
            _goto(page, f"{base}/play/")

            # In Māori: the button in its words; a click subscribes and registers the browser.
            page.select_option("#lang", "mi")
            page.wait_for_selector("html[lang='mi']")
            assert page.inner_text("#push-on") == words["push.ask"]
            page.fill("#name", "Ada")
            page.click("#push-on")
            page.wait_for_selector('#push[data-state="on"] #push-off:not([disabled])')
            assert page.inner_text("#push-state") == words["push.on"]
            assert page.inner_text("#push-off") == words["push.off"]
            assert page.is_hidden("#push-on")
            assert page.inner_text("#status") == words["push.done"]
            asked = page.evaluate("JSON.parse(localStorage.getItem('stub.asked'))")
            assert asked == [{"userVisibleOnly": True, "key": served}]  # exactly the served key, once

            # The device at the service: the guest the page made, with the subscription's endpoint and
            # keys, named after the browser, in the page's language.
            token = page.evaluate("localStorage.getItem('hearts.token')")
            auth = {"Authorization": f"Bearer {token}"}
            listed = httpx.get(f"{api}/me/devices", headers=auth).json()["results"]
            stored = page.evaluate("localStorage.getItem('hearts.push')")
            assert [(d["id"], d["kind"], d["label"]) for d in listed] == [
                (int(stored), "webpush", "Chrome · Linux")
            ]
            assert listed[0]["token_hint"] == subscription["endpoint"][-6:]
            device = _db(lambda: PushDevice.objects.get(pk=int(stored)))
            assert (device.token, device.keys, device.language) == (
                subscription["endpoint"],
                subscription["keys"],
                "mi",
            )

            # The service worker is active at /play/, served as JavaScript.
            _wait(page, lambda: page.evaluate(REGISTRATION)[2] == "activated", "the worker's activation")
            assert page.evaluate(REGISTRATION) == [f"{base}/play/", f"{base}/play/sw.js", "activated"]
            script = httpx.get(f"{base}/play/sw.js")
            assert script.headers["content-type"].startswith("text/javascript")

            # Ada leaves the page (no stream of hers is open, so the service pushes), and a table
            # against three bots starts: her pass is due, and the service pushes it.
            page.goto("about:blank")
            made = httpx.post(
                f"{api}/tables", json={"bots": {"1": "basic", "2": "basic", "3": "basic"}}, headers=auth
            )
            table = made.json()["id"]
            joined = httpx.post(f"{api}/tables/{table}/join", json={"position": 0}, headers=auth)
            assert joined.status_code == 200, joined.text
            _wait(page, lambda: fake.received, "the turn's push", 30)
            assert fake.problems == []
            payload = fake.received[0]["payload"]
            expected = texts.note("turn", table=table, language="mi", message="", phase="pass")
            assert payload == {
                "title": expected.title,
                "body": expected.body,
                "tag": f"table-{table}",
                "data": {"kind": "turn", "table": str(table), "message": payload["data"]["message"]},
                "lang": "mi",
            }
            assert (
                expected.title
                != texts.note("turn", table=table, language="en", message="", phase="pass").title
            )
            assert not CARD.search(json.dumps(payload))

            # The browser hands the message to the service worker: one notification, the table's.
            _deliver(context, page, base, payload)
            worker = _worker(context, page)
            shown = _wait(page, lambda: worker.evaluate(NOTIFICATIONS), "the notification")
            assert shown == [
                {
                    "title": expected.title,
                    "body": expected.body,
                    "tag": f"table-{table}",
                    "lang": "mi",
                    "data": payload["data"],
                    "renotify": True,
                }
            ]

            # Its click with no tab of the game open: a new one at the table's address.
            assert worker.evaluate(CLICK, payload["data"]) == [["open", f"{base}/play/?table={table}"]]
            # With the game open in the lobby: that tab, told to open the table, and it does.
            _goto(page, f"{base}/play/")
            worker = _worker(context, page)
            assert worker.evaluate(CLICK, payload["data"]) == [["focus", f"{base}/play/"]]
            page.wait_for_selector(f'#app[data-table="{table}"][data-my-turn="pass"]')

            # Turn off: the device is gone at the service and the subscription ended.
            page.wait_for_selector('#push[data-state="on"] #push-off:not([disabled])')
            page.click("#push-off")
            page.wait_for_selector('#push[data-state="off"] #push-on:not([disabled])')
            assert page.inner_text("#push-on") == words["push.ask"]
            assert page.inner_text("#status") == words["push.stopped"]
            assert httpx.get(f"{api}/me/devices", headers=auth).json()["results"] == []
            assert not _db(PushDevice.objects.exists)
            assert page.evaluate(
                "[localStorage.getItem('hearts.push'), localStorage.getItem('stub.unsubscribed')]"
            ) == [
                None,
                "1",
            ]
        assert problems == []


def test_nothing_is_registered_without_permission_push_or_a_device_the_service_takes(
    web: Callable[..., str],
) -> None:
    with FakeWebPush() as fake:
        base = web(
            WEBHOOK_ALLOW_PRIVATE_HOSTS="false"
        )  # as in production: FakeWebPush's http endpoint is refused
        served = httpx.get(f"{base}/api/v1/push/vapid-key").json()["public_key"]
        subscription = fake.subscription(server_key=served)
        problems: list[str] = []
        with _chromium() as browser:
            # Permission refused (the person said no), in Malay: the page says so, and asks nothing more.
            refused = browser.new_context(viewport=DESKTOP)
            refused.add_init_script(script=_stub(subscription))
            page = _page(refused, problems, "refused")
            _goto(page, f"{base}/play/")
            page.select_option("#lang", "ms")
            page.wait_for_selector("html[lang='ms']")
            words = _catalog("ms")
            assert page.inner_text("#push-on") == words["push.ask"]
            page.click("#push-on")
            page.wait_for_selector("#status[data-kind='warn']")
            assert page.inner_text("#status") == words["push.denied"]
            assert page.get_attribute("#push", "data-state") == "off" and page.is_visible("#push-on")
            stored = "['stub.asked', 'hearts.token', 'hearts.push'].map((k) => localStorage.getItem(k))"
            assert page.evaluate(stored) == [None, None, None]  # no subscription, no guest, no device

            # A browser without the Push API: no button at all.
            bare = browser.new_context(viewport=DESKTOP)
            bare.add_init_script(script="delete window.PushManager;")
            page = _page(bare, problems, "bare")
            _goto(page, f"{base}/play/")
            assert page.is_hidden("#push")

            # The service refuses the subscription: its error shown as the page shows every error,
            # and the subscription ended again.
            granted = browser.new_context(viewport=DESKTOP)
            granted.grant_permissions(["notifications"], origin=base)
            granted.add_init_script(script=_stub(subscription))
            page = _page(granted, problems, "granted")
            _goto(page, f"{base}/play/")
            page.click("#push-on")
            page.wait_for_selector("#status[data-kind='error']")
            assert page.inner_text("#status").startswith("invalid_device: ")
            page.wait_for_selector('#push[data-state="off"] #push-on:not([disabled])')
            assert page.evaluate("localStorage.getItem('stub.unsubscribed')") == "1"
            assert page.evaluate("localStorage.getItem('hearts.push')") is None
        assert not PushDevice.objects.exists()
        refusal = "console error: Failed to load resource: the server responded with a status of 400"
        assert [p for p in problems if not p.startswith(refusal)] == []
