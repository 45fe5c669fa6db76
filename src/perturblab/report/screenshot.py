"""A PNG screenshot of an HTML file, rendered by headless Chromium.

The browser is ``$PERTURBLAB_CHROMIUM``, else Debian's ``/usr/bin/chromium``, else ``chromium`` or
``chromium-browser`` on ``PATH`` (``./setup.sh --browser`` installs Debian's package). It runs
with a fresh temporary profile, no network services, and is killed after ``timeout`` seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ..errors import InputError

ENV_VAR = "PERTURBLAB_CHROMIUM"
CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
INSTALL_HINT = ("install Chromium with `./setup.sh --browser` (Debian: `apt-get install chromium`) or set "
                f"{ENV_VAR}=/path/to/chromium")


def find_chromium(chromium: str | None = None) -> str | None:
    """The Chromium executable to use: ``chromium`` if given, else ``$PERTURBLAB_CHROMIUM`` if set
    (an explicit choice is the only one tried), else the first of :data:`CANDIDATES` found;
    ``None`` when there is none."""
    explicit = chromium or os.environ.get(ENV_VAR) or None
    for cand in (explicit,) if explicit else CANDIDATES:
        found = shutil.which(cand)
        if found:
            return found
    return None


def chromium_args(exe: str, html_path: Path, png_path: Path, width: int, height: int, profile: str) -> list[str]:
    """The command line that renders ``html_path`` into ``png_path`` at ``width`` × ``height``."""
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", f"--user-data-dir={profile}",
            f"--screenshot={png_path}", f"--window-size={width},{height}", html_path.resolve().as_uri()]


def screenshot(html_path: str | Path, png_path: str | Path, width: int = 1280, height: int = 2400,
               chromium: str | None = None, timeout: float = 90.0) -> Path:
    """Render ``html_path`` with headless Chromium into a ``width`` × ``height`` PNG at ``png_path``.

    Raises :class:`~perturblab.errors.InputError` when no Chromium is found, the sizes are not
    positive, or the browser fails or produces no image within ``timeout`` seconds.
    """
    html_path, png_path = Path(html_path), Path(png_path)
    if not html_path.is_file():
        raise InputError(f"screenshot: {html_path} is not a file; write the report first")
    if width <= 0 or height <= 0:
        raise InputError(f"screenshot: window size {width}x{height} must be positive, e.g. 1280x2400")
    exe = find_chromium(chromium)
    if exe is None:
        if chromium or os.environ.get(ENV_VAR):
            what = (f"Chromium {chromium!r} is not an executable" if chromium
                    else f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not an executable")
        else:
            what = f"no Chromium found (looked for {', '.join(CANDIDATES)})"
        raise InputError(f"screenshot: {what}; {INSTALL_HINT}")
    png_path = png_path.resolve()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    png_path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="perturblab-chromium-") as profile:
        args = chromium_args(exe, html_path, png_path, width, height, profile)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            output = ""
            if not png_path.is_file():
                raise InputError(f"screenshot: {exe} gave no image within {timeout:.0f} s; check that it "
                                 f"starts (`{exe} --headless --version`)") from None
        finally:
            _kill_group(proc)
    if not png_path.is_file() or png_path.stat().st_size == 0:
        tail = "; ".join(line for line in (output or "").strip().splitlines()[-3:])
        raise InputError(f"screenshot: {exe} exited with status {proc.returncode} and wrote no image "
                         f"to {png_path}" + (f" ({tail})" if tail else ""))
    return png_path


def _kill_group(proc: subprocess.Popen) -> None:
    """End the browser started by :func:`screenshot` and its helper processes (its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    else:
        try:  # helpers of a browser that already exited
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
