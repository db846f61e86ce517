"""Every ```python block and every command of the ```bash blocks of README.md runs as printed.

Each python block runs in a fresh interpreter (a fresh namespace, nothing carried over from
another block), with the repository root as working directory and MPLBACKEND=Agg, so a
snippet that uses a name it never defines (the estimator snippet's `X` once) fails here.

Each bash command runs in a fresh temporary folder holding a copy of `examples/`. A command that
reads what an earlier one wrote (the report reads results/sample) is listed in READS and runs
after that one, in the same test and folder, as a reader's would: the order then holds however
the tests are spread over workers, and a command that needs an undeclared earlier one fails
every time, not by the luck of the spread. A command that cannot run here is listed in NOT_RUN
with the reason, and every entry of NOT_RUN must still be in the README.

Convention for python blocks that must not run in the test suite (e.g. a run of many minutes):
make the block's first line the comment ``# readme-test: skip (REASON)``; the reason is
required and the skipped block is still listed in the test report.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP = re.compile(r"^#\s*readme-test:\s*skip\s*\((?P<reason>[^)]+)\)")
BLOCK = re.compile(r"^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$", flags=re.S | re.M)
BASH_BLOCK = re.compile(r"^```bash[ \t]*\n(?P<code>.*?)^```[ \t]*$", flags=re.S | re.M)

#: README commands the tests do not run, each with the reason.
NOT_RUN = {
    'pip install -e ".[test]" && python -m experiments.run':
        "installs into the environment the tests run in; the default sweep runs in tests/test_runner.py (slow)",
    "python -m pytest": "the test suite itself",
    "python -m experiments.explore": "a server that runs until stopped; tests/test_explore_browser.py starts it "
                                     "and drives the page in headless Chromium",
    "python -m experiments.explore --address 0.0.0.0 --allow-host lecture-pc.example --no-browser":
        "a server that runs until stopped (the same as above, on all interfaces)",
}


#: README commands that read what an earlier README command wrote: command -> that earlier command.
READS = {
    "python -m experiments.report results/sample":
        "python -m experiments.run --data examples/sample.csv --label-column species --C 0.1,1,10 --out results/sample",
    "python -m experiments.grade --data exercises/hard-7/data.csv --answer exercises/hard-7-key/key.json --out grades":
        "python -m experiments.exercise --kind hard --seed 7",
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block of a Markdown text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group("code")) for m in BLOCK.finditer(text)]


def bash_commands(text: str) -> list[tuple[int, str]]:
    """(line number, command without its comment) of every line of every ```bash block of a Markdown text."""
    out = []
    for m in BASH_BLOCK.finditer(text):
        first = text.count("\n", 0, m.start()) + 2
        for offset, line in enumerate(m.group("code").splitlines()):
            command = " ".join(shlex.split(line, comments=True))  # the comment after # dropped, quotes kept below
            if command:
                out.append((first + offset, line.split("  #")[0].strip()))
    return out


def command_runs(commands: list[tuple[int, str]], reads: dict[str, str]) -> list[list[tuple[int, str]]]:
    """The commands grouped into runs that share a folder: a command another reads from runs first in that one's."""
    by_command = {command: (line, command) for line, command in commands}
    read_from = set(reads.values())
    runs = []
    for line, command in commands:
        if command in read_from:
            continue
        run = [(line, command)]
        while run[0][1] in reads:
            run.insert(0, by_command[reads[run[0][1]]])
        runs.append(run)
    return runs


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))
COMMANDS = bash_commands(README.read_text(encoding="utf-8"))
RUNS = command_runs(COMMANDS, READS)


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


def test_command_finder_reads_commands_without_their_comments():
    text = "```bash\npython -m a --x 1   # does a\n\n# a comment line\npip install -e \".[test]\" && b  # both\n```\n"
    assert bash_commands(text) == [(2, "python -m a --x 1"), (5, 'pip install -e ".[test]" && b')]


def test_command_runs_put_what_is_read_first_and_keep_every_command():
    commands = [(2, "a --out r"), (3, "b"), (5, "c r"), (7, "d")]
    assert command_runs(commands, {"c r": "a --out r"}) == [[(3, "b")], [(2, "a --out r"), (5, "c r")], [(7, "d")]]
    assert command_runs(commands, {}) == [[c] for c in commands]


def test_every_command_read_from_comes_earlier_in_the_readme():
    line_of = {command: line for line, command in COMMANDS}
    for command, earlier in READS.items():
        assert command in line_of and earlier in line_of, (command, earlier)
        assert line_of[earlier] < line_of[command], (command, earlier)
    assert sorted(c for run in RUNS for c in run) == sorted(COMMANDS)


def test_every_command_not_run_is_still_in_the_readme_with_a_reason():
    commands = {command for _, command in COMMANDS}
    assert set(NOT_RUN) <= commands, set(NOT_RUN) - commands
    assert all(reason.strip() for reason in NOT_RUN.values())


@pytest.fixture
def reader_folder(tmp_path):
    """A reader's working folder: the README's sample CSV where the README says it is."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("run", RUNS, ids=[f"README.md:{run[-1][0]}" for run in RUNS])
def test_readme_command_runs(run, reader_folder):
    line, command = run[-1]
    if command in NOT_RUN:
        pytest.skip(f"README.md:{line} not run: {NOT_RUN[command]}")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    for line, command in run:
        step_env = dict(env)
        if "experiments.notebooks" in command:
            del step_env["MPLBACKEND"]  # the notebooks' kernels draw with Jupyter's inline backend, as in Jupyter
        done = subprocess.run(["bash", "-c", command], cwd=reader_folder, env=step_env, capture_output=True,
                              text=True, timeout=880)
        assert done.returncode == 0, f"README.md:{line}: {command}\n{done.stderr[-3000:]}"
