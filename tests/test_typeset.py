"""The reports' and notebooks' maths typeset offline (experiments.typeset, experiments.notebooks), checked as
HTML here and as a page in headless Chromium (skipped, with the install command, without it)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from experiments.typeset import INLINE_MATH, markdown_to_html, math_svg, protect_math
from solvers.solution import ITERATION_LIMIT, Solution
from solvers.checks import ending_note
from tests.browser_home import private_home

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WHY = "**Why $P^* - D^*$ can be slightly negative.** Weak duality holds for points that are *exactly* feasible."


def test_a_formula_is_an_inline_svg_named_by_its_tex():
    svg = math_svg(r"\frac{1}{2}\|w\|^2")
    assert svg.startswith('<svg class="math" role="img" aria-label="\\frac{1}{2}\\|w\\|^2"')
    assert "<path" in svg and "<metadata" not in svg and "<!--" not in svg and "http://www.w3.org/2000/svg" in svg
    assert math_svg(r"\frac{1}{2}\|w\|^2") == svg  # the same page every build (no date, stable ids)
    with pytest.raises(ValueError, match=r"cannot typeset \$\\frac12"):
        math_svg(r"\frac12")  # outside mathtext's subset: named, not drawn wrong


def test_dollars_in_prose_are_no_maths():
    assert [m.group(1) for m in INLINE_MATH.finditer("costs $5 and $6, or $x^2$; $ y $ too")] == ["x^2"]


def test_the_emphasis_around_p_star_minus_d_star_renders():
    page = markdown_to_html(WHY + "\n\n_(none)_\n", Path("."), "t")
    strong = re.search(r"<strong>(.*?)</strong>", page, flags=re.S).group(1)
    assert strong.startswith("Why <svg") and strong.endswith("can be slightly negative.")
    assert re.findall(r"<em>(.*?)</em>", page) == ["exactly", "(none)"]
    assert "**" not in re.sub(r"<svg.*?</svg>", "", page, flags=re.S)


def test_protected_maths_leave_no_asterisk_to_the_markdown_parser():
    text, svgs = protect_math(WHY)
    assert "$" not in text and "P^*" not in text and len(svgs) == 1


def test_a_point_that_passes_the_checks_at_a_limit_is_not_called_unverified():
    sol = Solution(formulation="soft_primal", layer="cvxpy", backend="osqp", status=ITERATION_LIMIT,
                      solver_status=ITERATION_LIMIT, raw_status="maximum iterations reached", iterations=4000,
                      decision=[1.0], checks={"verdict": "verified"})
    note = ending_note(sol)
    assert note.startswith("stopped at its iteration limit after 4000 iterations")
    assert "not verified" not in note and "passes the project's checks" in note
    sol.checks["verdict"] = "relative duality gap 1e-3 > 1e-4"
    assert ending_note(sol).endswith("; not verified: relative duality gap 1e-3 > 1e-4")


# ------------------------------------------------------------------ in a browser, offline


def _shown_in_chromium(page: Path, text_of: str = "body") -> dict:
    """What headless Chromium shows of a page loaded from disk with the network off: every formula's box, the
    visible text of the elements `text_of` selects, and the bold sentences' HTML."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: pip install playwright")
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Chromium: apt-get install -y chromium chromium-driver (Debian), then rerun")
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as home:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"],
                                    env=private_home(Path(home)))
        try:
            context = browser.new_context(offline=True)
            tab = context.new_page()
            tab.goto(page.resolve().as_uri())
            return tab.evaluate("""(selector) => ({
                boxes: [...document.querySelectorAll('svg.math')].map(s => {
                    const r = s.getBoundingClientRect(); return [r.width, r.height]; }),
                text: [...document.querySelectorAll(selector)].map(e => e.innerText).join('\\n'),
                strong: [...document.querySelectorAll('strong')].map(s => s.innerHTML),
            })""", text_of)
        finally:
            browser.close()


def _no_raw_tex(text: str) -> None:
    for raw in ("\\frac", "\\sum", "\\lambda", "^*", "$"):
        assert raw not in text, f"raw TeX {raw!r} shown: ...{text[max(0, text.find(raw) - 80):text.find(raw) + 80]}..."


def test_report_html_shows_its_maths_offline_in_chromium(tmp_path):
    from experiments.runner.cli import main

    out = tmp_path / "run"
    assert main(["--datasets", "example_5_1", "--C", "1", "--formulations", "soft_primal,dual", "--backends", "clarabel",
                 "--no-figures", "-q", "--out", str(out)]) == 0
    shown = _shown_in_chromium(out / "report.html")
    assert len(shown["boxes"]) >= 10 and all(w > 5 and h > 5 for w, h in shown["boxes"])
    _no_raw_tex(shown["text"])
    why = [s for s in shown["strong"] if s.startswith("Why")]
    assert len(why) == 1 and "<svg" in why[0] and why[0].endswith("can be slightly negative.")


def test_benchmark_report_html_typesets_its_notes(tmp_path):
    from experiments.bench.scaling_report import WHAT_WAS_TRIED
    from experiments.typeset import write_html

    report = tmp_path / "report.md"
    report.write_text("# bench\n\n" + "\n".join(WHAT_WAS_TRIED) + "\n")
    shown = _shown_in_chromium(write_html(report))
    assert len(shown["boxes"]) >= 5 and all(w > 5 and h > 5 for w, h in shown["boxes"])
    _no_raw_tex(shown["text"])


@pytest.mark.slow
def test_a_notebook_page_shows_its_maths_offline_in_chromium(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    from experiments.notebooks import main

    monkeypatch.delenv("MPLBACKEND", raising=False)
    assert main(["02_soft_margin_and_slacks", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["02_soft_margin_and_slacks.html",
                                                                         "02_soft_margin_and_slacks.ipynb"]
    shown = _shown_in_chromium(tmp_path / "02_soft_margin_and_slacks.html", text_of=".jp-MarkdownCell")
    assert len(shown["boxes"]) >= 10 and all(w > 5 and h > 5 for w, h in shown["boxes"])
    assert "slack" in shown["text"]  # the text cells were read
    _no_raw_tex(shown["text"])
