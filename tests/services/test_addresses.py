"""Outgoing calls reach public addresses only: every IPv6 form embedding a private IPv4 address is
refused (a public embedded one is not), and a call connects to the address its check resolved,
with the URL's host name in Host, SNI and the certificate check, so DNS rebinding cannot move it."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from rest_framework.test import APIClient

from games import webhooks
from games.accounts import app_create
from games.push import devices
from games.webhooks import addresses

# IPv6 forms that carry 127.0.0.1 (or another private IPv4 address) to where a network routes them
EMBEDDING_PRIVATE = {
    "IPv4-mapped": "::ffff:127.0.0.1",
    "IPv4-translated": "::ffff:0:7f00:1",
    "IPv4-compatible": "::127.0.0.1",
    "IPv4-compatible, private": "::10.0.0.1",
    "NAT64": "64:ff9b::7f00:1",
    "NAT64 of a private network": "64:ff9b::a9fe:a9fe",  # 169.254.169.254, the cloud metadata address
    "NAT64 local-use, /96": "64:ff9b:1::7f00:1",
    "NAT64 local-use, /48": "64:ff9b:1:7f00:0001::",
    "6to4": "2002:7f00:1::1",
    "6to4 of a private network": "2002:c0a8:101::1",  # 192.168.1.1
    "Teredo, client 127.0.0.1": "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "ISATAP": "2606:4700::5efe:7f00:1",
    "ISATAP, u bit": "2606:4700::200:5efe:a00:1",
}
# The same forms carrying a public IPv4 address (8.8.8.8): allowed, as that address would be.
EMBEDDING_PUBLIC = {
    "IPv4-mapped": "::ffff:8.8.8.8",
    "IPv4-compatible": "::8.8.8.8",
    "NAT64": "64:ff9b::808:808",
    "6to4": "2002:808:808::1",
    "ISATAP": "2606:4700::5efe:808:808",
}


@pytest.mark.parametrize("form", list(EMBEDDING_PRIVATE))
def test_every_ipv6_form_embedding_a_private_ipv4_address_is_refused(form: str) -> None:
    address = ipaddress.IPv6Address(EMBEDDING_PRIVATE[form])
    assert addresses.embedded_ipv4(address), form
    why = addresses.refusal(address)
    assert why is not None and why.startswith("address_not_allowed"), form


@pytest.mark.parametrize("form", list(EMBEDDING_PUBLIC))
def test_an_ipv6_form_embedding_a_public_ipv4_address_is_allowed(form: str) -> None:
    address = ipaddress.IPv6Address(EMBEDDING_PUBLIC[form])
    assert addresses.embedded_ipv4(address) == [ipaddress.IPv4Address("8.8.8.8")], form
    assert addresses.refusal(address) is None, form


def test_teredo_finds_the_server_and_the_inverted_client() -> None:
    address = ipaddress.IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2")
    assert address.teredo is not None
    assert addresses.embedded_ipv4(address) == list(address.teredo)  # the standard library agrees
    assert addresses.refusal(address) is not None  # Teredo (2001::/32) is never globally reachable


def test_ordinary_public_and_private_addresses() -> None:
    for public in ("8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"):
        assert addresses.refusal(ipaddress.ip_address(public)) is None, public
    for private in (
        "127.0.0.1",
        "10.1.2.3",
        "100.64.0.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "fc00::1",
        "ff02::1",
    ):
        assert addresses.refusal(ipaddress.ip_address(private)) is not None, private


@pytest.mark.django_db
def test_bots_are_refused_at_embedded_loopback_addresses_when_private_hosts_are(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    _, key = app_create(name="embedded")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for n, literal in enumerate([*EMBEDDING_PRIVATE.values(), "::ffff:7f00:1"]):
        r = c.post("/api/v1/bots", {"name": f"b{n}", "url": f"http://[{literal}]:8080/"}, format="json")
        assert r.status_code == 400, (literal, r.content)
        assert (r.json()["code"], r.json()["reason"]) == ("invalid_url", "private"), literal
        # and a call to such a URL (registered while private hosts were allowed) is refused too
        code, _, error = webhooks.exchange(f"http://[{literal}]:8080/", b"{}", {}, 1.0, read=10)
        assert code is None and error.startswith("address_not_allowed"), (literal, error)
    r = c.post("/api/v1/bots", {"name": "public", "url": "http://[64:ff9b::808:808]:8080/"}, format="json")
    assert r.status_code == 201, r.content


def test_web_push_endpoints_at_embedded_loopback_addresses_are_refused(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    for literal in ("::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1"):
        with pytest.raises(Exception) as refused:
            devices.check_endpoint(f"https://[{literal}]/push/x")
        assert getattr(refused.value, "code", None) == "invalid_device", literal
    assert devices.check_endpoint("https://[64:ff9b::808:808]/push/x")


# -- DNS rebinding --------------------------------------------------------------------------

HOST = "bots.rebind.test"  # a name no real resolver answers: only the fake one below does


class Rebinding:
    """A DNS server that rebinds: `HOST` is the public-looking first address on the first lookup,
    127.0.0.1 on every later one. It answers both the service's resolver hook and, to catch any
    second lookup that would bypass the hook, socket.getaddrinfo itself."""

    def __init__(self, first: str) -> None:
        self.first, self.lookups = first, 0
        self.real = socket.getaddrinfo

    def resolve(self, host: str, port: int) -> list[str]:
        if host != HOST:
            return [str(i[4][0]) for i in self.real(host, port, proto=socket.IPPROTO_TCP)]
        self.lookups += 1
        return [self.first if self.lookups == 1 else "127.0.0.1"]

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HOST:
            self.lookups += 1
            return self.real("127.0.0.1", port, *args, **kwargs)
        return self.real(host, port, *args, **kwargs)


class Server:
    """An HTTP(S) server on one loopback address, recording each request's Host header and SNI."""

    def __init__(self, address: str, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        seen = self.seen = []  # type: list[str]
        self.names: list[str | None] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen.append(self.headers.get("Host", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"served_by": "' + address.encode() + b'"}')

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: self.names.append(name)  # type: ignore[assignment,misc,func-returns-value]
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for s in made:
        s.close()


def _rebinding(monkeypatch: pytest.MonkeyPatch, first: str) -> Rebinding:
    """The rebinding resolver in place, and `first` taken for a public address (the stand-in for
    one on a machine without a network: the loopback's 127.0.0.2)."""
    dns = Rebinding(first)
    monkeypatch.setattr(addresses, "resolve", dns.resolve)
    monkeypatch.setattr(socket, "getaddrinfo", dns.getaddrinfo)
    real = addresses.refusal
    stand_in = ipaddress.ip_address(first)
    monkeypatch.setattr(addresses, "refusal", lambda a: None if a == stand_in else real(a))
    return dns


def test_a_rebinding_name_is_called_at_the_address_it_was_checked_at(
    settings: Any, monkeypatch: pytest.MonkeyPatch, servers: list[Server]
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    settings.WEBHOOK_PROXY = ""
    checked = Server("127.0.0.2")
    rebound = Server("127.0.0.1", checked.port)  # where the name points after the check
    servers += [checked, rebound]
    dns = _rebinding(monkeypatch, "127.0.0.2")
    url = f"http://{HOST}:{checked.port}/turn"
    code, answer, error = webhooks.exchange(url, b"{}", {"Content-Type": "application/json"}, 5.0, read=100)
    assert (code, error) == (200, ""), error
    assert answer == b'{"served_by": "127.0.0.2"}'
    assert checked.seen == [f"{HOST}:{checked.port}"]  # the original Host header
    assert rebound.seen == []
    assert dns.lookups == 1  # resolved once: the check's lookup is the connection's
    # the next call resolves again, gets 127.0.0.1 and is refused before any connection
    code, _, error = webhooks.exchange(url, b"{}", {}, 5.0, read=100)
    assert code is None and error == "address_not_allowed: 127.0.0.1"
    assert rebound.seen == [] and len(checked.seen) == 1


def _certificate(directory: Path, name: str) -> tuple[Path, ssl.SSLContext]:
    """A CA (its file returned, for the client to trust) and a server context with a certificate
    for `name` that it signed."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Rebinding test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (directory / "cert.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    return directory / "ca.pem", server


def test_a_pinned_tls_call_sends_the_name_and_checks_the_certificate_against_it(
    settings: Any, monkeypatch: pytest.MonkeyPatch, servers: list[Server], tmp_path: Path
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    settings.WEBHOOK_PROXY = ""
    ca, tls = _certificate(tmp_path, HOST)
    trusting = ssl.create_default_context(cafile=str(ca))
    monkeypatch.setattr(addresses, "_context", trusting)
    checked = Server("127.0.0.2", tls=tls)
    servers.append(checked)
    _rebinding(monkeypatch, "127.0.0.2")
    code, answer, error = webhooks.exchange(f"https://{HOST}:{checked.port}/turn", b"{}", {}, 5.0, read=100)
    assert (code, error, answer) == (200, "", b'{"served_by": "127.0.0.2"}'), error
    assert checked.names == [HOST]  # SNI: the name, not the pinned address
    assert checked.seen == [f"{HOST}:{checked.port}"]
    # the same address under a name the certificate does not hold: the check fails, no request
    pinned = addresses.pinned_client([ipaddress.ip_address("127.0.0.2")])
    with pinned, pytest.raises(httpx.ConnectError) as failed:
        pinned.post(f"https://other.rebind.test:{checked.port}/turn", content=b"{}")
    assert "CERTIFICATE_VERIFY_FAILED" in str(failed.value) and "Hostname mismatch" in str(failed.value)
    assert len(checked.seen) == 1
    # an untrusted certificate (the process's usual roots) fails as well
    monkeypatch.setattr(addresses, "_context", None)
    _rebinding(monkeypatch, "127.0.0.2")
    code, _, error = webhooks.exchange(f"https://{HOST}:{checked.port}/turn", b"{}", {}, 5.0, read=100)
    assert code is None and "CERTIFICATE_VERIFY_FAILED" in error, error


def test_a_name_that_does_not_resolve_is_not_called(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False

    def nothing(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    monkeypatch.setattr(addresses, "resolve", nothing)
    code, _, error = webhooks.exchange("https://nowhere.test/", b"{}", {}, 1.0, read=10)
    assert code is None and error.startswith("cannot resolve host")
    assert webhooks.blocked("https://nowhere.test/") == error
