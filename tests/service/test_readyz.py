"""/healthz says the process is alive without the database; /readyz says the database and Redis answer."""

import socket

import pytest
from django.db import OperationalError, connections
from django.test import Client


def closed_port() -> int:
    """A loopback port nothing listens on: bind one, note it, close it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_healthz_needs_no_database(client: Client) -> None:
    # No django_db mark: pytest-django raises on any database access, so this proves healthz touches none.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_without_redis_checks_the_database(client: Client, settings) -> None:
    settings.REDIS_URL = ""
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "redis": "not_configured"}}


@pytest.mark.django_db
def test_readyz_with_redis_up(client: Client, settings, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "redis": "ok"}}


@pytest.mark.django_db
def test_readyz_with_redis_down_is_503_naming_redis(client: Client, settings) -> None:
    url = f"redis://:hunter2secret@127.0.0.1:{closed_port()}/0"
    settings.REDIS_URL = url
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"database": "ok", "redis": "unavailable"}}
    body = response.content.decode()
    assert "hunter2secret" not in body and "127.0.0.1" not in body


@pytest.mark.django_db
def test_readyz_with_database_down_is_503_naming_the_database(client: Client, settings, monkeypatch) -> None:
    settings.REDIS_URL = ""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection to server at 10.0.0.5 failed: password authentication failed")

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "unavailable", "redis": "not_configured"},
    }
    assert "10.0.0.5" not in response.content.decode()
    # Liveness does not follow the database down: the process is fine, restarting it would not help.
    assert client.get("/healthz").status_code == 200
    monkeypatch.undo()  # the database back before the end-of-test checks (tests/live.py) read it


@pytest.mark.django_db
def test_probes_are_exempt_from_the_ssl_redirect(client: Client, settings) -> None:
    settings.REDIS_URL = ""
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/metrics").status_code != 301  # scraped pod by pod over plain HTTP
    other = client.get("/api/v1/tables")
    assert other.status_code == 301
    assert other["Location"].startswith("https://")
    # A TLS-terminating proxy's X-Forwarded-Proto marks the request secure, so no redirect loop.
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client.get("/api/v1/tables", headers={"X-Forwarded-Proto": "https"}).status_code != 301
