"""Which addresses the service's outgoing calls may reach, and an HTTP client pinned to the address checked.

Webhook deliveries, brought bots' turns and Web Push sends go to URLs that apps and browsers
supply, so, unless WEBHOOK_ALLOW_PRIVATE_HOSTS, each call:

1. resolves the host once (`resolve`, a hook tests replace with a fake resolver);
2. refuses it when any address is not public (`refusal`): loopback, private, link-local, shared,
   reserved, multicast, and every IPv6 form that embeds an IPv4 address whose embedded address is
   not itself public: IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96),
   IPv4-compatible (::/96), NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4
   (2002::/16), Teredo (2001::/32: its server and its client, the inverted low 32 bits) and ISATAP
   (an interface id of 0:5efe or 200:5efe);
3. connects to exactly the addresses it checked (`pinned_client`): httpcore's network backend is
   replaced by one that dials those addresses whatever the URL's host resolves to by then, while
   the request keeps the URL's host in its Host header and TLS sends it as SNI and verifies the
   certificate against it. A DNS answer that changes between the check and the connection (DNS
   rebinding) cannot move the call to another address.

httpx has no public option for the network backend, so `pinned_client` builds its transport with
httpx.HTTPTransport (which maps httpcore's errors to httpx's) and gives it an httpcore.ConnectionPool
of its own made with the pinned backend; tests/services/test_addresses.py holds it to that.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # the interface id's high 32 bits (RFC 5214; u bit either way)


def _v4(bits: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bits & 0xFFFFFFFF)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries and may reach (none for an ordinary one)."""
    n = int(address)
    if address in _MAPPED or address in _TRANSLATED or address in _COMPATIBLE or address in _NAT64:
        return [_v4(n)]
    if address in _NAT64_LOCAL:
        # RFC 6052's /48 layout (bits 48-63 and 72-87, around the u octet) and the /96 one
        # (the low 32 bits): a local-use prefix may be either length, so both must be public.
        forty_eight = ((n >> 64) & 0xFFFF) << 16 | (n >> 40) & 0xFFFF
        return [_v4(forty_eight), _v4(n)]
    if address in _SIX_TO_FOUR:
        return [_v4(n >> 80)]
    if address in _TEREDO:
        return [_v4(n >> 64), _v4(~n)]  # the server, and the client (obfuscated: inverted bits)
    if (n >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        return [_v4(n)]
    return []


def refusal(address: IPAddress) -> str | None:
    """Why `address` may not be called (`address_not_allowed: <address>`), or None when it is
    public: globally reachable, not multicast, and (IPv6) embedding only public IPv4 addresses."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return f"address_not_allowed: {address}"
    if not address.is_global or address.is_multicast:
        return f"address_not_allowed: {address}"
    if isinstance(address, ipaddress.IPv6Address):
        for inner in embedded_ipv4(address):
            if not inner.is_global or inner.is_multicast:
                return f"address_not_allowed: {address} (embeds {inner})"
    return None


def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# How a host name becomes addresses: socket.getaddrinfo, in the order it answers. A hook so that
# tests can answer as a rebinding DNS server would; raises OSError when the name does not resolve.
resolve: Callable[[str, int], list[str]] = _getaddrinfo


def port_of(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme.lower() == "https" else 80)


def check(url: str, *, allow_private: bool) -> tuple[list[IPAddress], str | None]:
    """Resolve `url`'s host once: (its addresses, None), or ([], why it may not be called): a name
    that does not resolve (`cannot resolve host: ...`), or any address that is not public unless
    `allow_private`. The addresses are the ones a pinned client connects to."""
    host = urlsplit(url).hostname or ""
    try:
        found = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolve(host, port_of(url))]
    except (OSError, UnicodeError, ValueError) as exc:
        return [], f"cannot resolve host: {exc}"
    if not found:
        return [], "cannot resolve host: no address"
    if not allow_private:
        for address in found:
            why = refusal(address)
            if why:
                return [], why
    return found, None


class PinnedBackend(httpcore.SyncBackend):
    """httpcore's network backend, connecting to the checked addresses (each in turn, as
    socket.create_connection tries a name's) instead of resolving the URL's host again."""

    def __init__(self, addresses: Iterable[IPAddress]) -> None:
        self.addresses = list(addresses)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        failure: Exception = httpcore.ConnectError(f"no address for {host}")
        for address in self.addresses:
            try:
                return super().connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # the next address, as a resolved name would
                failure = exc
        raise failure


_context: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """The process's TLS context for outgoing calls (certifi's roots and the system's), made once."""
    global _context
    if _context is None:
        context = ssl.create_default_context(cafile=certifi.where())
        context.load_default_certs()
        _context = context
    return _context


def pinned_client(
    addresses: Iterable[IPAddress],
    *,
    proxy: str | None = None,
    verify: ssl.SSLContext | None = None,
    http2: bool = False,
) -> httpx.Client:
    """An httpx client that connects only to `addresses` (the Host header, SNI and certificate
    check keep the URL's host name; `verify`: another TLS context than `ssl_context()`) and
    follows no redirect. With `proxy` (WEBHOOK_PROXY) the proxy makes the connection, so nothing
    is pinned: the proxy is then the one to refuse private addresses."""
    context = verify or ssl_context()
    if proxy:
        return httpx.Client(proxy=proxy, verify=context, http2=http2, follow_redirects=False)
    transport = httpx.HTTPTransport(verify=context, http2=http2)
    transport._pool = httpcore.ConnectionPool(  # the one backend hook (see the module's docstring)
        ssl_context=context, http2=http2, network_backend=PinnedBackend(addresses), retries=0
    )
    return httpx.Client(transport=transport, follow_redirects=False, trust_env=False)
