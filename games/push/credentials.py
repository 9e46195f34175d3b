"""Each app's push provider keys (an FCM service account, an APNs token key) and its Web Push VAPID pair,
with their private parts encrypted at rest.

The private part of a credential is encrypted with MultiFernet over settings.PUSH_ENCRYPTION_KEYS
(Fernet keys: the first encrypts, every one decrypts), so a new key is put first, `manage.py
push_rotate_keys` re-encrypts every row with it, and the old key can then go. With no key set, one is
derived from SECRET_KEY. What an app may see (`public`) is stored apart from the secret, so no answer,
log line or admin page is ever built from a decrypted secret: only `credential_for`, which the sender
calls, decrypts. A refused key is `invalid_push_credential` naming its `field` and a `reason`; the
message never quotes the key.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from games.errors import ServiceError
from games.models import App, PushCredential
from games.prepared import Prepared

log = logging.getLogger(__name__)

PROVIDERS: tuple[str, ...] = ("fcm", "apns")  # what an app sets; webpush's pair is generated
SERVICE_SCOPE = 0  # the service's own VAPID pair: guests' browsers, callers without an app
PRIVATE_KEY_MAX = 10_000  # characters of a PEM private key (an RSA-4096 one is about 3,300)
RSA_BITS_MIN = 2048
_DERIVED_LABEL = b"hearts-push-encryption-key:"
_KEY_ID = re.compile(r"[A-Z0-9]{10}")  # APNs key id and team id: 10 upper-case letters and digits
_BUNDLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,254}")
_PROJECT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:_\-]{0,99}")  # also the legacy domain:project form
_EMAIL = re.compile(r"[^@\s/]{1,64}@[A-Za-z0-9.\-]{1,189}\.[A-Za-z]{2,63}")
_PRIVATE_KEY_ID = re.compile(r"[A-Za-z0-9_\-]{1,128}")
# What an app may see of each provider's credential (the rest is the secret, or nothing).
PUBLIC_FIELDS: dict[str, tuple[str, ...]] = {
    "fcm": ("project_id", "client_email", "private_key_id", "token_uri"),
    "apns": ("key_id", "team_id", "topic", "sandbox"),
    "webpush": ("public_key",),
}


class CredentialUnreadable(RuntimeError):
    """A stored secret no key of PUSH_ENCRYPTION_KEYS decrypts (a key was dropped before
    push_rotate_keys ran). The message names no secret."""


# -- encryption at rest ---------------------------------------------------------------------------


def _keys() -> list[bytes]:
    configured = [str(k).strip() for k in settings.PUSH_ENCRYPTION_KEYS if str(k).strip()]
    if configured:
        return [k.encode() for k in configured]
    digest = hashlib.sha256(_DERIVED_LABEL + str(settings.SECRET_KEY).encode()).digest()
    return [base64.urlsafe_b64encode(digest)]


def cipher() -> MultiFernet:
    """MultiFernet over the settings' keys (the first encrypts); a key that is not a Fernet key is
    a configuration error naming its position, never its value."""
    fernets = []
    for position, key in enumerate(_keys(), start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"PUSH_ENCRYPTION_KEYS: key {position} is not a Fernet key (32 url-safe base64-encoded "
                "bytes; make one with cryptography's Fernet.generate_key())"
            ) from None
    return MultiFernet(fernets)


def encrypt(text: str) -> str:
    """`text` encrypted with the first key (a Fernet token, ASCII)."""
    return cipher().encrypt(text.encode()).decode("ascii")


def decrypt(token: str) -> str:
    """The text of a Fernet token made by any of the keys; CredentialUnreadable otherwise."""
    try:
        return cipher().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise CredentialUnreadable(
            "a push credential cannot be decrypted with any of PUSH_ENCRYPTION_KEYS"
        ) from None


def rotate_all() -> int:
    """Re-encrypt every credential's secret with the first key (MultiFernet.rotate), in one
    transaction: all rows or none. How many rows; CredentialUnreadable (nothing changed) when a
    row is readable by no key."""
    crypt = cipher()
    with transaction.atomic():
        rows = list(PushCredential.objects.select_for_update().order_by("pk").values_list("pk", "secret"))
        for pk, secret in rows:
            try:
                rotated = crypt.rotate(secret.encode("ascii")).decode("ascii")
            except (InvalidToken, UnicodeError):
                raise CredentialUnreadable(
                    f"push credential {pk} cannot be decrypted with any of PUSH_ENCRYPTION_KEYS: nothing "
                    "was re-encrypted"
                ) from None
            # update(), not save(): re-encrypting changes nothing an app sees (updated_at stays)
            PushCredential.objects.filter(pk=pk).update(secret=rotated)
    return len(rows)


# -- the checks -----------------------------------------------------------------------------------


def _bad(field: str, reason: str, message: str) -> ServiceError:
    return ServiceError("invalid_push_credential", message, kind="malformed", field=field, reason=reason)


def _text(value: object, field: str, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _bad(field, "format", f"{field} must be {what}")
    return value


def _https_url(value: object, field: str) -> str:
    """An absolute https URL (http only with WEBHOOK_ALLOW_PRIVATE_HOSTS: a local server in tests
    and development) with a host and no credentials."""
    if not isinstance(value, str) or not value or len(value) > 2000 or any(c.isspace() for c in value):
        raise _bad(field, "malformed", f"{field} must be an https URL")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise _bad(field, "malformed", f"{field} must be an https URL") from None
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and settings.WEBHOOK_ALLOW_PRIVATE_HOSTS):
        raise _bad(field, "scheme", f"{field} must be an https URL")
    if not parts.hostname or parts.username is not None or parts.password is not None or parts.fragment:
        raise _bad(field, "malformed", f"{field} must be an https URL with a host and nothing else")
    return value


def _private_key(pem: object, field: str) -> PrivateKeyTypes:
    """An unencrypted PEM private key (the message never quotes it)."""
    if not isinstance(pem, str) or not pem.strip() or len(pem) > PRIVATE_KEY_MAX:
        raise _bad(
            field, "malformed", f"{field} must be a PEM private key of at most {PRIVATE_KEY_MAX} characters"
        )
    try:
        return serialization.load_pem_private_key(pem.strip().encode(), password=None)
    except TypeError:
        raise _bad(field, "encrypted", f"{field} must not be protected by a password") from None
    except (ValueError, UnsupportedAlgorithm):
        raise _bad(field, "malformed", f"{field} cannot be read as a PEM private key") from None


def _pem(key: PrivateKeyTypes) -> str:
    """The key as unencrypted PKCS#8 PEM, the form every sender reads."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def check_fcm(service_account: object) -> tuple[dict[str, Any], str]:
    """An FCM service account's JSON object (as Google's console downloads it): (what may be shown,
    its private key as PEM). Its other fields are not kept."""
    if not isinstance(service_account, Mapping):
        raise _bad("service_account", "malformed", "service_account is the service account's JSON object")
    sa = service_account
    if sa.get("type") != "service_account":
        raise _bad("service_account.type", "type", 'service_account.type must be "service_account"')
    public = {
        "project_id": _text(sa.get("project_id"), "service_account.project_id", _PROJECT_ID, "a project id"),
        "client_email": _text(
            sa.get("client_email"), "service_account.client_email", _EMAIL, "the account's email address"
        ),
        "private_key_id": _text(
            sa.get("private_key_id"), "service_account.private_key_id", _PRIVATE_KEY_ID, "the key's id"
        ),
        "token_uri": _https_url(sa.get("token_uri"), "service_account.token_uri"),
    }
    key = _private_key(sa.get("private_key"), "service_account.private_key")
    if not isinstance(key, rsa.RSAPrivateKey):
        raise _bad("service_account.private_key", "type", "service_account.private_key must be an RSA key")
    if key.key_size < RSA_BITS_MIN:
        raise _bad(
            "service_account.private_key", "size", f"the RSA key must have {RSA_BITS_MIN} bits or more"
        )
    return public, _pem(key)


