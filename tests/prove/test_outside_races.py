"""Races through latency outside the process: helper processes, a local HTTP service in another
process, and MCP servers over stdio with the `mcp` SDK as the client.

The race is not in the other process but in the task that wakes when the answer is readable,
and that task is in the build's process: the proof holds its wake-up until the run's order
allows it. Each racy agent fails naming its own tasks and saying the answers came from outside;
its fixed twin passes. Slow (real processes): deselect with `-m "not slow"`.
"""

from __future__ import annotations

import re

import pytest

from tests.support.inner import imported_first

from .conftest import PYTHON, cause_of, make_agent, prove

pytestmark = pytest.mark.slow

HELPER = """
import json
import sys
import time

name = sys.argv[1]
time.sleep({"fs": 0.05, "web": 0.01, "shell": 0.03}[name])  # its own start-up
print(json.dumps({"name": name}))
"""

HELPERS = f"""
import asyncio
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


async def build():
    tools = []

    async def load(name):
        helper = await asyncio.create_subprocess_exec(
            {PYTHON!r}, os.path.join(HERE, "helper.py"), name, stdout=subprocess.PIPE
        )
        out, _ = await helper.communicate()
        tools.append(json.loads(out)["name"])

    await asyncio.gather(*(load(name) for name in ("fs", "web", "shell")))
    return request(FIX(tools))
"""


@pytest.mark.parametrize("fixed", [False, True], ids=["racy", "fixed"])
def test_tools_from_helper_processes(pytester: pytest.Pytester, fixed: bool) -> None:
    pytester.makepyfile(helper=HELPER)
    make_agent(pytester, HELPERS, fixed=fixed)
    result = prove(pytester, 5)
    if fixed:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    assert cause_of(result) == (
        "asyncio order of answers (fs, shell, web vs web, shell, fs):"
        " tools from helper processes arrived in another order"
    )


SERVICE = """
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LATENCY = {"fs": 0.05, "web": 0.01, "shell": 0.03}


class Tools(BaseHTTPRequestHandler):
    def do_GET(self):
        name = self.path.strip("/")
        time.sleep(LATENCY[name])
        body = json.dumps({"name": name}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Tools)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

SERVICE_CONFTEST = f"""
import os
import subprocess

import pytest


@pytest.fixture(scope="session", autouse=True)
def tool_service():
    service = subprocess.Popen(
        [{PYTHON!r}, "service.py"], stdout=subprocess.PIPE, text=True
    )
    os.environ["TOOL_SERVICE"] = "http://127.0.0.1:" + service.stdout.readline().strip()
    yield
    service.kill()
    service.wait()
"""

SERVICE_AGENT = """
import asyncio
import os

import httpx


async def build():
    tools = []
    async with httpx.AsyncClient(base_url=os.environ["TOOL_SERVICE"]) as client:

        async def load(name):
            answer = await client.get(f"/{name}")
            tools.append(answer.json()["name"])

        await asyncio.gather(*(load(name) for name in ("fs", "web", "shell")))
    return request(FIX(tools))
"""


@pytest.mark.parametrize("fixed", [False, True], ids=["racy", "fixed"])
def test_tools_from_a_local_service_in_another_process(
    pytester: pytest.Pytester, fixed: bool
) -> None:
    pytester.makepyfile(service=SERVICE)
    pytester.makeconftest(SERVICE_CONFTEST)
    make_agent(pytester, SERVICE_AGENT, fixed=fixed)
    result = prove(pytester, 5)
    if fixed:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    assert cause_of(result) == (
        "asyncio order of answers (fs, shell, web vs web, shell, fs):"
        " answers over sockets arrived in another order"
    )


BLOCKING_AGENTS = {
    # urllib in a pool, each job registering its tool itself: the socket read is the latency
    "urllib-in-a-pool": """
        import json
        import os
        import threading
        import urllib.request
        from concurrent.futures import ThreadPoolExecutor

        def build():
            tools, lock = [], threading.Lock()

            def load(name):
                with urllib.request.urlopen(os.environ["TOOL_SERVICE"] + "/" + name) as answer:
                    found = json.loads(answer.read())["name"]
                with lock:
                    tools.append(found)

            with ThreadPoolExecutor(max_workers=3) as pool:
                list(pool.map(load, ["fs", "web", "shell"]))
            return request(FIX(tools))
    """,
    # subprocess.run in threads the program starts
    "subprocess-in-threads": f"""
        import json
        import os
        import subprocess
        import threading

        HERE = os.path.dirname(os.path.abspath(__file__))

        def build():
            tools = []

            def load(name):
                helper = os.path.join(HERE, "helper.py")
                out = subprocess.run([{PYTHON!r}, helper, name], capture_output=True, text=True)
                tools.append(json.loads(out.stdout)["name"])

            threads = [threading.Thread(target=load, args=(n,)) for n in ("fs", "web", "shell")]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return request(FIX(tools))
    """,
}


@pytest.mark.parametrize("fixed", [False, True], ids=["racy", "fixed"])
@pytest.mark.parametrize("shape", sorted(BLOCKING_AGENTS))
def test_blocking_reads_in_threads(pytester: pytest.Pytester, shape: str, fixed: bool) -> None:
    pytester.makepyfile(service=SERVICE, helper=HELPER)
    pytester.makeconftest(SERVICE_CONFTEST)
    make_agent(pytester, BLOCKING_AGENTS[shape], fixed=fixed)
    result = prove(pytester, 5)
    if fixed:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    assert cause_of(result) == "thread completion order (fs, web, shell vs shell, web, fs)"


# The servers the agents start: MCP over stdio (newline-delimited JSON-RPC) as the protocol
# says, in a few lines of the standard library. The `mcp` SDK is the client under test, in the
# agent's process, where the race is; its own server took 1.9 s of CPU to import, in each of the
# dozens of server processes a proof and its cause-finding start.
MCP_SERVER = """
import json
import sys

