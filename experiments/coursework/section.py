"""The prose side of coursework: a report section (:class:`Section`) and the helpers that write
its Markdown, tables and figures into the output directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure


@dataclass
class Section:
    """What a coursework function wrote: a report section and the files behind it.

    Attributes:
        name: the runner suite's name, e.g. ``"demo-linear"``.
        title: the section's heading.
        markdown: the section (heading, explanation, tables, figure links relative
            to the output directory); also written to ``<out_dir>/<stem>.md``.
        figures: PNG files written.
        tables: CSV files written, by short name.
        table: the main table as a DataFrame.
        passed: for checked sections (seeds), whether every check passed; else None.
        summary: for checked sections, the verdict in one line (the console's last line); else None.
    """

    name: str
    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)
    table: pd.DataFrame | None = None
    passed: bool | None = None
    summary: str | None = None


def output_dir(out_dir) -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_figure(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def md_table(df: pd.DataFrame) -> str:
    # A "|" inside a cell would end the cell: escape it.
    df = df.apply(lambda col: col.map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v))
    return df.to_markdown(index=False, floatfmt=".4g")


def fmt_vec(v) -> str:
    return "(" + ", ".join(f"{x:.4f}" for x in np.asarray(v, dtype=float).ravel()) + ")"


def write_section(out: Path, stem: str, section: Section) -> Section:
    (out / f"{stem}.md").write_text(section.markdown + "\n")
    return section


def figure_section(out: Path, stem: str, name: str, title: str, markdown: str,
                   fig: Figure, df: pd.DataFrame) -> Section:
    """A section of one figure and one table: writes ``<stem>.png``, ``<stem>.csv`` and ``<stem>.md``."""
    fig_path = save_figure(fig, out / f"{stem}.png")
    csv = out / f"{stem}.csv"
    df.to_csv(csv, index=False)
    return write_section(out, stem, Section(name, title, markdown, [fig_path], {stem: csv}, df))
