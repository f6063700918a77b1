"""Which requests go through an HTTP proxy, and how to reach it.

``Proxies`` is the client's explicit setting; its usual source is the environment, read once
when a client is built (``Proxies.from_environment``), with the variables curl and requests
read: ``https_proxy``/``HTTPS_PROXY`` for https URLs, ``http_proxy``/``HTTP_PROXY`` for http
URLs, ``all_proxy``/``ALL_PROXY`` for either when its own is unset (the lower-case name wins),
and ``no_proxy``/``NO_PROXY`` for the hosts that bypass the proxy. Loopback hosts (localhost,
127.0.0.0/8, ::1) always bypass it: a proxy elsewhere cannot reach this machine's loopback.

``NO_PROXY`` is a comma-separated list, matched as curl does: ``*`` (every host), a domain
(``example.com`` or ``.example.com``: that host and every host under it, never
``notexample.com``), an IP address or network (``10.0.0.0/8``, ``::1``), and any of those with
a port (``example.com:8443``, ``[::1]:8000``) to bypass only that port.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from palaestra.transport.errors import InvalidUrl

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Proxies:
    """The proxy for http and for https URLs (``None``: direct) and the hosts that bypass them.

    ``Proxies()`` sends everything direct. Proxy URLs are ``http://[user:password@]host[:port]``
    (a URL without a scheme is taken as http); the credentials, percent-decoded, are sent as
    ``Proxy-Authorization: Basic``. ``sources`` names where each came from, for messages.
    """

    http: str | None = None
    https: str | None = None
    no_proxy: str = ""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Proxies:
        """The proxies the environment names (``os.environ`` unless given), read now."""
        env = os.environ if environ is None else environ
        chosen: dict[str, str | None] = {}
        sources: dict[str, str] = {}
        for scheme in ("http", "https"):
            names = [f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"]
            if scheme == "http" and "REQUEST_METHOD" in env:
                names.remove("HTTP_PROXY")  # under CGI it is the client's Proxy: header
            name = next((n for n in names if env.get(n, "").strip()), None)
            chosen[scheme] = env[name].strip() if name else None
            if name:
                sources[scheme] = name
        no_proxy = env.get("no_proxy", "").strip() or env.get("NO_PROXY", "").strip()
        return cls(chosen["http"], chosen["https"], no_proxy, sources)

    def route(self, scheme: str, host: str, port: int) -> ProxyEndpoint | None:
        """The proxy for a request to ``scheme://host:port``, or None to connect directly.

        Raises ``InvalidUrl`` when the chosen proxy URL cannot be used.
        """
        url = self.https if scheme == "https" else self.http
        if not url or bypasses(host, port, self.no_proxy):
            return None
        return ProxyEndpoint.parse(url, self.sources.get(scheme, f"the {scheme} proxy"))


@dataclass(frozen=True, slots=True)
class ProxyEndpoint:
    """One proxy: where to connect, and the ``Proxy-Authorization`` value if it has one."""

    host: str
    port: int
    authorization: str | None
    shown: str
    """The proxy as messages name it: ``host:port (HTTPS_PROXY)``, never its password."""

    @classmethod
    def parse(cls, url: str, source: str) -> ProxyEndpoint:
        full = url if "://" in url else f"http://{url}"
        try:
            parts = urlsplit(full)
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError as exc:
            raise InvalidUrl(f"{source}: not a usable proxy URL ({exc})") from None
        if scheme != "http":
            raise InvalidUrl(
                f"{source}: {scheme}:// proxies are not supported (use an http:// proxy URL)"
            )
        if not host:
            raise InvalidUrl(f"{source}: the proxy URL names no host")
        port = 80 if port is None else port
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        authorization = None
        if parts.username is not None:
            credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
        return cls(host, port, authorization, f"{shown} ({source})")


def bypasses(host: str, port: int, no_proxy: str) -> bool:
    """True when a request to ``host:port`` goes direct: loopback, or named by ``no_proxy``."""
    host = host.strip("[]").rstrip(".").lower()
    address = _ip(host)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    if address is not None and address.is_loopback:
        return True
    for entry in no_proxy.replace(" ", ",").split(","):
        if entry and _matches(entry.lower(), host, address, port):
            return True
    return False


def _matches(
    entry: str, host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, port: int
) -> bool:
    if entry == "*":
        return True
    name, wanted_port = _split_port(entry)
    if wanted_port is not None and wanted_port != port:
        return False
    if "/" in name:
        network = _network(name)
        return network is not None and address is not None and address in network
    entry_address = _ip(name)
    if entry_address is not None:
        return address == entry_address
    domain = name.lstrip("*").lstrip(".").rstrip(".")
    return bool(domain) and (host == domain or host.endswith("." + domain))


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port`` or a bare entry (a bare IPv6 address has no port)."""
    if entry.startswith("["):
        inside, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return inside, int(port) if port.isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name, int(port)
    return entry, None


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _network(text: str) -> IpNetwork | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
