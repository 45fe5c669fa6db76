"""The report in headless Chromium: its screenshots at desktop and phone width, and the CSV
tables sorted and filtered from the URL fragment, by clicks and by typing (marked ``browser``;
they skip without Chromium, and fail then under PERTURBLAB_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import re
from html import unescape
from urllib.parse import quote

import numpy as np
import pytest
from helpers.marker_data import write_marker_csv
from report_pages import Page

from perturblab.cli import main
from perturblab.report.html import write_report
from perturblab.report.screenshot import dump_dom, screenshot


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


#: writes the right edge of the verdicts' rightmost cell, how many of their table boxes scroll
#: sideways, how many cells they have and the window's width into an attribute of the root element
VERDICT_EDGES = ("var cells = document.querySelectorAll('#verdicts td'), right = 0, scrolls = 0;"
                 "cells.forEach(function (c) { var r = c.getBoundingClientRect();"
                 " if (r.width > 0) right = Math.max(right, r.right); });"
                 "document.querySelectorAll('#verdicts .tw').forEach(function (w) {"
                 " if (w.scrollWidth > w.clientWidth + 1) scrolls++; });"
                 "document.documentElement.setAttribute('data-verdicts',"
                 " [Math.ceil(right), scrolls, cells.length, innerWidth].join(' '));")


@pytest.fixture(scope="module")
def compare_report(tmp_path_factory):
    """The report of a small comparison (TF-IDF + LR against MiniLM-L3 and a twin of itself)."""
    import dataclasses

    from perturblab.studies.compare import plan as plan_module

    root = tmp_path_factory.mktemp("compare_report")
    data = write_marker_csv(root / "data.csv", 160)
    mp = pytest.MonkeyPatch()
    mp.setattr(plan_module, "cost_of", lambda name, kind, args=None, cost=plan_module.cost_of:
               dataclasses.replace(cost(name, kind, args), least=12, most=12))
    try:
        assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3,twin=tfidf-lr", "--data", str(data),
                     "--studies", "invariances,robustness", "--out", str(root / "cmp"), "--quiet"]) in (0, 1)
    finally:
        mp.undo()
    return root / "cmp" / "report.html"


@pytest.mark.browser
def test_every_verdict_number_reads_without_scrolling_sideways(chromium, compare_report, tmp_path):
    """The verdict tables (estimates, examples, checks) at desktop width and at a phone's 390 px:
    every cell lies within the window and no table box scrolls sideways (at phone width each row
    is a block of "column: value" lines). Both widths in one test, so that test workers make the
    comparison behind the report once."""
    page = tmp_path / "probe.html"
    page.write_text(with_script(compare_report.read_text(encoding="utf-8"), VERDICT_EDGES), encoding="utf-8")
    for width in (1200, 390):
        dom = dump_dom(page, width=width, height=900, chromium=chromium)
        right, scrolls, cells, inner = map(int, re.search(r'data-verdicts="([^"]*)"', dom).group(1).split())
        assert inner == width and cells > 20, (width, inner, cells)
        assert right <= width and scrolls == 0, (width, right, scrolls)
        assert 'data-label="n"' in dom, width
