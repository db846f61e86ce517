"""Every ```python block of README.md runs as printed.

Each block runs in a fresh interpreter (a fresh namespace, nothing carried over from
another block), with the repository root as working directory and MPLBACKEND=Agg, so a
snippet that uses a name it never defines (the estimator snippet's `X` once) fails here.

Convention for blocks that must not run in the test suite (e.g. a run of many minutes):
make the block's first line the comment ``# readme-test: skip (REASON)``; the reason is
required and the skipped block is still listed in the test report. Other fenced blocks
(```bash, tables, output) are not executed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP = re.compile(r"^#\s*readme-test:\s*skip\s*\((?P<reason>[^)]+)\)")
BLOCK = re.compile(r"^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$", flags=re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block of a Markdown text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group("code")) for m in BLOCK.finditer(text)]


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 2  # "Use it from Python" and the estimator


def test_block_finder_sees_every_block_and_the_skip_marker():
    text = "x\n```python\na = 1\n```\n```bash\nls\n```\n```python\n# readme-test: skip (slow)\nb\n```\n"
    blocks = python_blocks(text)
    assert [(line, code) for line, code in blocks] == [(2, "a = 1\n"), (8, "# readme-test: skip (slow)\nb\n")]
    assert SKIP.match(blocks[1][1]).group("reason") == "slow" and not SKIP.match(blocks[0][1])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_python_block_runs(line, code):
    marker = SKIP.match(code)
    if marker:
        pytest.skip(f"README.md:{line} marked: {marker.group('reason')}")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=280)
    assert done.returncode == 0, f"README.md:{line}: the block fails:\n{done.stderr[-3000:]}"
