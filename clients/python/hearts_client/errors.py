"""The API's refusals as exceptions: a `HeartsError` subclass per kind, carrying the stable `code`."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx


class HeartsError(Exception):
    """A refusal of the API (or no answer at all): branch on `code`, never on `detail`."""

    def __init__(self, code: str, detail: str, status: int | None = None, body: dict[str, Any] | None = None):
        super().__init__(f"{status or '-'} {code}: {detail}")
        self.code, self.detail, self.status = code, detail, status
        self.body: dict[str, Any] = body if body is not None else {"code": code, "detail": detail}


class BadRequest(HeartsError):
    """400: the request is malformed (`invalid_input`, `invalid_card`, `invalid_version`, ...)."""


class AuthenticationError(HeartsError):
    """401: no credentials, or a key or token that is unknown, revoked (`key_revoked`) or expired
    (`key_expired`, `token_expired`)."""


class PermissionDenied(HeartsError):
    """403: the credentials may not do this (`missing_scope`: the key lacks the scope in `scope`)."""


class NotFound(HeartsError):
    """404: no such table, player or webhook, or not the caller's to see."""


class Conflict(HeartsError):
    """409: a conflict with the table's state (`already_seated`, `seat_taken`, `table_full`, ...)."""


class StaleVersion(Conflict):
    """409 `stale_version`: the table moved on since the version you sent; `version` is the current one."""

    @property
    def version(self) -> int | None:
        value = self.body.get("version")
        return value if isinstance(value, int) else None


class RulesError(HeartsError):
    """422: against the rules (`not_your_turn`, `must_follow_suit`, `bad_pass`, ...) or the table's state."""


class RateLimited(HeartsError):
    """429 `rate_limited`: over a limit; `retry_after` seconds until the next window."""

    retry_after: float | None = None


class QuotaExceeded(HeartsError):
    """429 `quota_exceeded`: one of the app's quotas is full (`body["quota"]`, `body["limit"]`).
    Not retried: it frees only when a resource goes away (a table ends, a stream closes...) or the
    operator raises the quota."""


class ServiceUnavailable(HeartsError):
    """503 `service_unavailable`: nothing changed; retry after `retry_after` seconds."""

    retry_after: float | None = None


class ServerError(HeartsError):
    """500 and any other 5xx: a bug of the server (or a proxy in front of it)."""


class TransportError(HeartsError):
    """No answer: the connection failed or timed out (code `transport_error`)."""


_BY_STATUS: dict[int, type[HeartsError]] = {
    400: BadRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: RulesError,
    429: RateLimited,
    503: ServiceUnavailable,
}


def retry_after(response: httpx.Response) -> float | None:
    """The `Retry-After` header in seconds (a number, or an HTTP date), or None."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_from(response: httpx.Response) -> HeartsError:
    """The exception for an error answer: its class by status (and `stale_version` by code)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("code"), str):  # not the API answering
        body = {"code": f"http_{response.status_code}", "detail": response.text[:200]}
    code, detail = str(body["code"]), str(body.get("detail", ""))
    if code == "stale_version":
        cls: type[HeartsError] = StaleVersion
    elif code == "quota_exceeded":
        cls = QuotaExceeded
    else:
        cls = _BY_STATUS.get(
            response.status_code, ServerError if response.status_code >= 500 else HeartsError
        )
    error = cls(code, detail, response.status_code, body)
    if isinstance(error, RateLimited | ServiceUnavailable):
        error.retry_after = retry_after(response)
    return error
