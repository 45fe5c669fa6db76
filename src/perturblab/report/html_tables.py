"""Tables of the HTML report: the markdown of ``table.md``, JSON records and CSV files.

Every cell is either a plain ``str`` (escaped by the template) or a :class:`markupsafe.Markup`
built here from escaped text. The only markup translated from study outputs is ``**x**``
(-> ``<strong>``) and ``<u>x</u>`` (-> ``<u>``), after everything else has been escaped.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from markupsafe import Markup, escape

from ..errors import InputError

MAX_JSON_ROWS = 200
MAX_CSV_ROWS = 1000  # the report's script sorts and filters them in the page
MAX_JSON_TABLES = 40
MAX_CELL_CHARS = 300

_PLAIN_NUMBER = re.compile(r"^\s*[-+−]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")
_NUMBER = re.compile(r"^\s*[-+−]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*(%|±.*|\[.*\])?$")  # 12%, 0.5 ± 0.1, 0.5 [0.4, 0.6]
_NO_VALUE = ("", "n/a", "nan", "—", "-")
_SEPARATOR_CELL = re.compile(r"^\s*:?-{1,}:?\s*$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_UNDERLINE = re.compile(r"&lt;u&gt;(.+?)&lt;/u&gt;")


@dataclass
class Table:
    """A table ready for the template: header and rows of ``str`` or ``Markup`` cells."""

    header: list[Any]
    rows: list[list[Any]]
    numeric: list[bool]
    title: str = ""
    note: str = ""
    id: str = ""
    source: str = ""  # the file a table shows (under its heading)
    #: whether the page lets the reader sort and filter the rows (the CSV tables)
    sortable: bool = False
    #: per cell, the exact number a numeric cell sorts by when its text is rounded ("" otherwise)
    sort_keys: list[list[str]] = field(default_factory=list)
    #: at phone width each row is shown as a block of "column: value" lines (the verdict tables,
    #: whose every number must be read without scrolling sideways)
    stack: bool = False


@dataclass
class Block:
    """One block of a markdown file: a heading, a paragraph or a table."""

    kind: str  # "heading" | "paragraph" | "list" (``text``: the items) | "table"
    text: Any = ""
    level: int = 0
    table: Table | None = None


@dataclass
class JsonFile:
    """The tables found in one JSON output file (or the note saying why there are none)."""

    name: str
    tables: list[Table] = field(default_factory=list)
    note: str = ""
    id: str = ""
    title: str = ""  # what the report calls the file (its heading); ``name`` is shown under it


def inline(text: str) -> Markup:
    """Escape ``text`` completely, then turn ``**x**`` into bold and ``<u>x</u>`` into underline."""
    s = str(escape(text))
    s = _UNDERLINE.sub(r"<u>\1</u>", s)
    s = _BOLD.sub(r"<strong>\1</strong>", s)
    return Markup(s)


def breakable(name: str) -> Markup:
    """A column name (escaped) that may wrap after its underscores: ``iid_agreement_se``."""
    return Markup("_<wbr>").join(escape(part) for part in str(name).split("_"))


def fmt_number(v: Any) -> str:
    """A number with 4 significant digits (integers as they are); anything else as text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        s = f"{v:.4g}"
        if "e+" in s and abs(v) < 1e15:
            s = f"{v:.0f}"
        return s
    return str(v)


def fmt_cell(v: Any) -> str:
    """A JSON value as cell text: numbers formatted, ``None`` as a dash, lists of scalars joined by
    commas, other lists and dicts as compact JSON; at most ``MAX_CELL_CHARS`` characters."""
    if v is None:
        return "—"
    if isinstance(v, (bool, int, float)):
        return fmt_number(v)
    if isinstance(v, list) and v and all(isinstance(x, (str, int, float)) for x in v):
        s = ", ".join(fmt_number(x) for x in v)
    elif isinstance(v, (list, dict)):
        s = json.dumps(v, ensure_ascii=False, separators=(", ", ": "), default=str)
    else:
        s = str(v)
    return s if len(s) <= MAX_CELL_CHARS else s[:MAX_CELL_CHARS - 1] + "…"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ------------------------------------------------------------------------- markdown
def _split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells = re.split(r"(?<!\\)\|", s)
    return [c.strip().replace("\\|", "|") for c in cells]


