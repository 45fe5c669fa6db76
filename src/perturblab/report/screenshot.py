"""A PNG screenshot of an HTML file, or the page's DOM after its script ran, by headless Chromium.

The browser is ``$PERTURBLAB_CHROMIUM``, else Debian's ``/usr/bin/chromium``, else ``chromium`` or
``chromium-browser`` on ``PATH`` (``./setup.sh --browser`` installs Debian's package). It runs
with a fresh temporary profile, no network services, and is killed after ``timeout`` seconds.

Headless Chromium lays a window out at least :data:`MIN_WINDOW_WIDTH` pixels wide, and its
screenshot of a window scrolled down (to the target of a URL fragment) comes out blank. So a
narrower width (a phone's 390, say) or a page opened at a fragment is rendered in a frame of
exactly the size asked for inside a small page of its own: the framed page's layout and media
queries see that width, and it scrolls inside the frame.
"""

from __future__ import annotations

import html
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
#: the narrowest window headless Chromium lays out; narrower views go through a frame
MIN_WINDOW_WIDTH = 500
#: the page that shows ``url`` in a frame of ``width`` × ``height`` (see the module's note); with
#: ``copy``, a script that puts the framed page's DOM in place of its own once the frame has loaded
FRAME_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html,body{{margin:0;overflow:hidden;background:#fff}}
iframe{{display:block;border:0}}</style></head>
<body><iframe id="page" src="{url}" width="{width}" height="{height}"></iframe>{copy}</body></html>
"""
COPY_SCRIPT = """<script>
var frame = document.getElementById("page");
frame.addEventListener("load", function () {
  var doc = frame.contentDocument;
  if (doc) { document.replaceChild(document.importNode(doc.documentElement, true), document.documentElement); }
});
</script>"""


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


def _require_chromium(chromium: str | None, what: str) -> str:
    """:func:`find_chromium`, or :class:`InputError` saying what was looked for and how to install it."""
    exe = find_chromium(chromium)
    if exe is None:
        if chromium or os.environ.get(ENV_VAR):
            found = (f"Chromium {chromium!r} is not an executable" if chromium
                     else f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not an executable")
        else:
            found = f"no Chromium found (looked for {', '.join(CANDIDATES)})"
        raise InputError(f"{what}: {found}; {INSTALL_HINT}")
    return exe


def _check(html_path: Path, width: int, height: int, what: str) -> None:
    if not html_path.is_file():
        raise InputError(f"{what}: {html_path} is not a file; write the report first")
    if width <= 0 or height <= 0:
        raise InputError(f"{what}: window size {width}x{height} must be positive, e.g. 1280x2400")


def base_args(exe: str, width: int, height: int, profile: str) -> list[str]:
    """The flags every run shares: headless, no sandbox, no network services, a fresh profile."""
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", f"--user-data-dir={profile}",
            f"--window-size={width},{height}"]


def chromium_args(exe: str, html_path: Path, png_path: Path, width: int, height: int, profile: str) -> list[str]:
    """The command line that renders ``html_path`` into ``png_path`` at ``width`` × ``height``."""
    return base_args(exe, width, height, profile) + [f"--screenshot={png_path}", html_path.resolve().as_uri()]


def _framed(url: str, width: int, height: int, folder: str, copy: bool = False) -> str:
    """The URI of a page written into ``folder`` that shows ``url`` in a ``width`` × ``height``
    frame (and, with ``copy``, takes the framed page's DOM as its own once it has loaded)."""
    page = Path(folder) / "frame.html"
    page.write_text(FRAME_PAGE.format(url=html.escape(url), width=width, height=height,
                                      copy=COPY_SCRIPT if copy else ""), encoding="utf-8")
    return page.as_uri()


def _run(args: list[str], timeout: float) -> tuple[subprocess.Popen, str, str, bool]:
    """Run the browser in a session of its own; (process, stdout, stderr, whether it timed out).
    The whole session is killed at the end, helpers included."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err, timed_out = "", "", True
    finally:
        _kill_group(proc)
    return proc, out or "", err or "", timed_out


def _tail(*texts: str) -> str:
    lines = [line for t in texts for line in t.strip().splitlines() if line.strip()]
    return "; ".join(lines[-3:])


def page_url(html_path: Path, fragment: str = "") -> str:
    """The ``file:`` URL of ``html_path``, with ``#fragment`` when one is given (as in a link:
    percent-encoded, with or without its ``#``)."""
    fragment = fragment.lstrip("#")
    return html_path.resolve().as_uri() + (f"#{fragment}" if fragment else "")


def screenshot(html_path: str | Path, png_path: str | Path, width: int = 1280, height: int = 2400,
               chromium: str | None = None, timeout: float = 90.0, fragment: str = "") -> Path:
    """Render ``html_path`` with headless Chromium into a ``width`` × ``height`` PNG at ``png_path``
    (a width under :data:`MIN_WINDOW_WIDTH` through a frame of that width), opened at ``#fragment``
    when one is given (the report's sort and filter, say).

    Raises :class:`~perturblab.errors.InputError` when no Chromium is found, the sizes are not
    positive, or the browser fails or produces no image within ``timeout`` seconds.
    """
    html_path, png_path = Path(html_path), Path(png_path)
    _check(html_path, width, height, "screenshot")
    exe = _require_chromium(chromium, "screenshot")
    png_path = png_path.resolve()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    png_path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="perturblab-chromium-") as tmp:
        profile = os.path.join(tmp, "profile")
        args = chromium_args(exe, html_path, png_path, width, height, profile)
        url = page_url(html_path, fragment)
        args[-1] = _framed(url, width, height, tmp) if width < MIN_WINDOW_WIDTH or fragment else url
        proc, out, err, timed_out = _run(args, timeout)
    if timed_out and not png_path.is_file():
        raise InputError(f"screenshot: {exe} gave no image within {timeout:.0f} s; check that it "
                         f"starts (`{exe} --headless --version`)")
    if not png_path.is_file() or png_path.stat().st_size == 0:
        tail = _tail(out, err)
        raise InputError(f"screenshot: {exe} exited with status {proc.returncode} and wrote no image "
                         f"to {png_path}" + (f" ({tail})" if tail else ""))
    return png_path


def dump_dom(html_path: str | Path, fragment: str = "", width: int = 1280, height: int = 2400,
             chromium: str | None = None, timeout: float = 90.0, virtual_time_budget: int | None = None) -> str:
    """The DOM of ``html_path`` as headless Chromium serializes it once the page has loaded and its
    script has run, opened at ``#fragment`` (as in a link: percent-encoded, without the ``#``) in a
    ``width`` × ``height`` window; ``virtual_time_budget`` (ms) lets timers run before the dump.

    A width under :data:`MIN_WINDOW_WIDTH` opens the page in a frame of that width; the framed
    page's DOM is what comes back (file pages may read each other's DOM in that run only).
    Raises :class:`~perturblab.errors.InputError` as :func:`screenshot` does.
    """
    html_path = Path(html_path)
    _check(html_path, width, height, "dump_dom")
    exe = _require_chromium(chromium, "dump_dom")
    url = page_url(html_path, fragment)
    with tempfile.TemporaryDirectory(prefix="perturblab-chromium-") as tmp:
        args = base_args(exe, width, height, os.path.join(tmp, "profile")) + ["--dump-dom"]
        if virtual_time_budget is not None:
            args.append(f"--virtual-time-budget={int(virtual_time_budget)}")
        if width < MIN_WINDOW_WIDTH:
            args += ["--allow-file-access-from-files", _framed(url, width, height, tmp, copy=True)]
        else:
            args.append(url)
        proc, out, err, timed_out = _run(args, timeout)
    if timed_out:
        raise InputError(f"dump_dom: {exe} gave no page within {timeout:.0f} s; check that it "
                         f"starts (`{exe} --headless --version`)")
    if "<html" not in out:
        tail = _tail(err)
        raise InputError(f"dump_dom: {exe} exited with status {proc.returncode} and printed no page"
                         + (f" ({tail})" if tail else ""))
    if '<iframe id="page"' in out:
        raise InputError(f"dump_dom: {exe} did not let the frame page read {html_path}; try a window "
                         f"at least {MIN_WINDOW_WIDTH} pixels wide")
    return out


def _kill_group(proc: subprocess.Popen) -> None:
    """End a browser started here and its helper processes (its own session)."""
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
