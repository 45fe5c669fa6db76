"""The trend page of a history: one self-contained HTML page of every estimate over releases.

Per target, one small chart per estimate key: the estimate over the releases (in the order
stored) with its 95 % interval as a band, the accepted baselines as rings, and each release that
regressed against the accepted baseline before it (:func:`~.check.compare_releases`) as a red
point; below, a sortable table of every estimate with a link to each release's report (relative
to the page's folder, so the page and the reports stay linked when copied together). The page is
as safe as the report: every text escaped, inline SVG only, and a Content-Security-Policy that
allows nothing but the report's one script (by its hash), which sorts and filters the table.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

from markupsafe import Markup, escape

from .check import compare_releases, last_accepted
from .release import Release
from .store import History

TEMPLATE = "trend.html.j2"
#: chart size in SVG units (the chart scales to its box)
WIDTH, HEIGHT, PAD_L, PAD_R, PAD_T, PAD_B = 360, 170, 54, 14, 12, 40


@dataclass
class Point:
    """One release's estimate in a chart."""

    release: str
    value: float | None
    low: float | None
    high: float | None
    accepted: bool
    verdict: str  # regressed, improved, moved, same, or "" (no baseline)


def _fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    text = f"{v:.3f}"
    return "0.000" if text == "-0.000" else text