def _is_separator(line: str) -> bool:
    if "|" not in line and "-" not in line:
        return False
    cells = _split_row(line)
    return bool(cells) and all(_SEPARATOR_CELL.match(c) for c in cells)


def _markdown_table(lines: list[str]) -> Table:
    header = _split_row(lines[0])
    aligns = [c.strip() for c in _split_row(lines[1])]
    width = len(header)
    rows = []
    for line in lines[2:]:
        cells = _split_row(line)[:width]
        rows.append(cells + [""] * (width - len(cells)))
    numeric = []
    for j in range(width):
        a = aligns[j] if j < len(aligns) else ""
        plain = [p for p in (re.sub(r"\*\*|</?u>", "", r[j]).strip() for r in rows) if p.lower() not in _NO_VALUE]
        numeric.append(a.endswith(":") and not a.startswith(":")
                       or bool(plain) and all(_NUMBER.match(p) for p in plain))
    return Table(header=[inline(h) for h in header], rows=[[inline(c) for c in r] for r in rows],
                 numeric=numeric)


def parse_markdown(text: str) -> list[Block]:
    """Headings (``#``), list items (``- x``, one line each), paragraphs and pipe tables of a
    markdown text; nothing else is markup."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i, n = 0, len(lines)

    def table_starts(k: int) -> bool:
        return "|" in lines[k] and k + 1 < n and _is_separator(lines[k + 1])

    while i < n:
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", s)
        if m:
            blocks.append(Block("heading", inline(m.group(2)), level=len(m.group(1))))
            i += 1
        elif re.match(r"^[-*]\s+", s):  # a list item; items apart by blank lines make one list
            item = inline(re.sub(r"^[-*]\s+", "", s))
            if blocks and blocks[-1].kind == "list":
                blocks[-1].text.append(item)
            else:
                blocks.append(Block("list", [item]))
            i += 1
        elif table_starts(i):
            j = i + 2
            while j < n and lines[j].strip() and "|" in lines[j]:
                j += 1
            blocks.append(Block("table", table=_markdown_table(lines[i:j])))
            i = j
        else:
            j = i
            para = []
            while j < n and lines[j].strip() and not re.match(r"^(#{1,6}|[-*])\s", lines[j].strip()) \
                    and not table_starts(j):
                para.append(lines[j].strip())
                j += 1
            blocks.append(Block("paragraph", inline(" ".join(para))))
            i = j
    return blocks


# ------------------------------------------------------------------------- JSON
def _is_records(o: Any) -> bool:
    return isinstance(o, list) and bool(o) and all(isinstance(r, dict) for r in o)


def _is_leaf(v: Any) -> bool:
    """A value shown in one cell: a scalar, or a list/dict holding no records or dicts of records."""
    if isinstance(v, dict):
        return not v or all(_is_leaf(x) and not isinstance(x, (dict, list)) for x in v.values())
    if isinstance(v, list):
        return not _is_records(v) and all(not isinstance(x, dict) for x in v)
    return True


def records_table(rows: list[dict[str, Any]], *, title: str = "", source: str = "",
                  max_rows: int = MAX_JSON_ROWS) -> Table:
    """A list of flat dicts as a table (columns: the union of keys), at most ``max_rows`` rows; a
    column with no value in any row (a standard error of one trial, say) is left out, and the note
    names it."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols = [k for k in keys if any(r.get(k) is not None for r in rows)]
    empty = [k for k in keys if k not in cols]
    shown = rows[:max_rows]
    numeric = []
    for c in cols:
        vals = [r.get(c) for r in rows if r.get(c) is not None]
        numeric.append(bool(vals) and all(_is_number(v) for v in vals))
    more = len(rows) - len(shown)
    notes = [f"{more} more rows in {source}"] if more > 0 else []
    if empty:
        notes.append(f"no values in {', '.join(empty)} (left out)")
    note = "; ".join(notes)
    return Table(header=[breakable(c) for c in cols], rows=[[fmt_cell(r.get(c)) for c in cols] for r in shown],
                 numeric=numeric, title=title, note=note)


