"""The explorer in a real browser: headless Chromium driven by Playwright against a live server.

Adds points by clicking the plane, moves the C slider, types bad input, and checks the numbers
the page shows against `solvers.api.solve` on the points the page exports. Screenshots go to
the test's tmp dir (and to $EXPLORER_SCREENSHOT, which made the README's results/explorer.png).
Skipped, with the way to install it, when Chromium or Playwright is missing.
"""

import io
import logging
import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.explore_compute import LABEL_COLUMN
from solvers.api import solve

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
REL = 1e-6  # the page shows what solve() gives on the same points to the `high` profile's verification
PAGE_TIMEOUT_MS = 60_000  # generous: the machine is shared; no assertion is on a duration
DOUBLE_TAP_GAP_MS = 450  # a gesture's constraint (see _click_plane), not a timing assumption about solves
log = logging.getLogger(__name__)

playwright_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install playwright")
if not Path(CHROMIUM).exists():
    pytest.skip("needs Chromium: apt-get install -y chromium chromium-driver (Debian), then rerun",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "experiments.explore", "--port", str(port), "--no-browser"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the explorer did not start: {proc.stdout.read()}")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    assert proc.returncode is not None


@pytest.fixture()
def page(server, tmp_path):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        tab = context.new_page()
        tab.set_default_timeout(PAGE_TIMEOUT_MS)
        tab.console_errors = []
        tab.on("console", lambda msg: tab.console_errors.append(msg.text) if msg.type == "error" else None)
        tab.on("pageerror", lambda exc: tab.console_errors.append(f"page error: {exc}"))
        tab.goto(server)
        _wait_shown(tab)
        yield tab
        tab.screenshot(path=str(tmp_path / "explorer_last.png"))
        browser.close()


# ---------------------------------------------------------------- reading and driving the page


def _text(tab, key: str) -> str:
    return tab.locator(f"[data-key='{key}']").first.inner_text()


def _number(tab, key: str) -> float:
    return float(tab.locator(f"[data-key='{key}']").first.text_content())


def _request_number(tab) -> int:
    text = _text(tab, "state")
    return int(text.split("#")[1].split()[0]) if "#" in text else 0


def _wait_until(condition, what: str, timeout_s: float = PAGE_TIMEOUT_MS / 1000):
    """Poll `condition()` (reads through Playwright's locators, which see into Panel's shadow roots)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"the page did not show {what} within {timeout_s:.0f} s")


def _shown_request(tab) -> int:
    """The number of the request whose result the page shows (0 while solving or after an error)."""
    text = _text(tab, "state")
    return _request_number(tab) if text.endswith("shown") else 0


def _wait_shown(tab, after: int = 0) -> int:
    """Wait until the page shows the result of a request newer than `after`; return its number."""
    return _wait_until(lambda: (n := _shown_request(tab)) > after and n, f"a result newer than request #{after}")


def _load(tab, start: str) -> int:
    before = _request_number(tab)
    tab.locator("select").first.select_option(start)
    if start == "empty":
        return before
    return _wait_shown(tab, before)


def _plane_box(tab) -> dict:
    """The plane's canvas (the first Bokeh plot) in page pixels."""
    return tab.locator(".bk-Canvas").first.bounding_box()


def _points(tab) -> int:
    return int(_text(tab, "points"))


def _click_plane(tab, fx: float, fy: float) -> None:
    """Click at fractions (fx, fy) of the plane's canvas (0, 0 = top left), inside its data frame.

    Two clicks within Bokeh's double-tap interval (300 ms) are one double tap, not two points
    (a person clicking is slower than that), so a click waits that long after the previous one;
    then it waits until the server holds the new point.
    """
    n = _points(tab)
    box = _plane_box(tab)
    tab.wait_for_timeout(DOUBLE_TAP_GAP_MS)
    tab.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    _wait_until(lambda: _points(tab) == n + 1, f"{n + 1} points")


def _select_class(tab, label: str) -> None:
    tab.get_by_role("button", name=label, exact=True).click()


def _export_points(tab, tmp_path: Path) -> pd.DataFrame:
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Export points (CSV)").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    return pd.read_csv(path)


def _slider_handle(tab):
    return tab.locator(".noUi-handle").first


def _assert_page_matches_solve(tab, frame: pd.DataFrame, C: float) -> None:
    X = frame[["x1", "x2"]].to_numpy()
    y = frame[LABEL_COLUMN].to_numpy(dtype=float)
    ref = solve("dual", X, y, layer="pyomo", backend="clarabel", C=C, profile="high")
    assert ref.status == "optimal"
    w = np.array([_number(tab, "w1"), _number(tab, "w2")])
    scale = float(np.linalg.norm(ref.w))
    assert np.linalg.norm(w - ref.w) <= REL * scale, (w, ref.w)
    # b in units of the decision function: |b - b*| against the size of f on the data
    f_scale = float(np.abs(X @ ref.w).max() + abs(ref.b))
    b_shown = float(_text(tab, "b*"))
    assert abs(b_shown - ref.b) <= max(REL * f_scale, 5e-6 * abs(ref.b)), (b_shown, ref.b)  # shown to 6 digits
    gap = float(_text(tab, "relative gap"))
    assert gap <= 1e-6 and abs(gap - ref.checks["rel_duality_gap"]) <= 1e-6
    assert _text(tab, "status") == "optimal"


# ---------------------------------------------------------------- the tests


def test_click_points_move_C_and_match_solve(page, tmp_path):
    tab = page
    _load(tab, "empty")
    # an empty plane is bad input, shown in the page (not a crash)
    message = tab.locator("[data-key='error']").first
    message.wait_for()
    assert "has no point" in message.inner_text()

    _select_class(tab, "+1")
    for fx, fy in ((0.25, 0.2), (0.35, 0.3), (0.2, 0.4), (0.45, 0.15)):
        _click_plane(tab, fx, fy)
    assert "class -1 has no point" in tab.locator("[data-key='error']").first.inner_text()
    _select_class(tab, "-1")
    before = _request_number(tab)
    for fx, fy in ((0.7, 0.6), (0.8, 0.45), (0.6, 0.7)):
        _click_plane(tab, fx, fy)
    _wait_until(lambda: _shown_request(tab) > before and _points(tab) == 7, "the solve of 7 points")
    frame = _export_points(tab, tmp_path)
    assert len(frame) == 7 and (frame[LABEL_COLUMN] == 1).sum() == 4
    _assert_page_matches_solve(tab, frame, C=float(_text(tab, "C")))
    tab.screenshot(path=str(tmp_path / "explorer_clicked.png"))

    # move the C slider by keyboard: 20 steps of 0.05 in log10 C -> C = 10
    before = _request_number(tab)
    handle = _slider_handle(tab)
    handle.focus()
    for _ in range(20):
        handle.press("ArrowRight")
    _wait_until(lambda: _shown_request(tab) > before and _text(tab, "C") == "10", "C = 10")
    C = float(_text(tab, "C"))
    assert C == pytest.approx(10.0, rel=1e-9)
    _assert_page_matches_solve(tab, frame, C=C)
    tab.screenshot(path=str(tmp_path / "explorer_C10.png"))
    assert not tab.console_errors, tab.console_errors