name = sys.argv[1]
TOOL = {
    "name": f"{name}_tool",
    "description": f"The {name} tool.",
    "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:  # a notification (initialized): no answer
        continue
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": name, "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        answer = {"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": f"no method {method}"}}
        print(json.dumps(answer), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""

MCP_AGENT = f"""
import asyncio
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))


async def connect(name, tools):
    server = StdioServerParameters(command={PYTHON!r}, args=[os.path.join(HERE, "server.py"), name])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools.extend(tool.name for tool in listed.tools)


async def build():
    tools = []
    await asyncio.gather(*(connect(name, tools) for name in ("fs", "web", "shell")))
    return request(FIX(tools))
"""

MCP_SESSIONS_KEPT = f"""
import os

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))


async def build():
    tools, sessions = [], {{}}
    stop = anyio.Event()

    async def serve(name):
        server = StdioServerParameters(
            command={PYTHON!r}, args=[os.path.join(HERE, "server.py"), name]
        )
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools.extend(tool.name for tool in (await session.list_tools()).tools)
                sessions[name] = session
                await stop.wait()  # kept open for the agent's turns

    async with anyio.create_task_group() as group:
        for name in ("fs", "web", "shell"):
            group.start_soon(serve, name)
        while len(sessions) < 3:
            await anyio.sleep(0.01)
        body = request(FIX(tools))
        stop.set()
    return body
"""

MCP_SHAPES = {"connect-and-list": MCP_AGENT, "sessions-kept-open": MCP_SESSIONS_KEPT}
# The mcp client the agents import (seconds): once for the module, not once per in-process run.
mcp_imported = imported_first("mcp", "mcp.client.stdio")


@pytest.mark.usefixtures("mcp_imported")
@pytest.mark.parametrize("fixed", [False, True], ids=["racy", "fixed"])
@pytest.mark.parametrize("shape", sorted(MCP_SHAPES))
def test_tools_from_mcp_servers_over_stdio(
    pytester: pytest.Pytester, shape: str, fixed: bool
) -> None:
    pytester.makepyfile(server=MCP_SERVER)
    make_agent(pytester, MCP_SHAPES[shape], fixed=fixed, options=", permutations=3")
    result = prove(pytester, 3)
    if fixed:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    cause = cause_of(result)
    assert re.fullmatch(
        r"asyncio order of answers \(fs, shell, web vs web, shell, fs\):"
        r" tools from helper processes arrived in another order",
        cause,
    ), cause
    assert "_run_coro" not in result.stdout.str()


SILENT_HELPER = f"""
import asyncio
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


async def build():
    tools = []

    async def load(name):
        helper = await asyncio.create_subprocess_exec(
            {PYTHON!r}, os.path.join(HERE, "helper.py"), name, stdout=subprocess.PIPE
        )
        out, _ = await helper.communicate()
        tools.append(json.loads(out)["name"])

    async def a_stuck():  # ranked first; its helper never answers, so it gives up
        helper = await asyncio.create_subprocess_exec(
            {PYTHON!r}, "-c", "import time; time.sleep(30)", stdout=subprocess.PIPE
        )
        try:
            await asyncio.wait_for(helper.stdout.read(), 1.0)
        except TimeoutError:
            helper.kill()
            await helper.wait()

    await asyncio.gather(a_stuck(), *(load(name) for name in ("fs", "web", "shell")))
    return request(FIX(tools))
"""


def test_a_helper_that_never_answers_holds_nothing_for_long(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(helper=HELPER)
    make_agent(pytester, SILENT_HELPER, fixed=True, options=", permutations=3")
    prove(pytester, 1).assert_outcomes(passed=1)
