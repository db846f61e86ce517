"""The explorer answers only to the names it serves on (experiments/explore/door.py): real requests to a live
server, as a browser tricked by DNS rebinding would send them (Host and Origin both a foreign name)."""

from __future__ import annotations

import base64
import http.client
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.explore.door import Door, parse_host
from tests.explorer_server import running_explorer

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = "lecture.example"  # served under this name on purpose (--allow-host)
PROXY = "proxy.example:8443"  # a reverse proxy's name and port (--allow-host HOST:PORT)


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    log = tmp_path_factory.mktemp("door") / "server.log"
    with running_explorer(log, "--allow-host", ALLOWED, "--allow-host", PROXY) as port:
        yield port


def _get(port: int, host: str, path: str = "/", origin: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Host": host, **({"Origin": origin} if origin else {})})
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def _token(page: str) -> str:
    return re.search(r'token":"([^"]+)"', page).group(1)


def _upgrade(port: int, host: str, origin: str, token: str) -> str:
    """The status line of a websocket handshake on /ws, as a browser sends it."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /ws HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: bokeh, {token}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode("latin-1").split("\r\n")[0]


def test_a_foreign_name_gets_no_page_no_token_and_no_websocket(port):
    evil = f"evil.example:{port}"
    status, body = _get(port, evil, origin=f"http://{evil}")
    assert status == 403 and "token" not in body and "--allow-host evil.example" in body
    for path in ("/ws", "/autoload.js", "/metadata", "/static/js/bokeh.min.js"):
        assert _get(port, evil, path)[0] == 403, path
    # a token from the served page, replayed through the foreign name, does not open the websocket either
    token = _token(_get(port, f"127.0.0.1:{port}")[1])
    assert _upgrade(port, evil, f"http://{evil}", token) == "HTTP/1.1 403 Forbidden"


def test_the_served_names_work(port):
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{ALLOWED}:{port}", PROXY):
        status, page = _get(port, host)
        assert status == 200 and "SVM duality explorer" in page, host
        assert _upgrade(port, host, f"http://{host}", _token(page)) == "HTTP/1.1 101 Switching Protocols", host


def test_a_websocket_from_a_foreign_origin_is_refused(port):
    """The served Host, but the page that opens the websocket is another site's (Bokeh's origin allowlist)."""
    served = f"127.0.0.1:{port}"
    token = _token(_get(port, served)[1])
    assert _upgrade(port, served, f"http://evil.example:{port}", token).startswith("HTTP/1.1 403")


def test_the_door_of_every_interface_holds_this_machine_s_addresses():
    door = Door.serving("0.0.0.0", 5006, [parse_host(ALLOWED)])
    assert {"127.0.0.1", "localhost", "[::1]", "0.0.0.0", ALLOWED} <= door.names  # 0.0.0.0: the tab it opens
    assert f"{ALLOWED}:5006" in door.origins and "localhost:5006" in door.origins
    pattern = re.compile(door.foreign_hosts() + "$")
    assert pattern.match("evil.example") and pattern.match("127.0.0.1.evil.example") and pattern.match("")
    assert not any(pattern.match(name) for name in door.names)
    assert Door.serving("127.0.0.1", 5006).names == {"127.0.0.1", "localhost", "[::1]"}


@pytest.mark.parametrize("text, expected", [
    ("Lecture.Example", ("lecture.example", None)), ("proxy.example:8443", ("proxy.example", 8443)),
    ("10.0.0.7", ("10.0.0.7", None)), ("[fd00::2]:80", ("[fd00::2]", 80)), ("fd00::2", ("[fd00::2]", None)),
])
def test_allowed_hosts_are_read(text, expected):
    assert parse_host(text) == expected


@pytest.mark.parametrize("args, words", [
    (["--allow-host", "*.example"], "wildcard"),
    (["--allow-host", "a.example:99999"], "port must be in 1..65535"),
    (["--allow-host", "bad name"], "not a host name"),
])
def test_bad_allowed_hosts_are_refused(args, words):
    out = subprocess.run([sys.executable, "-m", "experiments.explore", *args, "--no-browser"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
