"""Requests through a real HTTP proxy: CONNECT tunnels for https, absolute form for http.

The proxy (``forward_proxy.py``) and the servers behind it listen on 127.0.0.1. The servers
are named ``model.test``, a name only the proxy can resolve: a request that reaches them went
through it.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from palaestra.transport import ConnectFailed, HttpClient, InvalidUrl, Proxies, TlsFailed
from palaestra.transport.proxy import bypasses
from tests.support.network import free_port
from tests.transport.forward_proxy import ForwardProxy
from tests.transport.raw_server import (
    FixedResolver,
    Server,
    Servers,
    answer_numbered,
    parse_request,
    self_signed,
)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"), "model.test")


@pytest.fixture
async def proxies() -> AsyncIterator[Callable[..., Any]]:
    """Starts forward proxies for one test (routes, credentials) and closes them after it."""
    started: list[ForwardProxy] = []

    async def start(routes: dict[str, int], credentials: str | None = None) -> ForwardProxy:
        started.append(await ForwardProxy(routes, credentials).start())
        return started[-1]

    yield start
    for proxy in started:
        await proxy.close()


async def tls_origin(servers: Servers, certificate: tuple[Path, Path]) -> Server:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return await servers.start(answer_numbered, tls=context)


def trusting(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certificate[0])


# --- https: a CONNECT tunnel with TLS inside --------------------------------------------------


async def test_https_goes_through_a_connect_tunnel_with_tls_to_the_server_inside(
    servers: Servers,
    proxies: Callable[..., Any],
    new_client: Callable[..., HttpClient],
    certificate: tuple[Path, Path],
) -> None:
    origin = await tls_origin(servers, certificate)
    proxy = await proxies({f"model.test:{origin.port}": origin.port})
    client = new_client(proxies=Proxies(https=proxy.url), tls=trusting(certificate))
    url = f"https://model.test:{origin.port}/v1/responses?x=1"
    first = await client.request("POST", url, body=b"{}", idempotent=True)
    second = await client.request("GET", url)
    assert (first.body, second.body) == (b"c0r1", b"c0r2")  # one tunnel, kept alive
    assert [line for line, _ in proxy.seen] == [f"CONNECT model.test:{origin.port} HTTP/1.1"]
    line, headers, _ = parse_request(origin.requests[0])
    assert line == "POST /v1/responses?x=1 HTTP/1.1"  # origin form inside the tunnel
    assert headers["host"] == f"model.test:{origin.port}"


async def test_the_tunnel_carries_the_proxy_credentials_and_tls_checks_the_server_name(
    servers: Servers,
    proxies: Callable[..., Any],
    new_client: Callable[..., HttpClient],
    certificate: tuple[Path, Path],
) -> None:
    origin = await tls_origin(servers, certificate)
    routes = {f"model.test:{origin.port}": origin.port, f"other.test:{origin.port}": origin.port}
    proxy = await proxies(routes, credentials="us@er:p:ss")
    proxy_url = f"http://us%40er:p%3Ass@127.0.0.1:{proxy.port}"
    client = new_client(proxies=Proxies(https=proxy_url), tls=trusting(certificate))
    assert (await client.request("GET", f"https://model.test:{origin.port}/")).status == 200
    # The certificate names model.test: a tunnel to another name must fail the TLS check.
    with pytest.raises(TlsFailed, match=r"other\.test.*through proxy") as raised:
        await client.request("GET", f"https://other.test:{origin.port}/")
    assert "p:ss" not in str(raised.value) and "p%3Ass" not in str(raised.value)


async def test_a_proxy_refusing_the_tunnel_is_connect_failed_saying_why(
    proxies: Callable[..., Any], new_client: Callable[..., HttpClient]
) -> None:
    proxy = await proxies({}, credentials="user:secret")
    client = new_client(proxies=Proxies(https=proxy.url))
    with pytest.raises(ConnectFailed, match=r"407.*user:password") as raised:
        await client.request("GET", "https://model.test/")
    assert "model.test" in str(raised.value) and "secret" not in str(raised.value)
    wrong = new_client(proxies=Proxies(https=f"http://user:wrong@127.0.0.1:{proxy.port}"))
    with pytest.raises(ConnectFailed, match="407") as raised:
        await wrong.request("GET", "https://model.test/")
    assert "wrong" not in str(raised.value)


async def test_an_unreachable_proxy_is_connect_failed_naming_the_proxy_and_its_variable(
    new_client: Callable[..., HttpClient],
) -> None:
    port = free_port()
    environ = {"HTTPS_PROXY": f"http://user:secret@127.0.0.1:{port}"}
    client = new_client(proxies=Proxies.from_environment(environ))
    with pytest.raises(ConnectFailed, match=rf"proxy 127\.0\.0\.1:{port} \(HTTPS_PROXY\)") as e:
        await client.request("GET", "https://model.test/")
    assert "secret" not in str(e.value)


# --- http: absolute-form requests ------------------------------------------------------------


async def test_http_requests_are_sent_to_the_proxy_in_absolute_form_with_credentials(
    servers: Servers, proxies: Callable[..., Any], new_client: Callable[..., HttpClient]
) -> None:
    origin = await servers.start(answer_numbered)
    proxy = await proxies({f"model.test:{origin.port}": origin.port}, credentials="me:pw")
    client = new_client(proxies=Proxies(http=f"me:pw@127.0.0.1:{proxy.port}"))  # no scheme
    url = f"http://model.test:{origin.port}/v1/models?page=2"
    assert (await client.request("GET", url)).body == b"c0r1"
    assert (await client.request("POST", url, body=b"{}")).body == b"c0r2"
    (line, headers), *_ = proxy.seen
    assert line == f"GET {url} HTTP/1.1"
    assert headers["host"] == f"model.test:{origin.port}"
    assert headers["proxy-authorization"] == "Basic bWU6cHc="
    origin_line, origin_headers, _ = parse_request(origin.requests[0])
    assert origin_line == "GET /v1/models?page=2 HTTP/1.1"
    assert "proxy-authorization" not in origin_headers
    # The proxy passes later requests on a connection through as they are: each is in
    # absolute form with the credentials too.
    second_line, second_headers, body = parse_request(origin.requests[1])
    assert second_line == f"POST {url} HTTP/1.1"
    assert (second_headers["proxy-authorization"], body) == ("Basic bWU6cHc=", b"{}")


async def test_an_https_only_proxy_leaves_http_requests_direct(
    servers: Servers, proxies: Callable[..., Any], new_client: Callable[..., HttpClient]
) -> None:
    origin = await servers.start(answer_numbered)
    proxy = await proxies({})
    client = new_client(proxies=Proxies(https=proxy.url))
    client.resolver = FixedResolver(["127.0.0.1"])
    assert (await client.request("GET", f"http://model.test:{origin.port}/")).body == b"c0r1"
    assert proxy.seen == []


# --- what bypasses the proxy ----------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "api.localhost", "::1", "127.1.2.3"])
async def test_loopback_hosts_always_go_direct(host: str) -> None:
    assert bypasses(host, 80, "")


async def test_hosts_named_in_no_proxy_go_direct_and_others_through_the_proxy(
    servers: Servers, proxies: Callable[..., Any], new_client: Callable[..., HttpClient]
) -> None:
    origin = await servers.start(answer_numbered)
    routes = {f"model.test:{origin.port}": origin.port, f"other.test:{origin.port}": origin.port}
    proxy = await proxies(routes)
    environ = {"http_proxy": proxy.url, "NO_PROXY": "example.org, .model.test"}
    client = new_client(proxies=Proxies.from_environment(environ))
    client.resolver = FixedResolver(["127.0.0.1"])  # what model.test resolves to, direct
    await client.request("GET", f"http://model.test:{origin.port}/")
    await client.request("GET", f"http://other.test:{origin.port}/")
    assert [line.split()[1] for line, _ in proxy.seen] == [f"http://other.test:{origin.port}/"]
    assert len(origin.requests) == 2


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "direct"),
    [
        ("*", "api.openai.com", 443, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        ("example.com", "notexample.com", 443, False),
        (".example.com", "example.com", 443, True),
        ("*.example.com", "a.b.example.com", 443, True),
        ("EXAMPLE.com.", "api.Example.COM", 443, True),
        ("example.com:8443", "example.com", 8443, True),
        ("example.com:8443", "example.com", 443, False),
        ("10.1.2.3", "10.1.2.3", 80, True),
        ("10.1.2.3", "10.1.2.4", 80, False),
        ("10.0.0.0/8", "10.200.0.1", 80, True),
        ("10.0.0.0/8", "11.0.0.1", 80, False),
        ("fd00::/8", "fd12::1", 80, True),
        ("2001:db8::1", "2001:db8::1", 80, True),
        ("[2001:db8::1]:8000", "2001:db8::1", 8000, True),
        ("[2001:db8::1]:8000", "2001:db8::1", 8001, False),
        ("a.com,b.com", "b.com", 80, True),
        ("a.com b.com", "b.com", 80, True),
        ("", "example.com", 80, False),
        ("10.0.0.0/8", "example.com", 80, False),
    ],
)
def test_no_proxy_matches_as_curl_does(no_proxy: str, host: str, port: int, direct: bool) -> None:
    assert bypasses(host, port, no_proxy) is direct


# --- the setting and where it comes from -----------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "http", "https"),
    [
        ({}, None, None),
        ({"HTTPS_PROXY": "http://a:1"}, None, "http://a:1"),
        ({"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:1"}, None, "http://low:1"),
        ({"HTTP_PROXY": "http://h:1", "ALL_PROXY": "http://all:1"}, "http://h:1", "http://all:1"),
        ({"all_proxy": "http://all:1"}, "http://all:1", "http://all:1"),
        ({"HTTPS_PROXY": "  ", "ALL_PROXY": "http://all:1"}, "http://all:1", "http://all:1"),
        ({"HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"}, None, None),  # httpoxy
    ],
)
def test_the_environment_names_the_proxies_as_curl_and_requests_read_it(
    environ: dict[str, str], http: str | None, https: str | None
) -> None:
    read = Proxies.from_environment(environ)
    assert (read.http, read.https) == (http, https)


async def test_the_environment_is_read_once_when_the_client_is_built(
    servers: Servers,
    proxies: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    origin = await servers.start(answer_numbered)
    proxy = await proxies({f"model.test:{origin.port}": origin.port})
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = HttpClient()
    monkeypatch.delenv("HTTP_PROXY")  # too late: the client has read it
    try:
        assert (await client.request("GET", f"http://model.test:{origin.port}/")).status == 200
    finally:
        await client.aclose()
    assert len(proxy.seen) == 1
    assert HttpClient(proxies=Proxies()).proxies == Proxies()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("socks5://127.0.0.1:1080", "socks5:// proxies are not supported"),
        ("http://:3128", "names no host"),
        ("http://127.0.0.1:99999", "not a usable proxy URL"),
    ],
)
async def test_a_proxy_url_that_cannot_be_used_is_invalid_url_naming_its_variable(
    new_client: Callable[..., HttpClient], url: str, message: str
) -> None:
    client = new_client(proxies=Proxies.from_environment({"ALL_PROXY": url}))
    with pytest.raises(InvalidUrl, match=f"ALL_PROXY: .*{message}"):
        await client.request("GET", "https://model.test/")
