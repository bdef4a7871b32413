"""Who a request comes from, for sign-in throttling (django-axes calls `client_address`,
settings.AXES_CLIENT_IP_CALLABLE).

The connection's own peer address, unless that peer is one of MEMORY_TRUSTED_PROXIES
(addresses or networks): then `X-Forwarded-For` is read from the right — each proxy
appends the address it got the request from — and the first address that is not a trusted
proxy is the client. Anything a client writes into the header itself stands to the left
of what a trusted proxy appended, so it is never reached. With no trusted proxies (the
default) the header is ignored: changing it on each try no longer gets around the limit.

The server must not rewrite the peer from the header itself: bin/serve, the Procfile and
the systemd unit run uvicorn with `--no-proxy-headers` (uvicorn otherwise trusts
`X-Forwarded-For` from 127.0.0.1, and `make run` is reached from there)."""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(proxy, strict=False) for proxy in proxies)


def _parse(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.strip().removeprefix("[").split("]")[0])
    except ValueError:
        return None


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    parsed = _parse(address)
    return parsed is not None and any(parsed in network for network in networks)


def client_address(request: HttpRequest) -> str:
    """The address a sign-in attempt is counted against (see the module's docstring)."""
    peer = request.META.get("REMOTE_ADDR") or ""
    networks = _networks(tuple(settings.MEMORY_TRUSTED_PROXIES))
    if not networks or not _trusted(peer, networks):
        return peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, networks):
            return hop if _parse(hop) is not None else peer
    return peer
