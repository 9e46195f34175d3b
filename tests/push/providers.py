"""Local servers that speak FCM HTTP v1, APNs (HTTP/2 over TLS) and Web Push, and check what they
receive as the provider would: no provider is reachable from the test machines. Each is a context
manager listening on 127.0.0.1 (a free port) in a thread of the test process, usable from any
test; `settings` holds the PUSH_* settings (or a worker's environment) that point the service at it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ipaddress
import json
import logging
import re
import secrets
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import http_ece
import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from hypercorn.asyncio import serve
from hypercorn.config import Config

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case, as HTTP/2 sends them
    body: bytes
    http_version: str
    client: tuple[str, int]  # the peer's address: one per connection


@dataclass
class Answer:
    status: int
    body: Any = None  # JSON; a str is sent as an HTML page; None: an empty body
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False  # a message the provider accepted: `delay` holds its answer


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


class _QuickTlsCloseLoop(asyncio.SelectorEventLoop):
    """A loop whose TLS servers wait 0.1 s, not 30, for a client's close_notify: an idle client
    connection in a pool (httpx's, shared by the test process) never sends one, so hypercorn's
    shutdown would otherwise wait out asyncio's default for each; that wait's end is no error."""

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:  # type: ignore[override]
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_shutdown_timeout", 0.1)
        return await super().create_server(*args, **kwargs)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, TimeoutError) and "SSL shutdown" in str(exc):
            return
        super().call_exception_handler(context)


class FakeProvider:
    """What the three have in common: a hypercorn server in a thread, the accepted requests in
    `received`, the refused ones' reasons in `problems`, and the controls `fail_next` and `delay`."""

    tls = False

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.problems: list[str] = []  # why requests were refused, as the provider would refuse them
        self._failures: list[tuple[int, float | str | None, str | None]] = []
        self._delay = 0.0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._released: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._directory = tempfile.TemporaryDirectory(prefix="fake-push-")
        self.port = 0
        self.requests = 0  # every request that reached it, accepted or not

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def settings(self) -> dict[str, str]:
        """The settings (or a worker's environment variables) that send to this server."""
        raise NotImplementedError

    def fail_next(
        self, status: int, retry_after: float | str | None = None, reason: str | None = None
    ) -> None:
        """Answer the next message with `status` (and a Retry-After header), as the provider words
        that error (`reason`: the provider's error code, else its usual one for the status)."""
        with self._lock:
            self._failures.append((status, retry_after, reason))

    def delay(self, seconds: float) -> None:
        """Hold the answer to each accepted message this long (it is in `received` at once, as at a
        provider that has it): a sender killed meanwhile never learns that it was delivered."""
        self._delay = seconds

    def _next_failure(self) -> tuple[int, float | str | None, str | None] | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def _refuse(self, why: str) -> None:
        with self._lock:
            self.problems.append(why)

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.received.append(entry)

    def handle(self, request: Request) -> Answer:
        raise NotImplementedError

    # The server.

    def start(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(100)  # connections wait in the backlog until hypercorn accepts them
        self.port = sock.getsockname()[1]
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]  # hypercorn takes the listening socket over
        config.errorlog = log
        config.accesslog = None
        config.graceful_timeout = 0.5
        if self.tls:
            config.certfile, config.keyfile = self._server_certificate()
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(config, started), name=type(self).__name__, daemon=True
        )
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def _run(self, config: Config, started: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop, self._released = asyncio.Event(), asyncio.Event()
            started.set()
            await serve(self._app, config, shutdown_trigger=self._stop.wait, mode="asgi")

        with asyncio.Runner(loop_factory=_QuickTlsCloseLoop) as runner:
            runner.run(main())

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)  # held answers go at once
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
            assert not self._thread.is_alive(), f"{type(self).__name__} did not stop"
        self._directory.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        request = Request(
            method=scope["method"],
            path=scope["path"],
            headers={k.decode().lower(): v.decode() for k, v in scope["headers"]},
            body=body,
            http_version=scope["http_version"],
            client=tuple(scope.get("client") or ("", 0)),  # type: ignore[arg-type]
        )
        with self._lock:
            self.requests += 1
        try:
            answer = self.handle(request)
        except Exception as exc:  # a bug of the fake: say it in the test's failure, not silently
            log.exception("fake provider failed")
            self._refuse(f"fake error: {exc!r}")
            answer = Answer(500, {"error": "fake provider error"})
        if answer.hold and self._delay > 0 and self._released is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._released.wait(), self._delay)
        headers = {**answer.headers}
        if isinstance(answer.body, str):
            payload = answer.body.encode()
            headers.setdefault("content-type", "text/html; charset=UTF-8")
        elif answer.body is not None:
            payload = json.dumps(answer.body).encode()
            headers.setdefault("content-type", "application/json")
        else:
            payload = b""
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.lower().encode(), str(v).encode()) for k, v in headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def _server_certificate(self) -> tuple[str, str]:
        """A CA (written to `ca_file`) and the server's certificate for 127.0.0.1 it signed."""
        directory = Path(self._directory.name)
        now = dt.datetime.now(dt.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Fake push provider CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        (directory / "cert.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        (directory / "key.pem").write_text(_pem(key))
        return str(directory / "cert.pem"), str(directory / "key.pem")


# FCM HTTP v1 ----------------------------------------------------------------------------------

FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
FCM_MESSAGE_FIELDS = {
    "name",
    "data",
    "notification",
    "android",
    "webpush",
    "apns",
    "fcm_options",
    "token",
    "topic",
    "condition",
}
FCM_RESERVED_DATA = ("from", "notification", "message_type")
RPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
FCM_ERROR_CODE = {
    400: "INVALID_ARGUMENT",
    403: "SENDER_ID_MISMATCH",
    404: "UNREGISTERED",
    429: "QUOTA_EXCEEDED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}  # a 401 is Google's own UNAUTHENTICATED (a bad access token), without an FcmError


def fcm_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """An error answer as FCM words it: a google.rpc.Status with an FcmError detail."""
    error: dict[str, Any] = {"code": status, "message": message, "status": RPC_STATUS.get(status, "UNKNOWN")}
    code = code if code is not None else FCM_ERROR_CODE.get(status)
    if code:
        error["details"] = [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}
        ]
    return {"error": error}


class FakeFCM(FakeProvider):
    """FCM HTTP v1 and Google's OAuth 2.0 token endpoint for one service account."""

    def __init__(self, project_id: str = "hearts-test", token_lifetime: int = 3599) -> None:
        super().__init__()
        self.project_id = project_id
        self.token_lifetime = token_lifetime
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._key_id = secrets.token_hex(20)
        self._email = f"firebase-adminsdk-test@{project_id}.iam.gserviceaccount.com"
        self._tokens: dict[str, float] = {}  # access token -> unix expiry
        self._unregistered: set[str] = set()
        self.token_requests = 0

    @property
    def settings(self) -> dict[str, str]:
        return {"PUSH_FCM_URL": self.url}

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    @property
    def service_account(self) -> dict[str, str]:
        """The account's JSON as the Firebase console downloads it, its token_uri this server."""
        return {
            "type": "service_account",
            "project_id": self.project_id,
            "private_key_id": self._key_id,
            "private_key": _pem(self._key),
            "client_email": self._email,
            "client_id": "1" + "".join(secrets.choice("0123456789") for _ in range(20)),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{self._email}",
            "universe_domain": "googleapis.com",
        }

    @staticmethod
    def registration_token() -> str:
        """A token shaped as FCM's are (an instance id, a colon, an opaque part)."""
        return f"{b64url(secrets.token_bytes(16))}:APA91b{b64url(secrets.token_bytes(105))}"

    def unregister(self, token: str) -> None:
        """The app was uninstalled: FCM answers 404 UNREGISTERED for this token from now on."""
        self._unregistered.add(token)

    def revoke_tokens(self) -> None:
        """Every access token issued so far stops working (FCM answers 401 UNAUTHENTICATED)."""
        with self._lock:
            self._tokens.clear()

    def handle(self, request: Request) -> Answer:
        if request.method == "POST" and request.path == "/token":
            return self._token(request)
        match = re.fullmatch(r"/v1/projects/([^/]+)/messages:send", request.path)
        if request.method == "POST" and match:
            return self._send(request, match.group(1))
        self._refuse(f"{request.method} {request.path}: no such endpoint")
        # Google's front end answers an unknown path with its HTML page, not a google.rpc error.
        return Answer(404, "<!DOCTYPE html><title>Error 404 (Not Found)!!1</title><p>That's an error.")

    def _token(self, request: Request) -> Answer:
        with self._lock:
            self.token_requests += 1
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return self._grant_refused("invalid_request", "Bad Request: not form-encoded")
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return self._grant_refused(
                "unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type')}"
            )
        assertion = form.get("assertion", "")
        try:
            header = jwt.get_unverified_header(assertion)
            claims = jwt.decode(
                assertion,
                self._key.public_key(),
                algorithms=["RS256"],
                audience=self.token_uri,
                issuer=self._email,
                options={"require": ["iss", "aud", "iat", "exp", "scope"]},
            )
        except jwt.InvalidAudienceError:
            return self._grant_refused("invalid_grant", "Invalid JWT: Failed audience check.")
        except jwt.InvalidIssuerError:
            return self._grant_refused("invalid_grant", "Invalid grant: account not found")
        except jwt.PyJWTError as exc:
            return self._grant_refused("invalid_grant", f"Invalid JWT Signature. ({exc})")
        if header.get("kid") != self._key_id:
            return self._grant_refused("invalid_grant", "Invalid JWT Signature. (unknown kid)")
        now = time.time()
        if not claims["iat"] - 300 <= now or claims["exp"] - claims["iat"] > 3600:
            return self._grant_refused(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.",
            )
        if FCM_SCOPE not in str(claims["scope"]).split():
            return self._grant_refused("invalid_scope", "The firebase.messaging scope is missing.")
        token = f"ya29.{b64url(secrets.token_bytes(96))}"
        with self._lock:
            self._tokens[token] = now + self.token_lifetime
        return Answer(200, {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"})

    def _grant_refused(self, error: str, description: str) -> Answer:
        self._refuse(f"token: {error}: {description}")
        return Answer(400, {"error": error, "error_description": description})

    def _send(self, request: Request, project: str) -> Answer:
        authorization = request.headers.get("authorization", "")
        token = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else ""
        with self._lock:
            expiry = self._tokens.get(token)
        if expiry is None or expiry <= time.time():
            self._refuse("send: no valid access token")
            return Answer(
                401,
                fcm_error(
                    401,
                    "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                    "login cookie or other valid authentication credential.",
                ),
                {"www-authenticate": 'Bearer realm="https://accounts.google.com/"'},
            )
        if project != self.project_id:
            self._refuse(f"send: project {project} is not the account's")
            return Answer(403, fcm_error(403, "Permission 'cloudmessaging.messages.create' denied", code=""))
        try:
            body = json.loads(request.body)
            wrong = self._message_problem(body)
        except ValueError:
            wrong = "Invalid JSON payload received."
        if wrong:
            self._refuse(f"send: {wrong}")
            return Answer(400, fcm_error(400, wrong))
        message = body["message"]
        failure = self._next_failure()
        if failure is not None:
            status, wait, code = failure
            headers = {"retry-after": str(wait)} if wait is not None else {}
            return Answer(status, fcm_error(status, f"fail_next {status}", code), headers)
        if message["token"] in self._unregistered:
            return Answer(404, fcm_error(404, "Requested entity was not found."))
        self._record(message)
        name = f"projects/{self.project_id}/messages/0:{time.time_ns()}%{secrets.token_hex(8)}"
        return Answer(200, {"name": name}, hold=True)

    @staticmethod
    def _message_problem(body: Any) -> str:
        """What FCM would refuse the body for (400 INVALID_ARGUMENT), or ''."""
        if not isinstance(body, dict) or set(body) != {"message"} or not isinstance(body["message"], dict):
            return 'Invalid JSON payload received. Expected {"message": {...}}.'
        message = body["message"]
        unknown = set(message) - FCM_MESSAGE_FIELDS
        if unknown:
            return f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r} at 'message'."
        if not isinstance(message.get("token"), str) or not message["token"]:
            return "The registration token is not a valid FCM registration token"
        if any(k in message for k in ("topic", "condition")):
            return "Exactly one of token, topic or condition must be set."
        notification = message.get("notification")
        if not isinstance(notification, dict) or set(notification) - {"title", "body", "image"}:
            return "Invalid value at 'message.notification'."
        if not all(isinstance(notification.get(k), str) and notification[k] for k in ("title", "body")):
            return "message.notification needs a title and a body (strings)"
        data = message.get("data", {})
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()
        ):
            return "Invalid value at 'message.data': every value must be a string"
        for key in data:
            if key in FCM_RESERVED_DATA or key.startswith(("google", "gcm")):
                return f"Invalid data payload key: {key}"
        android = message.get("android", {})
        if not isinstance(android, dict):
            return "Invalid value at 'message.android'."
        if "ttl" in android and not re.fullmatch(r"\d+(\.\d{1,9})?s", str(android["ttl"])):
            return f"Invalid value at 'message.android.ttl' ({android['ttl']})"
        if android.get("priority", "NORMAL") not in ("NORMAL", "HIGH", "normal", "high"):
            return "Invalid value at 'message.android.priority'"
        if "collapse_key" in android and not isinstance(android["collapse_key"], str):
            return "Invalid value at 'message.android.collapse_key'"
        apns = message.get("apns", {})
        headers = apns.get("headers", {}) if isinstance(apns, dict) else None
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            return "Invalid value at 'message.apns.headers': values must be strings"
        webpush = message.get("webpush", {})
        headers = webpush.get("headers", {}) if isinstance(webpush, dict) else None
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            return "Invalid value at 'message.webpush.headers': values must be strings"
        return ""


# APNs -----------------------------------------------------------------------------------------

APNS_REASON = {
    400: "BadTopic",
    403: "InvalidProviderToken",
    404: "BadPath",
    410: "Unregistered",
    413: "PayloadTooLarge",
    429: "TooManyRequests",
    500: "InternalServerError",
    503: "ServiceUnavailable",
}
TOKEN_REFRESH_MIN = 20 * 60  # Apple: a connection's provider token may change once in 20 minutes
TOKEN_MAX_AGE = 60 * 60  # and is expired an hour after its iat


class FakeAPNs(FakeProvider):
    """APNs's provider API over HTTP/2 and TLS, for one signing key and one app (topic)."""

    tls = True

    def __init__(self, topic: str = "com.example.hearts") -> None:
        super().__init__()
        self.topic = topic
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._key_id = "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(10))
        self._team_id = "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(10))
        self.dead_tokens: set[str] = set()
        self.provider_tokens: list[str] = []  # the authorization JWT of every accepted message
        self._connections: dict[tuple[str, int], tuple[str, float]] = {}  # peer -> (JWT, since)
        self._expired: set[str] = set()

    @property
    def ca_file(self) -> str:
        return str(Path(self._directory.name) / "ca.pem")

    @property
    def settings(self) -> dict[str, str]:
        return {"PUSH_APNS_URL": self.url, "PUSH_CA_FILE": self.ca_file}

    @property
    def key(self) -> dict[str, str]:
        """The .p8 key as an app gives it: its id, the team, the app's bundle id, the PEM."""
        return {
            "key_id": self._key_id,
            "team_id": self._team_id,
            "topic": self.topic,
            "private_key": _pem(self._key),
        }

    @staticmethod
    def device_token() -> str:
        return secrets.token_hex(32)

    def expire_provider_tokens(self) -> None:
        """The provider tokens seen so far are too old (as with a sender's clock behind Apple's):
        answered 403 ExpiredProviderToken."""
        with self._lock:
            self._expired.update(self.provider_tokens)
            self._expired.update(jwt_ for jwt_, _ in self._connections.values())

    def handle(self, request: Request) -> Answer:
        apns_id = request.headers.get("apns-id") or str(uuid.uuid4())

        def refuse(status: int, reason: str) -> Answer:
            self._refuse(f"{status} {reason}")
            return Answer(status, {"reason": reason}, {"apns-id": apns_id})

        if request.http_version != "2":
            return refuse(505, f"HTTP/{request.http_version}: APNs speaks HTTP/2 only")
        match = re.fullmatch(r"/3/device/([0-9a-fA-F]*)", request.path)
        if request.method != "POST":
            return refuse(405, "MethodNotAllowed")
        if match is None:
            return (
                refuse(404, "BadPath")
                if not request.path.startswith("/3/device/")
                else refuse(400, "BadDeviceToken")
            )
        token = match.group(1)
        if not token:
            return refuse(400, "MissingDeviceToken")
        refused = self._authorization_problem(request)
        if refused:
            return refuse(*refused)
        headers = request.headers
        if not headers.get("apns-topic"):
            return refuse(400, "MissingTopic")
        if headers["apns-topic"] != self.topic:
            return refuse(400, "BadTopic")
        if headers.get("apns-push-type") != "alert":
            return refuse(400, "InvalidPushType")
        if headers.get("apns-priority", "10") not in ("1", "5", "10"):
            return refuse(400, "BadPriority")
        if not re.fullmatch(r"\d+", headers.get("apns-expiration", "0")):
            return refuse(400, "BadExpirationDate")
        if len(headers.get("apns-collapse-id", "").encode()) > 64:
            return refuse(400, "BadCollapseId")
        try:
            uuid.UUID(apns_id)
            if not re.fullmatch(r"[0-9a-fA-F-]{36}", apns_id):
                raise ValueError(apns_id)
        except ValueError:
            return refuse(400, "BadMessageId")
        if not request.body:
            return refuse(400, "PayloadEmpty")
        if len(request.body) > 4096:
            return refuse(413, "PayloadTooLarge")
        try:
            payload = json.loads(request.body)
        except ValueError:
            return refuse(400, "BadPayload")  # Apple answers 400 for a body that is not JSON
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return refuse(400, "BadPayload")
        failure = self._next_failure()
        if failure is not None:
            status, wait, reason = failure
            extra = {"retry-after": str(wait)} if wait is not None else {}
            body: dict[str, Any] = {"reason": reason or APNS_REASON.get(status, "BadRequest")}
            if status == 410:
                body["timestamp"] = int(time.time() * 1000)
            return Answer(status, body, {"apns-id": apns_id, **extra})
        if token in self.dead_tokens:
            return Answer(
                410, {"reason": "Unregistered", "timestamp": int(time.time() * 1000)}, {"apns-id": apns_id}
            )
        bearer = headers["authorization"].split(" ", 1)[1]
        with self._lock:
            self.provider_tokens.append(bearer)
        self._record(
            {
                "token": token,
                "payload": payload,
                "headers": {k: v for k, v in headers.items() if k.startswith("apns-")},
                "http_version": request.http_version,
            }
        )
        return Answer(200, None, {"apns-id": apns_id, "apns-unique-id": str(uuid.uuid4())}, hold=True)

    def _authorization_problem(self, request: Request) -> tuple[int, str] | None:
        """Apple's checks of the provider token: ES256 by this key (kid), of its team (iss), issued
        less than an hour ago, and not replaced on its connection within 20 minutes."""
        authorization = request.headers.get("authorization", "")
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer" or not value:
            return 403, "MissingProviderToken"
        try:
            header = jwt.get_unverified_header(value)
            claims = jwt.decode(
                value,
                self._key.public_key(),
                algorithms=["ES256"],
                options={"require": ["iss", "iat"], "verify_iat": False},
            )
        except jwt.PyJWTError:
            return 403, "InvalidProviderToken"
        if (
            header.get("alg") != "ES256"
            or header.get("kid") != self._key_id
            or claims["iss"] != self._team_id
        ):
            return 403, "InvalidProviderToken"
        now = time.time()
        if value in self._expired or now - float(claims["iat"]) > TOKEN_MAX_AGE:
            return 403, "ExpiredProviderToken"
        if float(claims["iat"]) > now + 60:
            return 403, "InvalidProviderToken"
        with self._lock:
            previous = self._connections.get(request.client)
            if previous is None or previous[0] != value:
                if (
                    previous is not None
                    and previous[0] not in self._expired
                    and now - previous[1] < TOKEN_REFRESH_MIN
                ):
                    return 429, "TooManyProviderTokenUpdates"
                self._connections[request.client] = (value, now)
        return None


# Web Push -------------------------------------------------------------------------------------

URGENCIES = ("very-low", "low", "normal", "high")
VAPID_MAX_LIFETIME = 24 * 3600


@dataclass
class _Subscription:
    key: ec.EllipticCurvePrivateKey
    auth: bytes
    server_key: str | None  # the applicationServerKey the browser subscribed with, if any
    gone: bool = False


class FakeWebPush(FakeProvider):
    """A push service (RFC 8030) holding browsers' subscriptions: it checks VAPID (RFC 8292) and
    decrypts each message (RFC 8291, aes128gcm) as only the browser could."""

    def __init__(self) -> None:
        super().__init__()
        self._subscriptions: dict[str, _Subscription] = {}

    @property
    def settings(self) -> dict[str, str]:
        return {"WEBHOOK_ALLOW_PRIVATE_HOSTS": "true"}  # its endpoints are on 127.0.0.1

    def subscription(self, server_key: str | None = None) -> dict[str, Any]:
        """A new subscription as PushManager.subscribe() gives it (PushSubscription.toJSON());
        with `server_key` (the VAPID public key) only that key's signed messages are accepted."""
        key = ec.generate_private_key(ec.SECP256R1())
        auth = secrets.token_bytes(16)
        path = f"/push/{b64url(secrets.token_bytes(24))}"
        self._subscriptions[path] = _Subscription(key, auth, server_key)
        point = key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": self.url + path,
            "expirationTime": None,
            "keys": {"p256dh": b64url(point), "auth": b64url(auth)},
        }

    def gone(self, endpoint: str) -> None:
        """The browser unsubscribed: 410 Gone from now on."""
        self._subscriptions[urlsplit(endpoint).path].gone = True

    def handle(self, request: Request) -> Answer:
        def refuse(status: int, why: str) -> Answer:
            self._refuse(f"{status} {why}")
            return Answer(status, {"code": status, "errno": 0, "error": why, "message": why})

        subscription = self._subscriptions.get(request.path)
        if request.method != "POST":
            return refuse(405, "method not allowed")
        if subscription is None:
            return refuse(404, "no such subscription")
        if subscription.gone:
            return Answer(
                410, {"code": 410, "errno": 106, "error": "Gone", "message": "Request did not validate"}
            )
        vapid = self._vapid_problem(request, subscription)
        if vapid:
            return refuse(*vapid)
        headers = request.headers
        if not re.fullmatch(r"\d+", headers.get("ttl", "")):
            return refuse(400, "missing or malformed TTL header")
        urgency = headers.get("urgency", "normal")
        if urgency not in URGENCIES:
            return refuse(400, f"bad Urgency {urgency}")
        topic = headers.get("topic")
        if topic is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", topic):
            return refuse(400, f"bad Topic {topic}")
        if headers.get("content-encoding") != "aes128gcm":
            return refuse(415, f"unsupported Content-Encoding {headers.get('content-encoding')}")
        if len(request.body) > 4096:
            return refuse(413, "payload too large")
        try:
            plain = http_ece.decrypt(
                request.body, private_key=subscription.key, auth_secret=subscription.auth, version="aes128gcm"
            )
            payload = json.loads(plain)
        except (http_ece.ECEException, ValueError) as exc:
            return refuse(400, f"cannot decrypt: {exc}")
        failure = self._next_failure()
        if failure is not None:
            status, wait, reason = failure
            extra = {"retry-after": str(wait)} if wait is not None else {}
            if 300 <= status < 400:  # back to itself: a sender that follows it is seen to deliver
                extra["location"] = self.url + request.path
            return Answer(status, {"code": status, "errno": 999, "error": reason or "fail_next"}, extra)
        self._record(
            {
                "endpoint": self.url + request.path,
                "payload": payload,
                "ttl": int(headers["ttl"]),
                "urgency": headers.get("urgency"),
                "topic": topic,
            }
        )
        location = f"{self.url}/message/{uuid.uuid4()}"
        return Answer(201, None, {"location": location, "ttl": headers["ttl"]}, hold=True)

    def _vapid_problem(self, request: Request, subscription: _Subscription) -> tuple[int, str] | None:
        """RFC 8292's checks: `vapid t=<JWT>,k=<key>`, the JWT signed by k (ES256) for this
        origin, expiring within 24 hours, with a contact; k the subscription's server key."""
        scheme, _, rest = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "vapid":
            return 401, "missing VAPID authorization"
        parts = dict(part.strip().split("=", 1) for part in rest.split(",") if "=" in part)
        if "t" not in parts or "k" not in parts:
            return 401, "VAPID authorization without t or k"
        try:
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(parts["k"]))
            claims = jwt.decode(
                parts["t"],
                public,
                algorithms=["ES256"],
                audience=self.url,
                options={"require": ["aud", "exp", "sub"]},
            )
        except (ValueError, jwt.PyJWTError) as exc:
            return 401, f"bad VAPID token: {exc}"
        if float(claims["exp"]) > time.time() + VAPID_MAX_LIFETIME:
            return 401, "VAPID token valid for more than 24 hours"
        if not re.match(r"(mailto:|https://)\S+", str(claims["sub"])):
            return 401, "VAPID sub is not a mailto: or https: contact"
        if subscription.server_key is not None and parts["k"].rstrip("=") != subscription.server_key.rstrip(
            "="
        ):
            return 403, "VAPID key is not the one the subscription was made with"
        return None
