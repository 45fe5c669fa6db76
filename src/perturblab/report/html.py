"""One self-contained, offline HTML report of a study's (or a whole run's) output directory.

``write_report(dir)`` finds the study directories under ``dir`` (a directory holding
``results.json``, ``study.json`` or ``table.md``), and writes one HTML file with, per study, its
manifest config, its flags (:func:`read_flags`: models at chance level or predicting one class,
perturbations that affect no layer beyond noise), the tables of ``table.md``, every ``*.png``
figure embedded as a base64 data URI, the JSON outputs as tables and the first rows of every CSV file. The file references
nothing outside itself (no script files, no style sheets, no URLs) and all study text is escaped. Its one
inline script (``templates/report.js.j2``) makes the CSV tables sortable and filterable; the page's
Content-Security-Policy allows that script by its SHA-256 and nothing else (:func:`content_security_policy`).
A JSON file of the report's input that cannot be read (a corrupt ``results.json``, say) is an
:class:`~perturblab.errors.InputError` naming the file, raised before anything is written.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..core.headline import Headline
from ..core.study import HEADLINE_FILE
from ..errors import InputError
from .html_compare import read_verdicts
from .html_headline import headline_tables
from .html_tables import (Block, JsonFile, Table, json_file, json_tables, key_value_table, load_json, parse_markdown,
                          read_csv_table)

STUDY_MARKERS = ("results.json", "study.json", "table.md")
MANIFEST = "study.json"
RUN_MANIFEST = "run.json"
TEMPLATE = "report.html.j2"
#: the page's script, inserted verbatim (named ``*.j2`` so that the package data ships it)
SCRIPT = "report.js.j2"
#: the page's policy: nothing loaded from anywhere, inline style, embedded images, and the one
#: script whose hash follows
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
MAX_DEPTH = 8
MAX_FIGURE_BYTES = 20 * 2**20
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JSON files shown first, in this order; the others follow sorted by name
TIME_KEYS = ("created", "started", "finished")
APPENDIX_FIGURES = ("sample_complexity",)  # SCoPE App. H curves after the Fig. 3 bars
JSON_ORDER = ("summary.json", "correlations.json", "sample_complexity.json", "results.json")
#: what the report calls the output files the studies write (others: their names in words); the
#: file's own name is shown under the heading, never as it
FILE_TITLES = {
    "summary.json": "Summary over trials", "results.json": "Results", "trials.json": "Every trial",
    "correlations.json": "Correlations between the metrics", "sample_complexity.json": "Sample complexity",
    "checkpoints.json": "The checkpoints", "config.json": "Options", "finetune.json": "The fine-tune",
    "metrics.csv": "Metrics per trial", "perturbed_examples.csv": "Perturbed examples",
    "examples_table.csv": "Examples side by side", "examples.csv": "Examples", "members.csv": "Members of each set",
    "top_layers.csv": "The layers each perturbation affects most", "table.md": "Tables",
}


#: the heading of a section's headline
HEADLINE_TITLE = "At a glance"


def file_title(name: str) -> str:
    """What the report calls output file ``name`` (``summary.json`` -> "Summary over trials"; an
    unknown ``per_layer_scores.csv`` -> "Per layer scores")."""
    if name in FILE_TITLES:
        return FILE_TITLES[name]
    words = re.sub(r"[_\-]+", " ", name.rsplit(".", 1)[0]).strip()
    return (words[:1].upper() + words[1:]) or name


@dataclass
class Figure:
    """A PNG output embedded as a data URI (``uri`` empty and ``note`` set when it cannot be)."""

    name: str
    uri: str = ""
    note: str = ""


@dataclass
class Section:
    """Everything the report shows of one study directory."""

    id: str
    title: str
    path: str
    kind: str = ""
    state: str = ""
    config: Table | None = None
    #: the study's headline (``headline.json``): its sentence and its tables; ``headline_note``
    #: says why there is none
    headline_sentence: str = ""
    headline: list[Table] = field(default_factory=list)
    headline_note: str = ""
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    markdown: list[Block] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    json_files: list[JsonFile] = field(default_factory=list)
    csv_tables: list[Table] = field(default_factory=list)
    other_files: list[tuple[str, str]] = field(default_factory=list)

    def contents(self) -> list[tuple[str, str]]:
        """(anchor id, label) of the parts this section shows, for the table of contents."""
        parts = []
        if self.headline or self.headline_note:
            parts.append((f"{self.id}-headline", HEADLINE_TITLE))
        if self.figures:
            parts.append((f"{self.id}-figures", f"Figures ({len(self.figures)})"))
        if self.markdown:
            parts.append((f"{self.id}-tables", file_title("table.md")))
        parts += [(j.id, j.title) for j in self.json_files]
        parts += [(t.id, t.title) for t in self.csv_tables]
        return parts


def find_study_dirs(root: Path) -> list[Path]:
    """The study directories at and under ``root`` (hidden directories skipped), sorted by path."""
    found = []
    root_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if len(here.parts) - root_depth >= MAX_DEPTH:
            dirnames[:] = []
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        if any(m in filenames for m in STUDY_MARKERS):
            found.append(here)
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def _slug(text: str, taken: set[str]) -> str:
    base = "study-" + (re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "root")
    slug, k = base, 2
    while slug in taken:
        slug, k = f"{base}-{k}", k + 1
    taken.add(slug)
    return slug


def _human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def embed_png(path: Path) -> Figure:
    """``path`` as a ``data:image/png;base64,`` URI; files that are not PNGs or too large get a note."""
    try:
        size = path.stat().st_size
        if size > MAX_FIGURE_BYTES:
            return Figure(path.name, note=f"{path.name} not embedded: {_human_size(size)} is over the limit")
        data = path.read_bytes()
    except OSError as e:
        return Figure(path.name, note=f"{path.name} could not be read: {e}")
    if not data.startswith(PNG_SIGNATURE):
        return Figure(path.name, note=f"{path.name} is not a PNG file")
    return Figure(path.name, uri="data:image/png;base64," + base64.b64encode(data).decode("ascii"))


def _read_manifest(path: Path, fix: str = "re-run the study or delete the file") -> tuple[dict[str, Any] | None, str]:
    obj = load_json(path, fix)
    if not isinstance(obj, dict):
        return None, f"{path.name} is not a JSON object"
    return obj, ""


def _json_sort_key(p: Path) -> tuple[int, str]:
    return (JSON_ORDER.index(p.name) if p.name in JSON_ORDER else len(JSON_ORDER), p.name)


def _figure_sort_key(p: Path) -> tuple[int, str]:
    """Headline figures first, appendix ones (the sample-complexity curves) last, each group by name."""
    return (any(p.name.startswith(a) for a in APPENDIX_FIGURES), p.name)


#: where the report looks for flags (``"flags"`` lists of the records of this file)
FLAGS_FILE = "summary.json"
FLAG_NAMES = ("model", "target", "checkpoint")
FLAG_WHAT = ("capability", "perturbation")
MAX_FLAGS = 40


def read_flags(study: Path, loaded: dict[str, Any] | None = None) -> list[str]:
    """The warnings a study's ``summary.json`` (else its ``results.json``) carries: one line per
    record with a non-empty ``flags`` list (models that predict one class or are at chance level,
    perturbations that affect no layer beyond noise; :mod:`perturblab.measures.quality`), named by the record's
    ``model`` / ``target`` / ``checkpoint`` with its ``capability`` or ``perturbation``, with its
    ``detail`` sentences when it has them; at most ``MAX_FLAGS`` lines (the last says how many more).
    ``loaded``: file name -> content of the study's JSON files already read (:func:`load_json`)."""
    path = study / FLAGS_FILE
    if not path.is_file():
        path = study / "results.json"  # a study whose rows are its summary (checkpoints)
    if not path.is_file():
        return []
    loaded = loaded or {}
    obj = loaded[path.name] if path.name in loaded else load_json(path)
    found: list[str] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            flags = o.get("flags")
            if isinstance(flags, list) and flags:
                name = next((str(o[k]) for k in FLAG_NAMES if isinstance(o.get(k), (str, int))), "")
                what = [str(o[k]) for k in FLAG_WHAT if isinstance(o.get(k), str)]
                name += f" ({what[0]})" if what else ""
                detail = o.get("detail") if isinstance(o.get("detail"), list) and o.get("detail") else flags
                line = (f"{name}: " if name else "") + "; ".join(str(d) for d in detail)
                if line not in found:
                    found.append(line)
            for v in o.values():
                if isinstance(v, (dict, list)):
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    if len(found) > MAX_FLAGS:
        found = found[:MAX_FLAGS - 1] + [f"{len(found) - MAX_FLAGS + 1} more flagged records in {path.name}"]
    return found


