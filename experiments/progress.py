"""Progress for the long commands (the runner's sweep, the benchmark): one rule for both.

On a terminal a tqdm bar redrawn in place; in a log file or a pipe, where a redrawn bar shows nothing
until it closes, a plain line per finished item instead (``Progress.done``)."""

from __future__ import annotations

import sys


class Progress:
    """A tqdm bar on stderr when it is a terminal, else a line per finished item; silent when not `enabled`."""

    def __init__(self, total: int, *, enabled: bool, unit: str = "it", desc: str | None = None):
        from tqdm import tqdm  # lazy: --help stays fast

        self.bar = tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True,
                        disable=not (enabled and sys.stderr.isatty()))
        self.lines = enabled and self.bar.disable
        self.total, self.finished = total, 0

    def done(self, text: str, *, always: bool = False) -> None:
        """One item finished: the bar moves on; `text` becomes a line in a log (on a terminal too if `always`)."""
        self.finished += 1
        if self.lines or always:
            self.bar.write(f"[{self.finished}/{self.total}] {text}", file=sys.stderr)
        self.bar.update(1)

    def note(self, text: str) -> None:
        """What runs now, beside the bar (a line in a log says what finished instead)."""
        self.bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        self.bar.close()
