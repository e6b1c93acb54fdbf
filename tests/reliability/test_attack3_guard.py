"""The network guard's other doors, attacked (issue 32): an address nothing resolved, a name that
only looks local, a reverse lookup, UDP, a resolver bound at import, c-ares and uvloop.

Before: the guard watched the resolver (`socket.getaddrinfo`, `gethostbyname(_ex)`) and a socket's
`connect` given a host name. A connection to a bare address (a socket's `connect`, asyncio's
`open_connection`, `create_connection` and `sock_connect`, aiohttp, uvloop) was not checked, nor
UDP (`sendto`, `sendmsg`, `connect` on a datagram socket), `gethostbyaddr`, a `getaddrinfo` or
`gethostbyname` bound at import, aiohttp's c-ares resolver (aiodns, `aiohttp[speedups]`) or
uvloop (which resolves and connects in libuv); and `localhost.attacker.example` and
`127.0.0.1.attacker.example` passed as loopback by their names. An agent that swallowed the error
passed green, its request sent.

Nothing here may leave this machine, so the attacks run in a network namespace of their own
(`unshare -n`, which needs root): only `lo`, with 192.0.2.10 (TEST-NET-1) added to it standing for
a host past this machine, and an `/etc/hosts` of the namespace's own (a mount namespace) naming
`stand-in.test` and the two look-alike names as that address. A server listens on 192.0.2.10,
127.0.0.1 and ::1. Each attack swallows its error and must fail in one line naming the host and
what to do; each near miss (loopback by address, `localhost`, an allowed address, network or
name, an address in `"providers"` mode) must go through, its connection made. Without root or
`unshare` the test skips saying so, except under CI (`CI=true`, read when the module is collected),
where it fails: CI runs as root.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness._shared._ci import detect_ci
from tests.support.inner import UNUSED_PLUGINS

FAR = "192.0.2.10"
# Read when the module is collected: the root conftest takes the CI variables out of the
# environment for the session (no test's outcome may depend on them) before any test runs.
UNDER_CI = detect_ci() is not None

CONFTEST = """
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import bound  # binds resolver functions at import, before any guard  # noqa: F401


@pytest.fixture
def harness_capture_config():
    return {"no_requests": "ignore"}


class Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Quiet(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that read its 12 bytes and left


class Six(Quiet):
    address_family = socket.AF_INET6


@pytest.fixture(scope="session")
def servers():
    \"\"\"HTTP servers on 192.0.2.10, 127.0.0.1 and ::1; UDP sockets on the first two.\"\"\"
    ports, kept = {}, []
    for address, kind in (("192.0.2.10", Quiet), ("127.0.0.1", Quiet), ("::1", Six)):
        server = kind((address, 0), Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ports[address] = server.server_address[1]
    for address in ("192.0.2.10", "127.0.0.1"):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((address, 0))
        kept.append(udp)
        ports["udp " + address] = udp.getsockname()[1]
    yield ports
"""

BOUND = """
from socket import getaddrinfo, gethostbyname  # bound at import, before any guard
from socket import gethostbyname as resolve_name  # bound under another name
"""

TESTS = """
import asyncio
import socket

import aiohttp
import aiohttp.resolver
import pytest
import uvloop

import bound

ALL = pytest.mark.header_capture(block_network="all")
PROVIDERS = pytest.mark.header_capture(block_network="providers")
FAR = "192.0.2.10"  # on lo in this namespace: a host past this machine


def quiet(call):
    \"\"\"What an agent that swallows its network errors does.\"\"\"
    try:
        call()
    except Exception:
        return "refused"
    return "sent"


def status(connection):
    \"\"\"The status line's first 12 bytes of the answer to a GET sent on `connection`.\"\"\"
    connection.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    answer = b""
    while len(answer) < 12 and (chunk := connection.recv(12 - len(answer))):
        answer += chunk
    return answer


def tcp(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as connection:
        connection.settimeout(5)
        connection.connect((host, port))
        return status(connection)


def by_name(host, port):
    with socket.create_connection((host, port), timeout=5) as connection:
        return status(connection)


async def opened(host, port):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"GET / HTTP/1.0\\r\\n\\r\\n")
    answer = await reader.readexactly(12)
    writer.close()
    return answer


async def created(host, port):
    transport, _ = await asyncio.get_running_loop().create_connection(asyncio.Protocol, host, port)
    transport.close()
    return "made"


async def sock_connected(host, port):
    with socket.socket() as connection:
        connection.setblocking(False)
        await asyncio.get_running_loop().sock_connect(connection, (host, port))
    return "made"


async def fetched(url):
    async with aiohttp.ClientSession() as session, session.get(url) as answer:
        return answer.status


async def c_ares(host):
    return await aiohttp.resolver.AsyncResolver().resolve(host)


def udp(host, port, how):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        if how == "sendto":
            sender.sendto(b"x", (host, port))
        elif how == "sendmsg":
            sender.sendmsg([b"x"], [], 0, (host, port))
        else:
            sender.connect((host, port))
            sender.send(b"x")


OK = b"HTTP/1.0 200"


# -- attacks: each swallows its error, and must fail all the same ----------------------------


@ALL
def test_socket_connect_to_an_address(servers):
    quiet(lambda: tcp(FAR, servers[FAR]))


@ALL
def test_an_ipv4_mapped_address(servers):
    quiet(lambda: tcp("::ffff:" + FAR, servers[FAR]))


@ALL
def test_asyncio_open_connection_to_an_address(servers):
    quiet(lambda: asyncio.run(opened(FAR, servers[FAR])))


@ALL
def test_loop_create_connection_to_an_address(servers):
    quiet(lambda: asyncio.run(created(FAR, servers[FAR])))


@ALL
def test_loop_sock_connect_to_an_address(servers):
    quiet(lambda: asyncio.run(sock_connected(FAR, servers[FAR])))


@ALL
def test_aiohttp_to_an_address(servers):
    quiet(lambda: asyncio.run(fetched(f"http://{FAR}:{servers[FAR]}/")))


@ALL
def test_uvloop_to_an_address(servers):
    quiet(lambda: uvloop.run(opened(FAR, servers[FAR])))


@ALL
def test_uvloop_resolves_in_libuv(servers):
    quiet(lambda: uvloop.run(opened("stand-in.test", servers[FAR])))


@ALL
def test_udp_sendto(servers):
    quiet(lambda: udp(FAR, servers["udp " + FAR], "sendto"))


@ALL
def test_udp_sendmsg(servers):
    quiet(lambda: udp(FAR, servers["udp " + FAR], "sendmsg"))


@ALL
def test_udp_connect(servers):
    quiet(lambda: udp(FAR, servers["udp " + FAR], "connect"))


@ALL
def test_a_name_that_starts_like_localhost(servers):
    quiet(lambda: by_name("localhost.attacker.example", servers[FAR]))


@ALL
def test_a_name_that_starts_like_a_loopback_address(servers):
    quiet(lambda: by_name("127.0.0.1.attacker.example", servers[FAR]))


@ALL
def test_gethostbyaddr_of_an_address():
    quiet(lambda: socket.gethostbyaddr(FAR))


@PROVIDERS
def test_gethostbyaddr_of_a_provider():
    quiet(lambda: socket.gethostbyaddr("api.anthropic.com"))


@PROVIDERS
def test_getaddrinfo_bound_at_import():
    quiet(lambda: bound.getaddrinfo("api.anthropic.com", 443))


@PROVIDERS
def test_gethostbyname_bound_at_import():
    quiet(lambda: bound.gethostbyname("api.openai.com"))


@ALL
def test_a_lookup_under_another_name_then_a_connection(servers):
    address = bound.resolve_name("stand-in.test")  # not a door the guard sees
    quiet(lambda: tcp(address, servers[FAR]))


@PROVIDERS
def test_c_ares_lookup_of_a_provider():
    quiet(lambda: asyncio.run(c_ares("api.anthropic.com")))


@ALL
def test_aiohttp_resolves_through_c_ares(servers):
    assert aiohttp.resolver.DefaultResolver is aiohttp.resolver.AsyncResolver  # aiodns is here
    quiet(lambda: asyncio.run(fetched(f"http://stand-in.test:{servers[FAR]}/")))


# -- near misses: each goes through, its connection made -------------------------------------


@ALL
def test_near_miss_loopback_by_every_door(servers):
    for host in ("127.0.0.1", "::1"):
        port = servers[host]
        assert tcp(host, port).startswith(OK)
        assert asyncio.run(opened(host, port)).startswith(OK)
        assert asyncio.run(created(host, port)) == "made"
        assert uvloop.run(opened(host, port)).startswith(OK)
    assert asyncio.run(sock_connected("127.0.0.1", servers["127.0.0.1"])) == "made"
    assert asyncio.run(fetched(f"http://127.0.0.1:{servers['127.0.0.1']}/")) == 200
    assert asyncio.run(fetched(f"http://[::1]:{servers['::1']}/")) == 200
    for how in ("sendto", "sendmsg", "connect"):
        udp("127.0.0.1", servers["udp 127.0.0.1"], how)
    assert tcp("127.1", servers["127.0.0.1"]).startswith(OK)  # inet_aton's form of 127.0.0.1
    assert tcp("::ffff:127.0.0.1", servers["127.0.0.1"]).startswith(OK)
    socket.gethostbyaddr("127.0.0.1")


@ALL
def test_near_miss_localhost_by_name(servers):
    port = servers["127.0.0.1"]
    assert by_name("localhost", port).startswith(OK)
    assert asyncio.run(fetched(f"http://localhost:{port}/")) == 200  # through c-ares
    assert uvloop.run(opened("localhost", port)).startswith(OK)
    assert bound.gethostbyname("localhost") == "127.0.0.1"


@pytest.mark.header_capture(block_network="all", allowed_hosts=[FAR])
def test_near_miss_an_allowed_address(servers):
    assert tcp(FAR, servers[FAR]).startswith(OK)
    assert tcp("::ffff:" + FAR, servers[FAR]).startswith(OK)  # the same address
    assert asyncio.run(opened(FAR, servers[FAR])).startswith(OK)
    assert asyncio.run(fetched(f"http://{FAR}:{servers[FAR]}/")) == 200
    assert uvloop.run(opened(FAR, servers[FAR])).startswith(OK)
    udp(FAR, servers["udp " + FAR], "sendto")


@pytest.mark.header_capture(block_network="all", allowed_hosts=["192.0.2.0/24"])
def test_near_miss_an_allowed_network(servers):
    assert tcp(FAR, servers[FAR]).startswith(OK)
    assert asyncio.run(opened(FAR, servers[FAR])).startswith(OK)


@pytest.mark.header_capture(block_network="all", allowed_hosts=["stand-in.test"])
def test_near_miss_an_allowed_name_connects_to_what_it_resolved_to(servers):
    port = servers[FAR]
    assert by_name("stand-in.test", port).startswith(OK)
    assert asyncio.run(opened("stand-in.test", port)).startswith(OK)
    assert asyncio.run(fetched(f"http://stand-in.test:{port}/")) == 200  # through c-ares
    assert uvloop.run(opened("stand-in.test", port)).startswith(OK)


@PROVIDERS
def test_near_miss_providers_lets_an_address_be(servers):
    assert tcp(FAR, servers[FAR]).startswith(OK)
    assert asyncio.run(fetched(f"http://{FAR}:{servers[FAR]}/")) == 200
"""

# Each attack: the host its refusal names, and what the refusal calls it.
ATTACKS = {
    "test_socket_connect_to_an_address": (FAR, "an address"),
    "test_an_ipv4_mapped_address": ("::ffff:" + FAR, "an address"),
    "test_asyncio_open_connection_to_an_address": (FAR, "an address"),
    "test_loop_create_connection_to_an_address": (FAR, "an address"),
    "test_loop_sock_connect_to_an_address": (FAR, "an address"),
    "test_aiohttp_to_an_address": (FAR, "an address"),
    "test_uvloop_to_an_address": (FAR, "an address"),
    "test_uvloop_resolves_in_libuv": ("stand-in.test", "a host"),
    "test_udp_sendto": (FAR, "an address"),
    "test_udp_sendmsg": (FAR, "an address"),
    "test_udp_connect": (FAR, "an address"),
    "test_a_name_that_starts_like_localhost": ("localhost.attacker.example", "a host"),
    "test_a_name_that_starts_like_a_loopback_address": ("127.0.0.1.attacker.example", "a host"),
    "test_gethostbyaddr_of_an_address": (FAR, "an address"),
    "test_gethostbyaddr_of_a_provider": ("api.anthropic.com", "a provider host"),
    "test_getaddrinfo_bound_at_import": ("api.anthropic.com", "a provider host"),
    "test_gethostbyname_bound_at_import": ("api.openai.com", "a provider host"),
    "test_a_lookup_under_another_name_then_a_connection": (FAR, "an address"),
    "test_c_ares_lookup_of_a_provider": ("api.anthropic.com", "a provider host"),
    "test_aiohttp_resolves_through_c_ares": ("stand-in.test", "a host"),
}
NEAR_MISSES = 6


def namespace() -> None:
    """Skip (fail under CI) unless this process may make a network and mount namespace, and
    aiodns (aiohttp's c-ares resolver) and uvloop, which the test extra brings, are here."""
    reason = None
    missing = [name for name in ("aiodns", "uvloop") if importlib.util.find_spec(name) is None]
    if missing:
        reason = f"needs {' and '.join(missing)} (the test extra brings them)"
    elif sys.platform != "linux" or os.geteuid() != 0:
        reason = "needs root on Linux to run the attacks in a network namespace (unshare -n)"
    elif shutil.which("unshare") is None or shutil.which("ip") is None:
        reason = "needs unshare (util-linux) and ip (iproute2)"
    else:
        probe = subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            reason = f"unshare -n -m failed here: {probe.stderr.strip()}"
    if reason is None:
        return
    if UNDER_CI:
        pytest.fail(f"{reason}; CI runs as root and must run the guard's attacks")
    pytest.skip(reason)


def run_isolated(project: Path) -> tuple[int, str]:
    """Pytest on `project` in a network namespace of its own: lo up, 192.0.2.10 on it, and an
    /etc/hosts of its own; its exit code and report (stdout: a server thread's stderr is not
    pytest's)."""
    hosts = project / "hosts"
    names = f"{FAR} stand-in.test localhost.attacker.example 127.0.0.1.attacker.example\n"
    hosts.write_text(Path("/etc/hosts").read_text(encoding="utf-8") + "\n" + names)
    blocked = " ".join(f"-p no:{name}" for name in UNUSED_PLUGINS)
    script = (
        f"set -e; mount --bind {hosts} /etc/hosts; ip link set lo up;"
        f" ip addr add {FAR}/32 dev lo;"
        f" exec {sys.executable} -m pytest -p no:randomly -p no:cacheprovider {blocked} -q"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["COLUMNS"] = "400"
    done = subprocess.run(
        ["unshare", "-n", "-m", "sh", "-c", script],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout


def sections(output: str) -> dict[str, str]:
    """Each failed test's report in pytest's output, by its name."""
    parts = re.split(r"^_{3,} (test_\w+) _{3,}$", output, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.slow
def test_every_door_refuses_a_host_past_this_machine_and_the_near_misses_go_through(
    pytester: pytest.Pytester,
) -> None:
    namespace()
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(bound=BOUND, test_doors=TESTS)
    code, output = run_isolated(pytester.path)
    summary = output.strip().splitlines()[-1]
    assert f"{len(ATTACKS)} failed, {NEAR_MISSES} passed" in summary, output[-4000:]
    assert code == 1
    reports = sections(output)
    assert set(reports) == set(ATTACKS), output[-4000:]
    for name, (host, what) in ATTACKS.items():
        refusal = re.compile(
            rf"tried to reach {what}[^\n]*, {re.escape(host)}, [^\n]*allowed_hosts"
        )
        assert refusal.search(reports[name]), (name, reports[name][-2000:])