def build_section(study: Path, root: Path, taken: set[str], run_state: dict[str, Any] | None = None) -> Section:
    """Read one study directory into a :class:`Section`; ``run_state`` is its entry of ``run.json``."""
    rel = study.relative_to(root).as_posix()
    rel = root.resolve().name if rel == "." else rel
    sec = Section(id=_slug(rel, taken), title=rel, path=rel)
    if run_state:
        sec.state = str(run_state.get("state") or "")
        if run_state.get("error"):
            sec.notes.append(f"error: {run_state['error']}")
    if (study / MANIFEST).is_file():
        manifest, note = _read_manifest(study / MANIFEST)
        if note:
            sec.notes.append(note)
        if manifest:
            sec.title = str(manifest.get("name") or rel)
            sec.kind = str(manifest.get("kind") or "")
            config = manifest.get("config", manifest.get("options"))
            if isinstance(config, dict) and config:
                sec.config = key_value_table(config, title="config")
    files = sorted(p for p in study.iterdir() if p.is_file() and not p.name.startswith("."))
    json_paths = sorted((p for p in files if p.suffix == ".json" and p.name not in (MANIFEST, RUN_MANIFEST)),
                        key=_json_sort_key)
    loaded = {p.name: load_json(p) for p in json_paths}
    sec.flags = read_flags(study, loaded)
    headline = loaded.pop(HEADLINE_FILE, None)
    if isinstance(headline, dict):
        h = Headline.from_json(headline)
        sec.headline_sentence, sec.headline = h.sentence, headline_tables(h)
    elif (study / "results.json").is_file():
        sec.headline_note = (f"No {HEADLINE_FILE}: these outputs were written before perturblab wrote "
                             "headlines. Run the study again into the same --out to add it; its stored "
                             "results are read back, nothing is computed again.")
    if (study / "table.md").is_file():
        try:
            sec.markdown = parse_markdown((study / "table.md").read_text(encoding="utf-8", errors="replace"))
        except OSError as e:
            sec.notes.append(f"table.md could not be read: {e}")
    sec.figures = [embed_png(p) for p in sorted((p for p in files if p.suffix.lower() == ".png"), key=_figure_sort_key)]
    sec.json_files = [json_file(name, obj) for name, obj in loaded.items()]
    sec.csv_tables = [read_csv_table(p) for p in files if p.suffix.lower() == ".csv"]
    for i, j in enumerate(sec.json_files):
        j.id, j.title = f"{sec.id}-json-{i}", file_title(j.name)
    for i, t in enumerate(sec.csv_tables):
        t.id, t.source, t.title = f"{sec.id}-csv-{i}", t.title, file_title(t.title)
    shown = {"table.md", MANIFEST, RUN_MANIFEST}
    sec.other_files = [(p.name, _human_size(p.stat().st_size)) for p in files  # reports (.html) left out
                       if p.name not in shown and p.suffix.lower() not in (".png", ".json", ".csv", ".html")]
    return sec


