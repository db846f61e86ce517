"""conftest.SLOW_CASES names real cases: each node id it moves to the slow run, and the light twin of the same test
that stays in the default run, are collected. A renamed test or parameter would otherwise put the costly case
back into the default run, or leave its behaviour checked by no default case, without a word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SLOW_CASES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_every_slow_case_and_its_twin_are_collected():
    files = sorted({node.split("::")[0] for node in SLOW_CASES})
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow or not slow",
                          "-p", "no:cacheprovider", *files], cwd=ROOT, capture_output=True, text=True, timeout=600)
    collected = {line.strip() for line in out.stdout.splitlines() if "::" in line}
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    for node, twin in SLOW_CASES.items():
        assert node in collected, f"SLOW_CASES names {node}, which is not collected"
        twin_node = node[:node.index("[")] + twin
        assert twin_node in collected, f"{node}'s light twin {twin_node} is not collected"