def check_apns(
    *, key_id: object, team_id: object, topic: object, sandbox: object, private_key: object
) -> tuple[dict[str, Any], str]:
    """An APNs token key (the .p8 file's EC P-256 key, its 10-character key id, the 10-character
    team id) and the app's bundle id as its topic: (what may be shown, the key as PEM)."""
    public = {
        "key_id": _text(key_id, "key_id", _KEY_ID, "the key's 10-character id (letters and digits)"),
        "team_id": _text(team_id, "team_id", _KEY_ID, "the 10-character team id (letters and digits)"),
        "topic": _text(topic, "topic", _BUNDLE_ID, "the app's bundle id"),
        "sandbox": sandbox,
    }
    if not isinstance(sandbox, bool):
        raise _bad("sandbox", "format", "sandbox must be true or false")
    key = _private_key(private_key, "private_key")
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise _bad("private_key", "type", "private_key must be the .p8 file's EC key")
    if not isinstance(key.curve, ec.SECP256R1):
        raise _bad("private_key", "curve", "private_key must be a P-256 key, as APNs token keys are")
    return public, _pem(key)


# -- storing and reading --------------------------------------------------------------------------


def _store(scope: int, provider: str, public: dict[str, Any], secret: str) -> PushCredential:
    """Insert or replace one credential; a racing first insert of the same one is found again."""
    defaults = {"public": public, "secret": encrypt(secret)}
    for _ in range(2):
        try:
            with transaction.atomic():
                row, _created = PushCredential.objects.update_or_create(
                    scope=scope, provider=provider, defaults=defaults
                )
                return row
        except IntegrityError:
            continue  # another request inserted it between our read and our insert: update it now
    raise AssertionError("unreachable: the second attempt finds the row the first one met")


def set_fcm(app: App, service_account: object) -> PushCredential:
    """Set (or replace) the app's FCM service account."""
    public, secret = check_fcm(service_account)
    return _store(app.pk, "fcm", public, secret)