def chart(points: Sequence[Point], title: str) -> Markup:
    """The inline SVG of one estimate over releases (every text escaped)."""
    vals = [v for p in points for v in (p.value, p.low, p.high) if v is not None]
    if not vals:
        return Markup("")
    lo, hi = min(vals), max(vals)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.05, hi + 0.05
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    k = len(points)
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def x(i: int) -> float:  # the first and last points inset, clear of the axis labels
        inset = 12
        return PAD_L + inset + ((inner_w - 2 * inset) / 2 if k == 1 else (inner_w - 2 * inset) * i / (k - 1))

    def y(v: float) -> float:
        return PAD_T + inner_h * (hi - v) / (hi - lo)

    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" class="chart"><title>{escape(title)}</title>']
    for v in (lo + pad, (lo + hi) / 2, hi - pad):  # three gridlines with their values
        parts.append(f'<line x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                     f'<text x="{PAD_L - 4}" y="{y(v) + 3:.1f}" class="ax" text-anchor="end">{_fmt(v)}</text>')
    band = [(x(i), p.low, p.high) for i, p in enumerate(points) if p.low is not None and p.high is not None]
    if len(band) > 1:
        pts = " ".join(f"{bx:.1f},{y(h):.1f}" for bx, _, h in band) + " " + \
              " ".join(f"{bx:.1f},{y(lw):.1f}" for bx, lw, _ in reversed(band))
        parts.append(f'<polygon points="{pts}" class="band"/>')
    for bx, lw, h in band:
        parts.append(f'<line x1="{bx:.1f}" x2="{bx:.1f}" y1="{y(h):.1f}" y2="{y(lw):.1f}" class="whisker"/>')
    line = [(x(i), p.value) for i, p in enumerate(points) if p.value is not None]
    if len(line) > 1:
        parts.append('<polyline points="' + " ".join(f"{lx:.1f},{y(v):.1f}" for lx, v in line) + '" class="line"/>')
    for i, p in enumerate(points):
        if p.value is None:
            continue
        cls = "pt " + ("reg" if p.verdict == "regressed" else "imp" if p.verdict == "improved" else "")
        tip = (f"{p.release}: {_fmt(p.value)} [{_fmt(p.low)}, {_fmt(p.high)}]"
               + (" — accepted baseline" if p.accepted else "")
               + (f" — {p.verdict}" if p.verdict not in ("", "same") else ""))
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(p.value):.1f}" r="{5 if p.verdict == "regressed" else 3.5}" '
                     f'class="{cls.strip()}"><title>{escape(tip)}</title></circle>')
        if p.accepted:
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(p.value):.1f}" r="7.5" class="acc"/>')
    step = max(1, (k + 5) // 6)  # at most about six release labels under the axis
    for i, p in enumerate(points):
        if i % step == 0 or i == k - 1:
            label = p.release if len(p.release) <= 14 else p.release[:13] + "…"
            parts.append(f'<text x="{x(i):.1f}" y="{HEIGHT - PAD_B + 16}" class="ax" text-anchor="middle">'
                         f'{escape(label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def verdicts(history: History, releases: Sequence[Release]) -> dict[str, dict[tuple[str, str, str], str]]:
    """Release label -> (target, study, key) -> its verdict against the last release accepted
    before it (of its setup); releases with no such baseline are left out."""
    out: dict[str, dict[tuple[str, str, str], str]] = {}
    for r in releases:
        baseline = last_accepted(releases, r)
        if baseline is not None:
            out[r.label] = {(c.target, c.study, c.key): c.verdict for c in compare_releases(history, r, baseline)}
    return out


def _when(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _link(path: str | None, at: Path | None = None) -> str:
    """The link to a release's report (stored as an absolute path): relative to the folder ``at``
    the page is written in, so that the page and the reports copied together (a CI artifact, a
    web server) keep their links; a ``file://`` address where no relative path leads there (no
    ``at``, another drive)."""
    if not path:
        return ""
    p = Path(path)
    if not p.is_absolute():
        return quote(p.as_posix())
    if at is not None:
        try:
            return quote(Path(os.path.relpath(p, Path(at).resolve())).as_posix())
        except ValueError:  # another drive (Windows): no relative path
            pass
    return p.as_uri()


def render_trend(history: History, title: str | None = None, at: str | Path | None = None) -> str:
    """The trend page of ``history`` as an HTML string; ``at``: the folder it will be written in,
    which the links to the reports are relative to (None: absolute ``file://`` links)."""
    import jinja2

    from .. import __version__
    from ..report.html import content_security_policy, report_script

    releases = history.releases(estimates=True)
    flags = verdicts(history, releases)
    targets: dict[str, dict[tuple[str, str], list[Point]]] = {}
    order: dict[str, int] = {r.label: i for i, r in enumerate(releases)}
    measures: dict[tuple[str, str], str] = {}
    rows = []
    for r in releases:
        for e in r.estimates:
            verdict = flags.get(r.label, {}).get((e["target"], e["study"], e["key"]), "")
            targets.setdefault(e["target"], {}).setdefault((e["study"], e["key"]), []).append(
                Point(r.label, e["value"], e["low"], e["high"], r.accepted is not None, verdict))
            measures[(e["study"], e["key"])] = e["measure"]
            rows.append({"release": r.label, "order": order[r.label], "when": _when(r.created), "target": e["target"],
                         "spec": r.models.get(e["target"], {}).get("spec", ""), "study": e["study"], "key": e["key"],
                         "value": _fmt(e["value"]), "low": _fmt(e["low"]), "high": _fmt(e["high"]),
                         "n": "" if e["n"] is None else str(e["n"]), "level": e["level"] or "",
                         "verdict": verdict, "accepted": "yes" if r.accepted is not None else "",
                         "report": _link(r.report, at)})
    sections = []
    for target, series in targets.items():
        charts = []
        for (study, key), pts in series.items():
            name = f"{measures[(study, key)]} ({study})"
            regressed = [p.release for p in pts if p.verdict == "regressed"]
            charts.append({"name": name, "key": key, "svg": chart(pts, f"{target}: {name}"), "regressed": regressed,
                           "last": pts[-1]})
        charts.sort(key=lambda c: (not c["regressed"], c["name"]))
        sections.append({"target": target, "charts": charts})
    script = report_script()
    env = jinja2.Environment(loader=jinja2.PackageLoader("perturblab.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    accepted = [r.label for r in releases if r.accepted is not None]
    return env.get_template(TEMPLATE).render(
        title=title or f"perturblab history: {Path(history.where).name if '://' not in history.where else 'database'}",
        csp=content_security_policy(script), script=Markup(script), sections=sections, rows=rows,
        releases=[{"label": r.label, "when": _when(r.created), "models": r.models_of(), "report": _link(r.report, at),
                   "accepted": r.accepted is not None, "reference": r.reference} for r in releases],
        accepted=accepted, version=__version__, made=_when(_dt.datetime.now(_dt.timezone.utc).timestamp()))


def write_trend(history: History, out: str | Path, title: str | None = None) -> Path:
    """Write the trend page of ``history`` to ``out`` (whole or not at all); returns its path."""
    from ..core.files import atomic_write_bytes

    return atomic_write_bytes(Path(out), render_trend(history, title, Path(out).parent).encode("utf-8"))
