"""``perturblab report``: the self-contained HTML report of study outputs — escaping of hostile
study text, embedded figures, markdown tables, run directories, no external references, the one
inline script allowed by its hash — and, in headless Chromium, its screenshots at desktop and
phone width and the CSV tables sorted and filtered from the URL fragment."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import re
import shutil
from html import unescape
from html.parser import HTMLParser
from urllib.parse import quote

import numpy as np
import pytest
from conftest import write_marker_csv

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.report.html import find_study_dirs, report_script, write_report
from perturblab.report.html_tables import parse_markdown
from perturblab.report.screenshot import dump_dom, find_chromium, screenshot

SCRIPT = '<script>alert("x")</script>'
IMG = "<img src=x onerror=alert(1)>"
QUOTE = '" onmouseover="alert(2)'
URL = "https://evil.example/x.png"
HOSTILE = f"{SCRIPT} {IMG} {QUOTE} {URL}"

TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "nav", "section", "div",
        "footer", "h1", "h2", "h3", "h4", "h5", "h6", "p", "code", "strong", "u", "ol", "ul", "li", "a",
        "span", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "img", "wbr", "script"}
ATTRS = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "src", "alt", "data-v"}


class Page(HTMLParser):
    """Elements, attributes, visible text, scripts and tables (rows of cell texts, bold flags,
    container id, the table's own attributes and each row's)."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.tables: list[dict] = []
        self.ids: list[str] = []
        self.scripts: list[str] = []
        self._divs: list[str] = []
        self._cell: list[str] | None = None
        self._in_style = False
        self._script: list[str] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.append(a["id"])
        if tag in ("div", "section"):
            self._divs.append(a.get("id", ""))
        elif tag == "table":
            self.tables.append({"rows": [], "bold": 0, "in": next((d for d in reversed(self._divs) if d), ""),
                                "attrs": a, "tr": [], "th": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
            self.tables[-1]["tr"].append(a)
        elif tag == "script":
            self._script = []
        elif tag in ("td", "th"):
            self._cell = []
            if tag == "th":
                self.tables[-1]["th"].append(a)
        elif tag == "strong" and self._cell is not None:
            self.tables[-1]["bold"] += 1
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        if tag in ("div", "section"):
            self._divs.pop()
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "style":
            self._in_style = False
        elif tag == "script" and self._script is not None:
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)
        elif not self._in_style:
            self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def table(self, table_id: str) -> dict:
        """The table whose ``id`` is ``table_id``."""
        return next(t for t in self.tables if t["attrs"].get("id") == table_id)

    @property
    def visible(self) -> str:
        return "".join(self.text)


def png(path, seed=0, size=(24, 32)):
    import matplotlib.image

    matplotlib.image.imsave(path, np.random.default_rng(seed).random(size), cmap="viridis")
    return path


TABLE_MD = f"""# Hostile table

A paragraph with **bold** and <u>underlined</u> words, {SCRIPT} and <b>not bold</b>.

| model | score | text |
|---|---:|---|
| a | **0.91** | {IMG} |
| b | <u>0.42</u> | {QUOTE} |
| c\\|d | 0.10 | *single stars stay* |

## Second

| x | y |
|---|---|
| 1 | **2** |
"""


@pytest.fixture
def hostile_study(tmp_path):
    d = tmp_path / "hostile"
    d.mkdir()
    rows = [{"text": HOSTILE if i == 0 else f"row {i}", "value": i / 3, "n": i} for i in range(250)]
    (d / "results.json").write_text(json.dumps(rows))
    (d / "summary.json").write_text(json.dumps({"note": HOSTILE, "cells": [{"model": IMG, "mean": 0.123456}]}))
    (d / "study.json").write_text(json.dumps({"name": f"study {SCRIPT}", "kind": "robustness",
                                              "config": {"data": IMG, "n": 5, "models": ["a", QUOTE]}}))
    (d / "table.md").write_text(TABLE_MD)
    (d / f"examples {IMG[:-1].replace('/', '')}.csv").write_text(
        "id,original,perturbed\n" + "".join(f'{i},"{QUOTE.replace(chr(34), 2 * chr(34))}",{SCRIPT}\n'
                                            for i in range(60)))
    png(d / "figure_a.png", 0)
    png(d / "figure_b.png", 1)
    (d / "results.sqlite").write_bytes(b"SQLite format 3\x00")
    return d


@pytest.fixture(scope="module")
def robustness_study(tmp_path_factory):
    """A real, small robustness study (TF-IDF + LR on the toy marker data; no offline assets)."""
    root = tmp_path_factory.mktemp("report_rob")
    data = write_marker_csv(root / "data.csv", 80)
    out = root / "rob"
    rc = main(["robustness", "--models", "tfidf-lr", "--perturbations", "leet_letters,drop_first,change_char",
               "--data", str(data), "--seeds", "1", "--n-train", "40", "--n-test", "40", "--out", str(out), "--quiet"])
    assert rc == 0
    return out


def _page(study_dir, **kw) -> tuple[str, Page]:
    html = write_report(study_dir, **kw).read_text(encoding="utf-8")
    return html, Page(html)


# ----------------------------------------------------------------------------- (a) escaping
def test_hostile_text_is_escaped_and_visible(hostile_study):
    html, page = _page(hostile_study, title=f"T {SCRIPT}")
    tags = {t for t, _ in page.tags}
    assert tags <= TAGS, tags - TAGS
    assert "b" not in tags and "i" not in tags
    assert [a for t, a in page.tags if t == "script"] == [{}] and page.scripts == [report_script()]
    imgs = [a for t, a in page.tags if t == "img"]
    assert imgs and all(a["src"].startswith("data:image/png;base64,") for a in imgs)
    for tag, attrs in page.tags:
        assert set(attrs) <= ATTRS, (tag, attrs)
        assert not any(k.lower().startswith("on") for k in attrs)
        if "href" in attrs:
            assert attrs["href"].startswith("#")
    text = page.visible
    for s in (SCRIPT, IMG, QUOTE, URL, "<b>not bold</b>", "*single stars stay*", f"T {SCRIPT}", f"study {SCRIPT}"):
        assert s in text, s
    assert "&lt;script&gt;" in html and SCRIPT not in html


# ----------------------------------------------------------------------------- (b) figures and tables
def test_headline_figures_before_appendix_curves(tmp_path):
    d = tmp_path / "study"
    d.mkdir()
    (d / "results.json").write_text("[]")
    for i, name in enumerate(["sample_complexity_b.png", "scope_b.png", "sample_complexity_a.png", "scope_a.png"]):
        png(d / name, i)
    _, page = _page(d)
    assert [a["alt"] for t, a in page.tags if t == "img"] == [
        "scope_a.png", "scope_b.png", "sample_complexity_a.png", "sample_complexity_b.png"]


def test_figures_embedded_and_markdown_tables(hostile_study):
    html, page = _page(hostile_study)
    pngs = sorted(hostile_study.glob("*.png"))
    imgs = {a["alt"]: a["src"] for t, a in page.tags if t == "img"}
    assert sorted(imgs) == [p.name for p in pngs]
    b64 = imgs["figure_b.png"].split(",", 1)[1]
    assert base64.b64decode(b64) == (hostile_study / "figure_b.png").read_bytes()

    md = [t for t in page.tables if t["in"].endswith("-tables")]
    assert [len(t["rows"]) for t in md] == [4, 2]  # header + data rows
    assert all(len(r) == 3 for r in md[0]["rows"]) and all(len(r) == 2 for r in md[1]["rows"])
    assert md[0]["rows"][3][0] == "c|d"
    assert md[0]["bold"] == 1 and md[1]["bold"] == 1
    assert re.search(r"<td class=\"num\"><strong>0\.91</strong></td>", html)
    assert "<u>0.42</u>" in html and "<p>A paragraph with <strong>bold</strong> and <u>underlined</u>" in html

    results = [t for t in page.tables if len(t["rows"]) == 201 and t["rows"][0] == ["text", "value", "n"]]
    assert len(results) == 1 and results[0]["rows"][2][1] == "0.3333"
    assert "50 more rows in results.json" in page.visible
    csv_table = next(t for t in page.tables if t["rows"][0] == ["id", "original", "perturbed"])
    assert len(csv_table["rows"]) == 61 and csv_table["rows"][1][1] == QUOTE  # every row (up to 1000)
    assert "more rows in examples" not in page.visible
    assert csv_table["attrs"]["class"] == "sortable" and csv_table["attrs"]["id"].endswith("-table")
    assert "results.sqlite" in page.visible
    config = next(t for t in page.tables if t["rows"][0] == ["key", "value"] and t["rows"][1][0] == "data")
    assert config["rows"][1][1] == IMG and config["rows"][3][1] == f"a, {QUOTE}"


def test_real_study_every_figure_and_table(robustness_study):
    html, page = _page(robustness_study)
    pngs = sorted(p.name for p in robustness_study.glob("*.png"))
    assert pngs and sorted(a["alt"] for t, a in page.tags if t == "img") == pngs
    md_text = (robustness_study / "table.md").read_text()
    expected = []  # rows (header + data, separator excluded) and cells per row of each table
    for block in re.split(r"\n\s*\n", md_text):
        lines = [l for l in block.splitlines() if l.startswith("|")]
        if lines:
            expected.append((len(lines) - 1, lines[0].count("|") - 1))
    md = [t for t in page.tables if t["in"].endswith("-tables")]
    assert [(len(t["rows"]), len(t["rows"][0])) for t in md] == expected
    assert all(len(r) == len(t["rows"][0]) for t in md for r in t["rows"])
    assert md_text.count("<u>") == html.count("<u>") > 1  # every underline (legend and cells) kept


def test_markdown_parser_blocks():
    blocks = parse_markdown("# T\n\ntext **b** <i>x</i>\nmore\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n| 3 |\n")
    assert [b.kind for b in blocks] == ["heading", "paragraph", "table"]
    assert str(blocks[1].text) == "text <strong>b</strong> &lt;i&gt;x&lt;/i&gt; more"
    t = blocks[2].table
    assert t.rows == [["1", "2"], ["3", ""]] and t.numeric == [True, True]


# ----------------------------------------------------------------------------- (c) run directories
def test_run_dir_with_two_studies(tmp_path, hostile_study, robustness_study):
    run = tmp_path / "run"
    shutil.copytree(robustness_study, run / "b_robustness")
    (run / "group").mkdir(parents=True)
    shutil.copytree(hostile_study, run / "group" / "a_hostile")
    (run / "group" / "a_hostile" / "study.json").write_text(json.dumps({"name": "first", "kind": "scope",
                                                                        "config": {"n": 3}}))
    (run / "b_robustness" / "study.json").write_text(json.dumps({"name": "b_robustness", "kind": "robustness",
                                                                   "options": {"seeds": 1, "n_test": 40}}))
    (run / "run.json").write_text(json.dumps({
        "name": "my run", "created": 0, "order": ["group/a_hostile", "b_robustness"],
        "studies": {"b_robustness": {"kind": "robustness", "state": "done", "seconds": 2.5},
                    "group/a_hostile": {"kind": "scope", "state": "failed", "error": f"InputError: {IMG}"}}}))
    assert [p.relative_to(run).as_posix() for p in find_study_dirs(run)] == ["b_robustness", "group/a_hostile"]
    html, page = _page(run)
    h2 = re.findall(r"<h2>(.*?)</h2>", html)
    assert h2 == ["first", "b_robustness"]  # the run's order, not the folders' (sorted by path)
    assert "perturblab report: my run" in re.search(r"<title>(.*?)</title>", html).group(1)
    studies = next(t for t in page.tables if t["rows"][0][:3] == ["name", "kind", "state"])
    assert [r[:3] for r in studies["rows"][1:]] == [["group/a_hostile", "scope", "failed"],
                                                    ["b_robustness", "robustness", "done"]]
    assert "1970-01-01 00:00:00 UTC" in page.visible and f"error: InputError: {IMG}" in page.visible
    options = next(t for t in page.tables if t["rows"][0] == ["key", "value"] and t["rows"][1][0] == "seeds")
    assert options["rows"][1:] == [["seeds", "1"], ["n_test", "40"]]
    hrefs = [a["href"][1:] for t, a in page.tags if t == "a"]
    assert len(hrefs) >= 4 and set(hrefs) <= set(page.ids)
    assert len(page.ids) == len(set(page.ids))
    sections = [a["id"] for t, a in page.tags if t == "section" and "id" in a]
    assert len(sections) == 2 and set(sections) <= set(hrefs)


# ----------------------------------------------------------------------------- (d) self-contained
def test_no_external_references(hostile_study):
    html, page = _page(hostile_study)
    for tag, attrs in page.tags:
        for k, v in attrs.items():
            if k == "src":
                assert re.fullmatch(r"data:image/png;base64,[A-Za-z0-9+/]+=*", v), (tag, v[:80])
            else:
                assert not re.search(r"https?:|file:|^\s*//", v or ""), (tag, k, v)
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    assert "url(" not in style and "@import" not in style
    markup_only = re.sub(r">[^<]*<", "><", html)  # drop text nodes (where escaped study text lives)
    assert not re.search(r"https?://|src=\"file:", markup_only)
    assert URL in page.visible


# ----------------------------------------------------------------------------- CLI and errors
def test_cli_report_and_errors(tmp_path, robustness_study, capsys, monkeypatch):
    out = tmp_path / "r" / "index.html"
    assert main(["report", str(robustness_study), "--out", str(out), "--title", "Mine"]) == 0
    assert out.is_file() and "<title>Mine</title>" in out.read_text()
    assert str(out.resolve()) in capsys.readouterr().out
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    for argv, needle in ([["report", str(empty)], "holds no study outputs"],
                         [["report", str(tmp_path / "missing")], "does not exist"],
                         [["report", str(robustness_study), "--screenshot", str(tmp_path / "x.jpg")], ".png"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    monkeypatch.setenv("PERTURBLAB_CHROMIUM", str(tmp_path / "no-such-chromium"))
    assert main(["report", str(robustness_study), "--screenshot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "./setup.sh --browser" in err[0] and "no-such-chromium" in err[0]
    with pytest.raises(InputError, match="is not a directory"):
        write_report(robustness_study / "table.md")


@pytest.mark.parametrize("broken,content,fix", [
    ("b/results.json", '[{"model": "a", "value": 0.5}', "re-run the study or delete the file"),
    ("b/summary.json", b'{"cells": "\xff"}', "re-run the study or delete the file"),
    ("a/study.json", "", "re-run the study or delete the file"),
    ("run.json", "{", "delete it (the study outputs are kept) or run the config again"),
])
def test_a_corrupt_json_input_is_refused_and_no_page_is_written(tmp_path, capsys, broken, content, fix):
    """A run directory of two studies with one damaged JSON file (truncated, not UTF-8, empty): exit 2,
    one error line naming the file and the fix, and no report (nor a temporary file) written; the
    same directory with the file repaired gets its page."""
    run = tmp_path / "run"
    for name in ("a", "b"):
        (run / name).mkdir(parents=True)
        (run / name / "results.json").write_text('[{"model": "m", "value": 0.5}]')
        (run / name / "summary.json").write_text('{"cells": []}')
        (run / name / "study.json").write_text(json.dumps({"name": name, "kind": "robustness"}))
        (run / name / "table.md").write_text("| x |\n|---|\n| 1 |\n")
    (run / "run.json").write_text(json.dumps({"name": "r", "order": ["a", "b"]}))
    good = (run / broken).read_bytes()
    (run / broken).write_bytes(content.encode() if isinstance(content, str) else content)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    assert main(["report", str(run)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in captured.err, captured.err
    assert err[0].startswith(f"error: report: {run / broken} is not readable JSON (") and err[0].endswith(fix), err
    assert captured.out == ""
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no report.html, no .tmp
    with pytest.raises(InputError, match="is not readable JSON"):
        write_report(run, out_path=tmp_path / "elsewhere.html")
    assert not (tmp_path / "elsewhere.html").exists()
    (run / broken).write_bytes(good)
    assert main(["report", str(run)]) == 0 and (run / "report.html").is_file()


# ----------------------------------------------------------------------------- (e) browser
@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable; skips (fails under PERTURBLAB_REQUIRE_BROWSER=1) when there is none."""
    exe = find_chromium()
    if exe is None:
        if os.environ.get("PERTURBLAB_REQUIRE_BROWSER") == "1":
            pytest.fail("PERTURBLAB_REQUIRE_BROWSER=1 but no Chromium was found; run ./setup.sh --browser")
        pytest.skip("no Chromium found (install it with ./setup.sh --browser)")
    return exe


@pytest.mark.browser
def test_screenshot_renders_the_report(chromium, robustness_study, tmp_path):
    import matplotlib.image

    report = write_report(robustness_study, out_path=tmp_path / "report.html")
    shot = screenshot(report, tmp_path / "shot.png", width=1000, height=1400, chromium=chromium)
    img = matplotlib.image.imread(shot)
    assert img.shape[:2] == (1400, 1000)
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # not blank
    assert (gray < 0.5).mean() > 0.01  # dark text and figure pixels
    colour = np.abs(img[..., 0] - img[..., 2]) > 0.3
    assert colour.mean() > 0.005  # the embedded heatmaps are in colour


@pytest.mark.browser
def test_cli_screenshot(chromium, robustness_study, tmp_path, capsys):
    import matplotlib.image

    png_path = tmp_path / "shots" / "x.png"
    assert main(["report", str(robustness_study), "--out", str(tmp_path / "r.html"),
                 "--screenshot", str(png_path), "--window", "800x600"]) == 0
    assert matplotlib.image.imread(png_path).shape[:2] == (600, 800)
    assert f"screenshot: {png_path.resolve()}" in capsys.readouterr().out


def test_no_heading_or_contents_entry_is_a_file_name(robustness_study, hostile_study):
    """Headings and the contents list say what a part is ("Summary over trials"); the file it
    comes from is shown under the heading, never as it."""
    from perturblab.report.html import file_title

    assert file_title("summary.json") == "Summary over trials"
    assert file_title("per_layer-scores.csv") == "Per layer scores"
    file_name = re.compile(r"\.(json|csv|md|png|txt|sqlite)\s*$", re.I)
    for study in (robustness_study, hostile_study):
        html, page = _page(study)
        headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", html, re.S)
        contents = re.findall(r"<nav>(.*?)</nav>", html, re.S)[0]
        labels = re.findall(r"<a href=\"#[^\"]+\">(.*?)</a>", contents, re.S)
        assert headings and labels
        for text in headings + labels:
            assert not file_name.search(re.sub(r"<[^>]+>", "", text)), text
    html, page = _page(robustness_study)
    assert "Summary over trials" in page.visible and "<code>summary.json</code>" in html
    assert "<code>results.json</code>" in html and "<code>table.md</code>" in html


def test_a_column_without_any_value_is_left_out_and_named():
    """One trial has no standard error: its columns of nothing but nulls are left out of the table,
    and the note under it names them."""
    from perturblab.report.html_tables import records_table

    rows = [{"target": "a", "soft_scope": 0.9, "soft_scope_se": None}, {"target": "b", "soft_scope": 0.8}]
    t = records_table(rows, title="x", source="summary.json")
    assert [str(h).replace("<wbr>", "") for h in t.header] == ["target", "soft_scope"]
    assert t.rows == [["a", "0.9"], ["b", "0.8"]] and t.note == "no values in soft_scope_se (left out)"
    many = records_table(rows * 3, source="summary.json", max_rows=2)
    assert many.note == "4 more rows in summary.json; no values in soft_scope_se (left out)"


# ----------------------------------------------------------------------------- (f) the page's script
def test_the_policy_allows_the_one_script_by_its_hash(hostile_study):
    """One inline script, no attributes, allowed by ``script-src 'sha256-…'`` of its exact text;
    nothing else is allowed to run, and the script writes no markup."""
    from perturblab.report.html import script_hash

    html, page = _page(hostile_study)
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    [script] = page.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert csp == f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    assert script == report_script() and script_hash(script) == f"'sha256-{digest}'"
    assert script_hash(script + " ") != script_hash(script)
    assert script.isascii() and "</script" not in script.lower()
    for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval", "Function(",
                   "setTimeout", "setInterval", "fetch", "XMLHttpRequest", "import(", "http"):
        assert banned not in script, banned
    # the CSV tables are the sortable ones, each with an id; the JSON and markdown ones stay as they are
    sortable = [t for t in page.tables if t["attrs"].get("class") == "sortable"]
    assert [t["rows"][0] for t in sortable] == [["id", "original", "perturbed"]]
    assert re.fullmatch(r"study-[a-z0-9-]+-csv-0-table", sortable[0]["attrs"]["id"])


def test_csv_tables_show_up_to_1000_rows_and_say_how_many_more(tmp_path):
    from perturblab.report.html_tables import MAX_CSV_ROWS

    d = tmp_path / "big"
    d.mkdir()
    (d / "results.json").write_text("[]")
    (d / "perturbed_examples.csv").write_text("id,score\n" + "".join(f"{i},{i / 7}\n" for i in range(1003)))
    html, page = _page(d)
    [t] = [t for t in page.tables if t["attrs"].get("class") == "sortable"]
    assert MAX_CSV_ROWS == 1000 and len(t["rows"]) == 1 + 1000
    assert "3 more rows in perturbed_examples.csv" in page.visible
    # a rounded cell keeps the exact value it sorts by
    assert '<td class="num" data-v="0.14285714285714285">0.1429</td>' in html
    assert '<td class="num">0</td>' in html


def test_dump_dom_errors(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="is not a file"):
        dump_dom(tmp_path / "missing.html")
    page = tmp_path / "p.html"
    page.write_text("<p>x</p>")
    monkeypatch.setenv("PERTURBLAB_CHROMIUM", str(tmp_path / "no-such-chromium"))
    with pytest.raises(InputError, match=r"dump_dom: .*no-such-chromium.*setup\.sh --browser"):
        dump_dom(page)


# ----------------------------------------------------------------------------- (g) in the browser
#: a study written here: numbers that sort differently as text, a unicode minus, two values that
#: round alike, an empty cell, text with upper case, commas, a colon and an ampersand, and a long
#: unbroken word
MIXED_CSV = [["name", "score", "note"], ["beta", "10", "plain"], ["Alpha", "9", "<b>x</b>"],
             ["gamma", "-2", "comma, inside"], ["delta", "1e-3", ""], ["Epsilon", "", "no score"],
             ["zeta", "2.5", "ratio x:y&z"], ["eta", "−4", "minus"], ["theta", "0.10000001", "rounds to 0.1"],
             ["iota", "0.1", "w" * 120]]
LONG_NAME = "a_study_name_with_no_place_to_break_" * 3


@pytest.fixture(scope="module")
def run_report(tmp_path_factory):
    """The report of a run directory: ``a_scope``, a real SCoPE study (TF-IDF + LR against itself
    under typos: a figure and the CSV files perturbed_examples, examples_table and metrics), and
    ``b_mixed``, a study of one CSV file (:data:`MIXED_CSV`) under a long unbroken name."""
    root = tmp_path_factory.mktemp("report_run")
    data = write_marker_csv(root / "data.csv", 120)
    run = root / "run"
    assert main(["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo",
                 "--data", str(data), "--n", "30", "--trials", "1", "--out", str(run / "a_scope"), "--quiet"]) == 0
    mixed = run / "b_mixed"
    mixed.mkdir()
    (mixed / "study.json").write_text(json.dumps({"name": LONG_NAME, "kind": "mixed"}))
    with (mixed / "values.csv").open("w", newline="") as f:
        csv.writer(f).writerows(MIXED_CSV)
    return write_report(run, out_path=root / "report.html", title="perturblab_report_of_the_run_" * 2)


def csv_rows(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def csv_table_id(html: str, file_name: str) -> str:
    """The id of the table that shows CSV file ``file_name`` (its heading's id, then ``-table``)."""
    m = re.search(r'<h3 id="([^"]+)">[^<]*</h3>\s*<p class="sub"><code>' + re.escape(file_name) + "</code>", html)
    return m.group(1) + "-table"


def counts(dom: str) -> dict[str, str]:
    """Table id -> the count line above it ("showing k of N rows")."""
    found = re.findall(r'<span class="count"[^>]*>([^<]*)</span>.*?<table id="([^"]+)"', dom, re.S)
    return {table: count for count, table in found}


def shown(table: dict, column: int) -> list[str]:
    """The cells of ``column`` in the rows of ``table`` not hidden, in page order."""
    return [r[column] for r, a in zip(table["rows"][1:], table["tr"][1:]) if "hidden" not in a]


def with_script(html: str, js: str) -> str:
    """``html`` with one more inline script at the end of its body, admitted by its own hash."""
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    html = html.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    return html.replace("</body>", f"<script>{js}</script>\n</body>", 1)


@pytest.mark.browser
def test_a_sort_in_the_fragment_orders_the_rows(chromium, run_report):
    """``#sort=<table>:<column>:<asc|desc>``: numbers by their exact value (the cells without one
    last), text case-insensitively, equal keys in the file's order; ▲/▼ and aria-sort on the column."""
    html = run_report.read_text(encoding="utf-8")
    scope = run_report.parent / "run" / "a_scope"
    pert, side = csv_table_id(html, "perturbed_examples.csv"), csv_table_id(html, "examples_table.csv")
    mixed = csv_table_id(html, "values.csv")
    p_rows, s_rows = csv_rows(scope / "perturbed_examples.csv"), csv_rows(scope / "examples_table.csv")
    p_cols, s_cols = list(p_rows[0]), list(s_rows[0])
    loss, typo = p_cols.index("reference_loss"), s_cols.index("typo")

    by_loss = [r["sample_id"] for r in sorted(p_rows, key=lambda r: float(r["reference_loss"]), reverse=True)]
    by_typo = [r["sample_id"] for r in sorted(s_rows, key=lambda r: r["typo"].lower())]
    m_rows = [dict(zip(MIXED_CSV[0], r)) for r in MIXED_CSV[1:]]
    by_score = [r["name"] for r in sorted((r for r in m_rows if r["score"]), reverse=True,
                                          key=lambda r: float(r["score"].replace("−", "-")))]
    by_score += [r["name"] for r in m_rows if not r["score"]]
    assert by_score == ["beta", "Alpha", "zeta", "theta", "iota", "delta", "gamma", "eta", "Epsilon"]
    assert by_loss != [r["sample_id"] for r in p_rows] and by_typo != [r["sample_id"] for r in s_rows]

    dom_html = dump_dom(run_report, f"sort={pert}:{loss}:desc&sort={side}:{typo}&sort={mixed}:1:desc",
                        chromium=chromium)
    dom = Page(dom_html)
    assert dom_html.count('class="filter"') == html.count('class="sortable"') == 4  # the script ran
    assert shown(dom.table(pert), p_cols.index("sample_id")) == by_loss
    assert shown(dom.table(side), s_cols.index("sample_id")) == by_typo
    assert shown(dom.table(mixed), 0) == by_score
    for table, col, sort, mark in ((pert, loss, "descending", "▼"), (side, typo, "ascending", "▲"),
                                   (mixed, 1, "descending", "▼")):
        t = dom.table(table)
        assert [a.get("aria-sort") for a in t["th"]] == [sort if j == col else None for j in range(len(t["th"]))]
        assert [h.endswith(mark) for h in t["rows"][0]] == [j == col for j in range(len(t["th"]))]
    assert dom.table(csv_table_id(html, "metrics.csv"))["th"][0].get("aria-sort") is None


@pytest.mark.browser
def test_a_filter_in_the_fragment_hides_the_other_rows(chromium, run_report):
    """``#filter=<table>:<text>`` (percent-encoded): only the rows with a cell holding the text, in any
    case, stay visible, and the count above the table says how many; other tables keep every row."""
    html = run_report.read_text(encoding="utf-8")
    scope = run_report.parent / "run" / "a_scope"
    pert, mixed = csv_table_id(html, "perturbed_examples.csv"), csv_table_id(html, "values.csv")
    p_rows = csv_rows(scope / "perturbed_examples.csv")
    query = "HOUSE->"
    expected = [r["sample_id"] for r in p_rows if any(query.lower() in v.lower() for v in r.values())]
    assert 0 < len(expected) < len(p_rows)

    dom_html = dump_dom(run_report, f"filter={pert}:{quote(query, safe='')}&filter={mixed}:{quote(':Y&Z', safe='')}",
                        chromium=chromium)
    dom = Page(dom_html)
    assert shown(dom.table(pert), list(p_rows[0]).index("sample_id")) == expected
    assert shown(dom.table(mixed), 0) == ["zeta"]
    found = counts(dom_html)
    assert found[pert] == f"showing {len(expected)} of {len(p_rows)} rows"
    assert found[mixed] == f"showing 1 of {len(MIXED_CSV) - 1} rows"
    side = csv_table_id(html, "examples_table.csv")
    assert found[side] == "showing 30 of 30 rows" and len(shown(dom.table(side), 0)) == 30
    assert len(found) == 4


@pytest.mark.browser
def test_the_policy_runs_the_script_by_its_hash_alone(chromium, run_report, tmp_path):
    """The same page with its script one space longer runs no script (no filter boxes); with the
    policy's hash made from the altered text it runs again."""
    html = run_report.read_text(encoding="utf-8")
    script = Page(html).scripts[0]
    altered = script.replace('"use strict";', '"use strict"; ', 1)
    assert altered != script and html.count(script) == 1
    page = tmp_path / "altered.html"
    page.write_text(html.replace(script, altered), encoding="utf-8")
    assert 'class="filter"' not in dump_dom(page, chromium=chromium)
    old = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    new = base64.b64encode(hashlib.sha256(altered.encode()).digest()).decode()
    page.write_text(html.replace(script, altered).replace(old, new), encoding="utf-8")
    assert dump_dom(page, chromium=chromium).count('class="filter"') == 4


#: writes the page's widths (scroll width, client width, window width) and main's left padding
#: into an attribute of the root element
WIDTHS = ("var d = document.documentElement, m = getComputedStyle(document.querySelector('main'));"
          "d.setAttribute('data-widths', [d.scrollWidth, d.clientWidth, innerWidth, m.paddingLeft].join(' '));")


@pytest.mark.browser
def test_at_phone_width_the_page_does_not_scroll_sideways(chromium, run_report, tmp_path):
    """At 390 px (rendered in a frame that wide), with the phone layout on (main's padding 10px),
    the document is no wider than the window: long titles, names and paths wrap, wide tables
    scroll in their own boxes. Measured by a second script, admitted by its own hash, that writes
    ``scrollWidth``, ``clientWidth`` and ``innerWidth`` into the DOM."""
    page = tmp_path / "probe.html"
    page.write_text(with_script(run_report.read_text(encoding="utf-8"), WIDTHS), encoding="utf-8")
    dom = dump_dom(page, width=390, height=800, chromium=chromium)
    scroll, client, inner, pad = re.search(r'data-widths="([^"]*)"', dom).group(1).split()
    assert (int(inner), pad) == (390, "10px")
    assert int(scroll) <= int(client) <= 390, (scroll, client)
    assert dom.count('class="filter"') == 4


@pytest.mark.browser
@pytest.mark.parametrize("width", [1200, 390])
def test_screenshot_at_desktop_and_phone_width(chromium, run_report, tmp_path, width):
    """The top of the run's report (contents, the SCoPE study's figure) at 1200 px and at a phone's
    390 px: not blank, dark text, the figure in colour, and nothing drawn in the page's right
    margin (nothing cut at the edge: what is wider scrolls inside its own box)."""
    import matplotlib.image

    shot = screenshot(run_report, tmp_path / f"report_{width}.png", width=width, height=1800, chromium=chromium)
    img = matplotlib.image.imread(shot)
    assert img.shape[:2] == (1800, width)
    gray = img[..., :3].mean(axis=2)
    assert gray.std() > 0.05 and (gray < 0.5).mean() > 0.005
    assert (np.abs(img[..., 0] - img[..., 2]) > 0.3).mean() > 0.005  # the figure's bars
    assert (gray[:, -8:] > 0.97).all()


#: clicks the second column's name of the first sortable table twice, types into its filter box,
#: and writes what the page shows into an attribute of the root element
CLICKS = ("var t = document.querySelector('table.sortable'), th = t.tHead.rows[0].cells[1], seen = [];"
          "th.querySelector('button').click(); seen.push(th.getAttribute('aria-sort'));"
          "th.querySelector('button').click(); seen.push(th.getAttribute('aria-sort'));"
          "var input = document.querySelector('.filter input'); input.value = 'Night!';"
          "input.dispatchEvent(new Event('input'));"
          "seen.push(document.querySelector('.filter .count').textContent, location.hash);"
          "document.documentElement.setAttribute('data-seen', JSON.stringify(seen));")


@pytest.mark.browser
def test_clicks_and_typing_sort_filter_and_write_the_address(chromium, run_report, tmp_path):
    """A click on a column's name sorts ascending, a second descending; typing filters; the URL
    fragment then holds both, in the syntax the page reads on load."""
    html = run_report.read_text(encoding="utf-8")
    side = csv_table_id(html, "examples_table.csv")
    rows = csv_rows(run_report.parent / "run" / "a_scope" / "examples_table.csv")
    page = tmp_path / "clicks.html"
    page.write_text(with_script(html, CLICKS), encoding="utf-8")
    dom = dump_dom(page, chromium=chromium)
    seen = json.loads(unescape(re.search(r'data-seen="([^"]*)"', dom).group(1)))
    k = sum("night!" in "\n".join(r.values()).lower() for r in rows)
    assert 0 < k < len(rows)
    assert seen == ["ascending", "descending", f"showing {k} of {len(rows)} rows",
                    f"#sort={side}:1:desc&filter={side}:Night!"]


# ----------------------------------------------------------------------------- (f) headline
def test_a_study_section_opens_with_its_headline_then_figures_then_the_detail(robustness_study):
    """The section's first part is its headline (the sentence and a table of estimates with their
    intervals, computed here from summary.json independently), before the flags, the figures and
    the tables; headline.json is not shown again as a file."""
    html, page = _page(robustness_study)
    summary = json.loads((robustness_study / "summary.json").read_text())
    sid = re.search(r'<section id="([^"]+)">', html).group(1)
    parts = [f'id="{sid}-headline"', 'class="flags"', f'id="{sid}-figures"', f'id="{sid}-tables"']
    at = {k: html.index(k) for k in parts if k in html}
    assert len(at) >= 3
    assert list(at) == sorted(at, key=at.get), at
    assert "Relative robustness = 1 − (clean − perturbed) / clean accuracy" in html
    for c in summary["cells"]:  # one draw: each cell's paired-bootstrap interval, to 3 decimals
        lo, hi = c["ci"]
        assert f"{c['mean']:.3f} [{lo:.3f}, {hi:.3f}]" in html
    assert "<code>headline.json</code>" not in html
    contents = re.search(r"<nav>.*?</nav>", html, re.S).group(0)
    assert contents.index("At a glance") < contents.index("Figures")


def test_outputs_without_a_headline_say_how_to_get_one(tmp_path, robustness_study):
    old = tmp_path / "old"
    shutil.copytree(robustness_study, old)
    (old / "headline.json").unlink()
    html, _ = _page(old)
    assert "No headline.json" in html and "nothing is computed again" in html


def test_markdown_list_items_make_one_list_and_stay_escaped():
    blocks = parse_markdown("Flags:\n\n- **m**: one <b>class</b>\n\n- n: chance level\n\nafter\n")
    assert [b.kind for b in blocks] == ["paragraph", "list", "paragraph"]
    assert [str(x) for x in blocks[1].text] == ["<strong>m</strong>: one &lt;b&gt;class&lt;/b&gt;",
                                                "n: chance level"]