def set_apns(
    app: App, *, key_id: object, team_id: object, topic: object, sandbox: object, private_key: object
) -> PushCredential:
    """Set (or replace) the app's APNs token key."""
    public, secret = check_apns(
        key_id=key_id, team_id=team_id, topic=topic, sandbox=sandbox, private_key=private_key
    )
    return _store(app.pk, "apns", public, secret)


def delete(app: App, provider: str) -> None:
    """Remove the app's credential for `provider` (fcm or apns); not_found when it has none."""
    deleted, _ = PushCredential.objects.filter(scope=app.pk, provider=provider).delete()
    if not deleted:
        raise ServiceError("not_found", f"no {provider} credential is set", kind="not_found")


@receiver(post_delete, sender=App)
def _app_deleted(sender: type[App], instance: App, **kwargs: Any) -> None:
    """An app's keys go with it (a credential names its app by id, as the service's own has none)."""
    PushCredential.objects.filter(scope=instance.pk).exclude(scope=SERVICE_SCOPE).delete()


def vapid(scope: int) -> PushCredential:
    """The VAPID pair of a scope (an app's id, or SERVICE_SCOPE), made on first need: an EC P-256
    key whose public half is the browser's applicationServerKey. Two first needs at once make one
    pair (the unique constraint keeps the first; the other reads it)."""
    row = PushCredential.objects.filter(scope=scope, provider="webpush").first()
    if row is not None:
        return row
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    public = {"public_key": base64.urlsafe_b64encode(point).decode("ascii").rstrip("=")}
    try:
        with transaction.atomic():
            return PushCredential.objects.create(
                scope=scope, provider="webpush", public=public, secret=encrypt(_pem(key))
            )
    except IntegrityError:
        return PushCredential.objects.get(scope=scope, provider="webpush")


def vapid_public_key(scope: int) -> str:
    """The public VAPID key of a scope: base64url of the uncompressed point, without padding."""
    return str(vapid(scope).public["public_key"])


def scope_of(app: App | None) -> int:
    """The scope whose keys push to a caller: its app's, or the service's own for guests."""
    return app.pk if app is not None else SERVICE_SCOPE


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _shown(row: PushCredential) -> dict[str, Any]:
    fields = PUBLIC_FIELDS[row.provider]
    return {**{name: row.public.get(name) for name in fields}, "updated_at": _iso(row.updated_at)}


def settings_body(app: App) -> dict[str, Any]:
    """What an app sees of its push settings: each provider's public fields and when it was set
    (null: not set), and its VAPID public key (made now if it had none). Never a secret."""
    rows = {row.provider: row for row in PushCredential.objects.filter(scope=app.pk, provider__in=PROVIDERS)}
    return {
        "fcm": _shown(rows["fcm"]) if "fcm" in rows else None,
        "apns": _shown(rows["apns"]) if "apns" in rows else None,
        "webpush": {"public_key": vapid_public_key(app.pk)},
    }


_ROW = Prepared(
    lambda scope, provider: PushCredential.objects.filter(scope=scope, provider=provider)[:1], [int, str]
)
# What a row's secret decrypts to, per process, by the row's id and contents and the keys it is
# decrypted with (a changed or rotated row, or other keys, is another entry): the lane sends one
# push per turn, and reading and decrypting the same secret each time was a tenth of its CPU. The
# oldest of OPENED_KEPT goes first.
OPENED_KEPT = 64
_opened: dict[tuple[int, str, str, tuple[bytes, ...]], dict[str, Any]] = {}
_opened_lock = threading.Lock()


def credential_for(scope: int, provider: str) -> dict[str, Any] | None:
    """What a sender needs to push for `scope` with `provider`: the public fields merged with the
    decrypted private key, under the names the providers read (FCM: project_id, client_email,
    private_key, private_key_id, token_uri; APNs: key_id, team_id, topic, sandbox, private_key;
    Web Push: public_key, private_key, subject). None when the scope has no such credential, or
    its secret cannot be decrypted (logged, without the secret). Web Push's pair is made on need."""
    row: PushCredential | None = _ROW.first(scope, provider)
    if row is None and provider == "webpush":
        row = vapid(scope)
    if row is None:
        return None
    cached = (row.pk, row.secret, json.dumps(row.public, sort_keys=True), tuple(_keys()))
    merged = _opened.get(cached)
    if merged is None:
        merged = _open(row)
        if merged is None:
            return None
        with _opened_lock:
            _opened[cached] = merged
            while len(_opened) > OPENED_KEPT:
                _opened.pop(next(iter(_opened)))
    merged = dict(merged)
    if provider == "webpush":
        merged["subject"] = settings.PUSH_VAPID_SUBJECT
    return merged


def _open(row: PushCredential) -> dict[str, Any] | None:
    try:
        private_key = decrypt(row.secret)
    except CredentialUnreadable:
        log.error(
            "push credential %s (%s of scope %s) cannot be decrypted with PUSH_ENCRYPTION_KEYS",
            row.pk,
            row.provider,
            row.scope,
        )
        return None
    merged = {name: row.public.get(name) for name in PUBLIC_FIELDS[row.provider]}
    merged["private_key"] = private_key
    return merged
