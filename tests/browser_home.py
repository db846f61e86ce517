"""The environment a test's Chromium runs in: the caller's, with its home and XDG folders under a folder of the
test's own, so that the browser's crash-report settings and dconf cache are not written to the user's home."""

from __future__ import annotations

import os
from pathlib import Path


def private_home(folder: Path) -> dict[str, str]:
    """os.environ with HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME inside `folder` (made if missing)."""
    homes = {"HOME": folder / "home", "XDG_CONFIG_HOME": folder / "config", "XDG_CACHE_HOME": folder / "cache"}
    for path in homes.values():
        path.mkdir(parents=True, exist_ok=True)
    return {**os.environ, **{name: str(path) for name, path in homes.items()}}
