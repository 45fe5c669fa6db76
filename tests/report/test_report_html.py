"""``perturblab report``: the self-contained HTML report of study outputs — escaping of hostile
study text, embedded figures, markdown tables, run directories, no external references, the one
inline script allowed by its hash, the headline of each section (the browser's view of it is
test_report_browser.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil

import pytest
from report_pages import Page, png

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.report.html import find_study_dirs, report_script, write_report
from perturblab.report.html_tables import parse_markdown
from perturblab.report.screenshot import dump_dom

SCRIPT = '<script>alert("x")</script>'
IMG = "<img src=x onerror=alert(1)>"
QUOTE = '" onmouseover="alert(2)'
URL = "https://evil.example/x.png"
HOSTILE = f"{SCRIPT} {IMG} {QUOTE} {URL}"

TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "nav", "section", "div",
        "footer", "h1", "h2", "h3", "h4", "h5", "h6", "p", "code", "strong", "u", "ol", "ul", "li", "a",
        "span", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "img", "wbr", "script"}
ATTRS = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "src", "alt", "data-v"}

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