def key_value_table(d: dict[str, Any], *, title: str = "", source: str = "",
                    max_rows: int = MAX_JSON_ROWS) -> Table:
    """A dict as a two-column key/value table, at most ``max_rows`` rows."""
    rows = [[str(k), fmt_cell(v)] for k, v in list(d.items())[:max_rows]]
    more = len(d) - len(rows)
    note = f"{more} more entries in {source or 'the file'}" if more > 0 else ""
    return Table(header=["key", "value"], rows=rows, numeric=[False, False], title=title, note=note)


def json_tables(obj: Any, source: str, *, max_rows: int = MAX_JSON_ROWS,
                max_tables: int = MAX_JSON_TABLES) -> tuple[list[Table], str]:
    """Every list of records in ``obj`` as a table and the scalars of every dict as a key/value
    table, titled by their path; at most ``max_tables`` tables (the note says how many more)."""
    found: list[Table] = []

    def walk(o: Any, path: str) -> Iterator[Table]:
        if _is_records(o):
            yield records_table(o, title=path, source=source, max_rows=max_rows)
        elif isinstance(o, dict):
            leaves = {k: v for k, v in o.items() if _is_leaf(v)}
            if leaves:
                yield key_value_table(leaves, title=path, source=source, max_rows=max_rows)
            for k, v in o.items():
                if k not in leaves:
                    yield from walk(v, f"{path} › {k}" if path else str(k))
        elif isinstance(o, list):
            if all(_is_leaf(x) for x in o):
                yield key_value_table({str(i): x for i, x in enumerate(o)}, title=path, source=source,
                                      max_rows=max_rows)
            else:
                for i, x in enumerate(o):
                    yield from walk(x, f"{path} › {i}" if path else str(i))
        else:
            yield key_value_table({"value": o}, title=path)

    total = 0
    for t in walk(obj, ""):
        total += 1
        if len(found) < max_tables:
            found.append(t)
    note = f"{total - len(found)} more tables in {source}" if total > len(found) else ""
    return found, note


def json_file(name: str, obj: Any) -> JsonFile:
    """The tables of ``obj``, the content of the JSON file ``name``; a note when it has none."""
    jf = JsonFile(name=name)
    jf.tables, jf.note = json_tables(obj, name)
    if not jf.tables and not jf.note:
        jf.note = f"{name} is empty"
    return jf


# ------------------------------------------------------------------------- CSV
def read_csv_table(path: Path, *, max_rows: int = MAX_CSV_ROWS) -> Table:
    """The header and first ``max_rows`` rows of a CSV file; numeric columns formatted, each
    rounded cell keeping its exact value as its sort key. The table is sortable when it has rows."""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            rows, extra = [], 0
            for row in reader:
                if len(rows) < max_rows:
                    rows.append(row)
                else:
                    extra += 1
    except (OSError, csv.Error) as e:
        return Table(header=[], rows=[], numeric=[], title=path.name, note=f"{path.name} could not be read: {e}")
    width = max([len(header)] + [len(r) for r in rows])
    header = header + [""] * (width - len(header))
    rows = [r + [""] * (width - len(r)) for r in rows]
    numeric = []
    for j in range(width):
        vals = [r[j] for r in rows if r[j].strip()]
        numeric.append(bool(vals) and all(_PLAIN_NUMBER.match(v) for v in vals))
    keys = [[""] * width for _ in rows]
    for r, k in zip(rows, keys):
        for j in range(width):
            if numeric[j] and r[j].strip():
                v = r[j].strip().replace("−", "-")
                r[j] = fmt_number(int(v) if re.fullmatch(r"[-+]?\d+", v) else float(v))
                k[j] = v if v != r[j] else ""
            elif len(r[j]) > MAX_CELL_CHARS:
                r[j] = r[j][:MAX_CELL_CHARS - 1] + "…"
    note = f"{extra} more rows in {path.name}" if extra else ""
    return Table(header=[breakable(h) for h in header], rows=rows, numeric=numeric, title=path.name, note=note,
                 sortable=bool(rows), sort_keys=keys)


def load_json(path: Path, fix: str = "re-run the study or delete the file") -> Any:
    """The content of the JSON file ``path``; :class:`InputError` naming the file and ``fix`` when it
    is not readable JSON (truncated, damaged, not UTF-8) or cannot be read at all."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"report: {path} is not readable JSON ({e}); {fix}") from None
    except OSError as e:
        raise InputError(f"report: cannot read {path}: {e.strerror or e}; check its permissions, or {fix}") from None
