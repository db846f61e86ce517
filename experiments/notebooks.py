"""``python -m experiments.notebooks``: run the notebooks and write each as a page, its maths typeset offline.

Each ``notebooks/*.py`` (jupytext percent source) is executed in a fresh kernel whose working directory is
the output folder (default results/notebooks/, so nothing is left in notebooks/), and written there as
``NAME.ipynb`` (to open in Jupyter) and ``NAME.html``: the figures embedded and every ``$...$`` and
``$$...$$`` of the text drawn as SVG at build time (experiments.typeset), which shows without a network,
where nbconvert's own pages load MathJax from the internet.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from experiments.typeset import math_svg

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
DEFAULT_OUT = Path("results") / "notebooks"
#: $$...$$ (shown on a line of its own) or $...$, across the line breaks of a text cell.
CELL_MATH = re.compile(r"\$\$(?P<display>.+?)\$\$|(?<![\\$])\$(?P<inline>[^$]+?)\$", flags=re.S)


def typeset_cell(text: str) -> str:
    """A Markdown cell with its maths replaced by inline SVG (raw HTML, which nbconvert's Markdown keeps)."""
    def draw(match: re.Match) -> str:
        tex = " ".join((match.group("display") or match.group("inline")).split())
        svg = " ".join(math_svg(tex).split())  # one line: a blank line would end the raw HTML
        if match.group("display"):
            return f'<span style="display: block; text-align: center; margin: 0.6em 0">{svg}</span>'
        return svg

    return CELL_MATH.sub(draw, text)


def build_page(source: Path, out: Path, timeout: int = 300) -> tuple[Path, Path]:
    """Execute one notebook source in `out` and write NAME.ipynb and NAME.html there."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = jupytext.read(source)
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ["PYTHONPATH"] = env_path  # the kernel imports the project from this tree, installed or not
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    ipynb = out / f"{source.stem}.ipynb"
    nbformat.write(nb, ipynb)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = typeset_cell(cell.source)
    body, _ = HTMLExporter().from_notebook_node(nb)
    page = out / f"{source.stem}.html"
    page.write_text(body, encoding="utf-8")
    return ipynb, page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.notebooks",
                                     description="Run the notebooks; write each as .ipynb and as an HTML page with "
                                                 "its maths typeset (no network needed) into --out.")
    parser.add_argument("names", nargs="*", help="notebooks to run, e.g. 02_soft_margin_and_slacks (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    available = {p.stem: p for p in sorted(NOTEBOOKS.glob("*.py"))}
    names = [Path(n).stem for n in args.names] or list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"error: no notebook {', '.join(unknown)}; notebooks: {', '.join(available)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        ipynb, page = build_page(available[name], args.out.resolve())
        print(f"{name}: {page} ({ipynb.name} beside it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