def _readable_run(run: dict[str, Any]) -> dict[str, Any]:
    """``run.json`` for display: times as UTC dates, ``studies`` as a list of rows in run order."""

    def dates(o: Any) -> Any:
        if isinstance(o, dict):
            return {k: (_utc(v) if k in TIME_KEYS and isinstance(v, (int, float)) else dates(v))
                    for k, v in o.items()}
        return [dates(x) for x in o] if isinstance(o, list) else o

    run = dates(run)
    studies = run.get("studies")
    if isinstance(studies, dict) and all(isinstance(v, dict) for v in studies.values()):
        order = [n for n in run.get("order") or [] if n in studies]
        order += [n for n in studies if n not in order]
        run["studies"] = [{"name": n, **studies[n]} for n in order]
    return run


def _utc(t: float) -> str:
    try:
        return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(t)


def _environment() -> "jinja2.Environment":  # noqa: F821 (imported when used)
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("perturblab.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def report_script() -> str:
    """The text of the page's script, exactly as it goes between ``<script>`` and ``</script>``
    (line ends as ``\n``, as an HTML parser hands them to the browser's hash check)."""
    from importlib.resources import files

    text = (files("perturblab.report") / "templates" / SCRIPT).read_text(encoding="utf-8")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if re.search(r"</script|<!--", text, re.I):
        raise ValueError(f"{SCRIPT} holds '</script' or '<!--', which would end or hide the inline script")
    return text


def script_hash(script: str) -> str:
    """The CSP source that allows the inline script ``script``: ``'sha256-<base64 digest of its
    UTF-8 bytes>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(script: str) -> str:
    """The page's Content-Security-Policy: :data:`CSP` plus ``script-src`` with the hash of ``script``."""
    return f"{CSP}; script-src {script_hash(script)}"


def render_report(root: str | Path, title: str | None = None, *, compare: Any = None,
                  source: str | None = None) -> str:
    """The report of ``root`` (a study directory or a run directory of studies) as an HTML string;
    ``compare``: the contents of its ``compare.json`` when not (yet) on disk; ``source``: the
    directory the page names as its source (default: ``root``)."""
    from .. import __version__

    root = Path(root)
    if not root.exists():
        raise InputError(f"report: {root} does not exist; point to the --out directory of a study "
                         "or to a run directory")
    if not root.is_dir():
        raise InputError(f"report: {root} is not a directory; point to the --out directory of a study "
                         "or to a run directory")
    studies = find_study_dirs(root)
    if not studies:
        raise InputError(f"report: {root} holds no study outputs ({', '.join(STUDY_MARKERS)}); point to "
                         "the --out directory of a study or to a run directory holding study directories")
    run_info: list[Table] = []
    run_notes: list[str] = []
    run: dict[str, Any] = {}
    if (root / RUN_MANIFEST).is_file():
        manifest, note = _read_manifest(root / RUN_MANIFEST, "delete it (the study outputs are kept) or run the "
                                        "config again")
        run_notes += [note] if note else []
        run = manifest or {}
        if run:
            run_info, note = json_tables(_readable_run(run), RUN_MANIFEST)
            run_notes += [note] if note else []
    run_name = str(run.get("name") or "")
    run_studies = run.get("studies") if isinstance(run.get("studies"), dict) else {}
    verdicts = read_verdicts(root, compare)
    order = run.get("order") if isinstance(run.get("order"), list) else verdicts.order
    rank = {str(name): i for i, name in enumerate(order)}
    studies.sort(key=lambda p: (rank.get(p.relative_to(root).as_posix(), len(rank)), p.relative_to(root).parts))
    taken: set[str] = set()
    sections = [build_section(s, root, taken, run_studies.get(s.relative_to(root).as_posix()))
                for s in studies]
    title = title or f"perturblab report: {run_name or root.resolve().name}"
    now = _utc(_dt.datetime.now(_dt.timezone.utc).timestamp())
    script = report_script()
    return _environment().get_template(TEMPLATE).render(
        title=title, sections=sections, run_info=run_info, run_notes=run_notes, source=source or str(root),
        verdicts=verdicts,        generated=now, version=__version__, script=Markup(script), csp=Markup(content_security_policy(script)))


def write_report(dir: str | Path, out_path: str | Path | None = None, title: str | None = None) -> Path:
    """Write the report of ``dir`` to ``out_path`` (default ``dir/report.html``) and return its path."""
    html = render_report(dir, title=title)
    out = Path(out_path) if out_path is not None else Path(dir) / "report.html"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(out)
    except OSError as e:
        raise InputError(f"report: cannot write {out}: {e.strerror or e}; choose another --out") from e
    return out
