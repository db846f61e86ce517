"""The explorer in a real browser: headless Chromium driven by Playwright against a live server.

Adds points by clicking the plane, moves the C slider, types bad input, and checks the numbers
the page shows against `solvers.api.solve` on the points the page exports. Screenshots go to
the test's tmp dir (and to $EXPLORER_SCREENSHOT, which made the README's results/explorer.png).
Skipped, with the way to install it, when Chromium or Playwright is missing.
"""

import logging
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.explore.compute import LABEL_COLUMN
from solvers.api import solve
from tests.browser_home import private_home
from tests.explorer_server import running_explorer, tail

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
REL = 1e-6  # the page shows what solve() gives on the same points to the `high` profile's verification
PAGE_TIMEOUT_MS = 60_000  # generous: the machine is shared; no assertion is on a duration
DOUBLE_TAP_GAP_MS = 450  # a gesture's constraint (see _click_plane), not a timing assumption about solves
log = logging.getLogger(__name__)

pytestmark = pytest.mark.slow  # a server and a browser: about a minute

playwright_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install playwright")
if not Path(CHROMIUM).exists():
    pytest.skip("needs Chromium: apt-get install -y chromium chromium-driver (Debian), then rerun",
                allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The explorer on a free port (tests.explorer_server): its URL, and its log, which a page that fails to show a
    result quotes."""
    log_path = tmp_path_factory.mktemp("explorer") / "server.log"
    with running_explorer(log_path) as port:
        yield f"http://127.0.0.1:{port}/", log_path


@pytest.fixture()
def page(server, tmp_path):
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=private_home(tmp_path))
        context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        tab = context.new_page()
        tab.set_default_timeout(PAGE_TIMEOUT_MS)
        tab.console_errors = []
        tab.on("console", lambda msg: tab.console_errors.append(msg.text) if msg.type == "error" else None)
        tab.on("pageerror", lambda exc: tab.console_errors.append(f"page error: {exc}"))
        url, log_path = server
        tab.goto(url)
        try:
            _wait_shown(tab)
        except pytest.fail.Exception as exc:  # say what the server and the page said
            pytest.fail(f"{exc}\npage state: {_text(tab, 'state')!r}; console errors: {tab.console_errors}\n"
                        f"server log (last lines):\n{tail(log_path)}")
        yield tab
        tab.screenshot(path=str(tmp_path / "explorer_last.png"))
        browser.close()


# ---------------------------------------------------------------- reading and driving the page


def _text(tab, key: str) -> str:
    return tab.locator(f"[data-key='{key}']").first.inner_text()


def _number(tab, key: str) -> float:
    return float(tab.locator(f"[data-key='{key}']").first.text_content())


def _request_number(tab) -> int:
    found = re.search(r"#(\d+)", _text(tab, "state"))
    return int(found.group(1)) if found else 0


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
    """Wait until the page shows the result of a request newer than `after`, drawn; return its number.

    The server sends the state line after the drawing; two animation frames after it appears,
    Bokeh has painted the plots too.
    """
    shown = _wait_until(lambda: (n := _shown_request(tab)) > after and n, f"a result newer than request #{after}")
    tab.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return shown


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


def _toggle(tab, checkbox: str) -> None:
    """Click a checkbox named by its label (Bokeh's checkbox has no <label for>: get_by_label misses it)."""
    tab.locator(".bk-Checkbox", has_text=checkbox).locator("input[type='checkbox']").click()


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
    clicked = _export_points(tab, tmp_path)
    assert len(clicked) == 7 and (clicked[LABEL_COLUMN] == 1).sum() == 4
    _assert_page_matches_solve(tab, clicked, C=float(_text(tab, "C")))
    tab.screenshot(path=str(tmp_path / "explorer_clicked.png"))

    # drag the last -1 point (clicked at 0.6, 0.7) further down and left: it moves, nothing is added
    box = _plane_box(tab)
    before = _request_number(tab)
    tab.wait_for_timeout(DOUBLE_TAP_GAP_MS)
    tab.mouse.move(box["x"] + 0.6 * box["width"], box["y"] + 0.7 * box["height"])
    tab.mouse.down()
    tab.mouse.move(box["x"] + 0.5 * box["width"], box["y"] + 0.78 * box["height"], steps=8)
    tab.mouse.up()
    _wait_until(lambda: _shown_request(tab) > before and _text(tab, "C") == "1", "the solve after the drag")
    frame = _export_points(tab, tmp_path)
    assert len(frame) == 7
    moved = (frame[["x1", "x2"]] - clicked[["x1", "x2"]]).abs().sum(axis=1) > 0
    assert moved.sum() == 1 and moved.iloc[-1]
    assert frame.iloc[-1]["x1"] < clicked.iloc[-1]["x1"] and frame.iloc[-1]["x2"] < clicked.iloc[-1]["x2"]
    _wait_until(lambda: _shown_request(tab) == _request_number(tab), "the last request after the drag")
    _assert_page_matches_solve(tab, frame, C=1.0)

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

    # hovering the first point shows its alpha, slack and y f(x)
    box = _plane_box(tab)
    tab.mouse.move(box["x"] + 0.25 * box["width"], box["y"] + 0.2 * box["height"])
    tab.locator(".bk-Tooltip", has_text="y f(x)").first.wait_for()
    for label in ("alpha", "slack", "role"):
        assert tab.locator(".bk-Tooltip", has_text=label).count() >= 1, label

    # the figure as PNG: Bokeh's save tool in the plane's toolbar
    with tab.expect_download() as download:
        tab.locator(".bk-ClickButton[title='Save']").first.click()
    png = tmp_path / "plane.png"
    download.value.save_as(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert not tab.console_errors, tab.console_errors


def test_certificate_bad_C_other_layer_and_update_time(page, tmp_path):
    tab = page
    _load(tab, "exercise_5_4")
    # the hard margin on data that are not separable: the verified common point of both hulls
    before = _request_number(tab)
    _toggle(tab, "hard margin (C = inf)")
    _wait_shown(tab, before)
    certificate = tab.get_by_text("NOT separable").first
    certificate.wait_for()
    assert _text(tab, "status") != "optimal"
    assert "common point p = (" in tab.locator("text=common point p").first.inner_text()
    tab.screenshot(path=str(tmp_path / "explorer_certificate.png"))
    _toggle(tab, "hard margin (C = inf)")

    # C typed as text: a message in the page, and the server goes on
    C_box = tab.locator(".bk-input-group", has_text="C (type a number)").locator("input")
    C_box.fill("abc")
    C_box.press("Enter")
    message = tab.locator("[data-key='error']").first
    message.wait_for()
    assert "'abc' is not a number" in message.inner_text()
    before = _request_number(tab)
    C_box.fill("10")
    C_box.press("Enter")
    _wait_until(lambda: _shown_request(tab) > before and _text(tab, "C") == "10", "the solve at C = 10")
    frame = _export_points(tab, tmp_path)
    assert len(frame) == 56
    _assert_page_matches_solve(tab, frame, C=10.0)
    assert float(_text(tab, "P* (primal objective)")) == pytest.approx(float(_text(tab, "D* (dual objective)")),
                                                                        rel=1e-6)

    # the other layer side by side
    before = _request_number(tab)
    _toggle(tab, "also solve through the other layer")
    _wait_shown(tab, before)
    table = tab.locator("table").filter(has_text="cvxpy").first
    table.wait_for()
    assert "pyomo" in table.inner_text() and table.inner_text().count("optimal") == 2
    _toggle(tab, "also solve through the other layer")

    # 200 points: how long a change of C takes to show (logged, not asserted: the machine is shared)
    _load(tab, "overlapping(200)")
    handle = _slider_handle(tab)
    handle.focus()
    seconds = []
    for _ in range(5):
        before = _wait_shown(tab, 0)
        start = time.perf_counter()
        handle.press("ArrowRight")
        _wait_shown(tab, before)
        seconds.append(time.perf_counter() - start)
    assert _points(tab) == 200
    message = (f"explorer: a change of C on 200 points showed in the browser after "
               f"{', '.join(f'{s:.3f}' for s in seconds)} s (median {np.median(seconds):.3f} s; "
               f"pyomo/clarabel, dual, profile high)")
    log.warning(message)
    (tmp_path / "update_time.txt").write_text(message + "\n")
    print(message)
    screenshot = tmp_path / "explorer_200.png"
    tab.screenshot(path=str(screenshot))
    if os.environ.get("EXPLORER_SCREENSHOT"):  # how the README's results/explorer.png was made
        shutil.copy(screenshot, os.environ["EXPLORER_SCREENSHOT"])
    assert not tab.console_errors, tab.console_errors


def test_member_chooser_switches_to_epsilon_svr_and_shows_its_tube(page, tmp_path):
    """One switch of member: the regressions read the plane as 1-D data, and the page's P*, D*, b* are
    solvers.family.solve's on the points it exports."""
    from solvers.family import solve as family_solve

    tab = page
    before = _request_number(tab)
    tab.get_by_label("Member").select_option("epsilon-SVR")
    _wait_until(lambda: _shown_request(tab) > before and _text(tab, "member") == "eps_svr", "the epsilon-SVR solve")
    _wait_shown(tab, before)
    assert _text(tab, "status") == "optimal" and _text(tab, "formulation") == "eps_svr_kernel_dual"
    frame = _export_points(tab, tmp_path)
    assert len(frame) == _points(tab) == 40
    ref = family_solve("eps_svr_primal", frame[["x1"]].to_numpy(), frame["x2"].to_numpy(), layer="pyomo",
                       backend="clarabel", C=float(_text(tab, "C")), epsilon=float(_text(tab, "epsilon")),
                       profile="high")
    assert ref.status == "optimal"
    P, D = float(_text(tab, "P* (primal objective)")), float(_text(tab, "D* (dual objective)"))
    assert P == pytest.approx(ref.checks["primal_objective"], rel=REL) and D == pytest.approx(P, rel=REL)
    f_scale = float(np.abs(frame["x2"]).max())  # b in the targets' units
    assert abs(float(_text(tab, "b*")) - ref.b) <= REL * f_scale + 5e-6 * abs(ref.b)  # shown to 6 digits
    tab.screenshot(path=str(tmp_path / "explorer_eps_svr.png"))
    assert not tab.console_errors, tab.console_errors
