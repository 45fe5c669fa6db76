"""What the tests of refused commands share: the one line a refusal prints, and a local port
nothing listens on."""

from __future__ import annotations

import socket


def one_error_line(err: str) -> str:
    """The one line of a refused command's stderr (no traceback, no warnings, nothing else)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]
    return lines[0]


def closed_port() -> int:
    """A local TCP port that was free a moment ago (nothing listens on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
