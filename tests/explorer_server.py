"""The explorer as a server on a free port, for the tests that talk to it (the door's HTTP requests, the browser)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_LIMIT_S = 120  # generous: the machine is shared; no assertion is on how long it takes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def running_explorer(log_path: Path, *options: str):
    """`python -m experiments.explore` with `options` on a free port, once it answers: yields the port. Its output
    goes to a file, not a pipe: nobody reads a pipe while the tests run (a full 64 KB buffer would block the server
    on its next log line). Stopped at the end, where its log must hold no traceback (bad input is a message in the
    page, never an exception on the server)."""
    port = free_port()
    with open(log_path, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "experiments.explore", "--port", str(port), "--no-browser",
                                 *options], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "MPLBACKEND": "Agg"})
    deadline = time.monotonic() + START_LIMIT_S
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the explorer did not start: {tail(log_path)}")
            time.sleep(0.3)
    try:
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log_path.read_text(errors="replace"), tail(log_path, 60)
