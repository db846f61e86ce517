r"""Formulas typeset offline: the reports' and notebooks' ``$...$`` maths drawn as inline SVG when the page is built.

Markdown keeps the LaTeX (``$P^* - D^*$`` reads as it is, and GitHub renders it); the HTML gets each formula
drawn by matplotlib's mathtext (a dependency already, no TeX and no network) as an SVG element inside the page,
so report.html and the notebooks' pages show the maths on a machine without internet. Mathtext takes a subset
of TeX: ``\frac``, ``\sum``, ``\min``, ``\|``, ``\leq``, ``\mathrm``, sub- and superscripts, Greek letters.
"""

from __future__ import annotations

import functools
import html
import io
import re
from pathlib import Path

#: ``$...$`` on one line, not ``$ 5`` or ``5 $``: a dollar sign in prose stays one.
INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\w$])")
#: The formulas' size in points, about the size of the pages' text.
FONT_SIZE = 12


@functools.lru_cache(maxsize=512)
def math_svg(tex: str) -> str:
    """One formula as an inline <svg> element (its glyphs as paths), aligned on the text's baseline;
    the TeX is its accessible name. A formula mathtext cannot read raises ValueError naming it."""
    import matplotlib
    from matplotlib import mathtext
    from matplotlib.font_manager import FontProperties

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "typeset", "svg.fonttype": "path", "savefig.transparent": True}):
        try:
            depth = mathtext.math_to_image(f"${tex}$", buffer, prop=FontProperties(size=FONT_SIZE), format="svg")
        except ValueError as exc:
            raise ValueError(f"cannot typeset ${tex}$: {' '.join(str(exc).split())}") from None
    svg = buffer.getvalue().decode("utf-8")
    svg = svg[svg.index("<svg"):]  # no XML declaration or DOCTYPE inside HTML
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)  # its date would change every build
    svg = re.sub(r"\s*<!--.*?-->", "", svg, flags=re.S)
    label = html.escape(tex, quote=True)
    return svg.replace("<svg ", f'<svg class="math" role="img" aria-label="{label}" '
                                f'style="vertical-align: -{depth:.2f}pt" ', 1).strip()


def protect_math(text: str) -> tuple[str, dict[str, str]]:
    """`text` with each ``$...$`` replaced by a placeholder a Markdown parser leaves alone (so the ``*`` of
    ``P^*`` is no emphasis), and {placeholder: svg}."""
    svgs: dict[str, str] = {}

    def hold(match: re.Match) -> str:
        key = f"MATHSVG{len(svgs)}X"
        svgs[key] = math_svg(match.group(1))
        return key

    return INLINE_MATH.sub(hold, text), svgs


def restore_math(rendered: str, svgs: dict[str, str]) -> str:
    for key, svg in svgs.items():
        rendered = rendered.replace(key, svg)
    return rendered


HTML_STYLE = """body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
  line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
th { background: #f3f3f3; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f3f3f3; padding: 0 0.2em; }
img { max-width: 100%; }
svg.math { display: inline-block; }"""


def markdown_to_html(text: str, base: Path, title: str) -> str:
    """A whole HTML page from report Markdown (markdown-it-py, CommonMark + GFM tables), its ``$...$`` maths
    typeset and every local image embedded as a base64 data URI: one file a lecturer can send around."""
    import base64

    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    text, svgs = protect_math(text)
    tokens = parser.parse(text)
    for token in tokens:
        for child in token.children or []:
            src = child.attrGet("src") if child.type == "image" else None
            if src and not src.startswith(("http:", "https:", "data:")) and (base / src).is_file():
                encoded = base64.b64encode((base / src).read_bytes()).decode("ascii")
                child.attrSet("src", f"data:image/png;base64,{encoded}")
    body = restore_math(parser.renderer.render(tokens, parser.options, {}), svgs)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>\n{HTML_STYLE}\n</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def write_html(report_md: Path, write=_write) -> Path:
    """report.html next to report.md: the same content, self-contained; `write(path, text)` writes it."""
    text = report_md.read_text(encoding="utf-8")
    title = text.splitlines()[0].lstrip("# ") if text else report_md.parent.name
    target = report_md.with_suffix(".html")
    write(target, markdown_to_html(text, report_md.parent, title))
    return target
