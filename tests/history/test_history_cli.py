"""``perturblab history``: list, accept, check (its exit codes) and the trend page (its content,
escaping and policy), on releases stored in a real SQLite file."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from test_history_store import release

from perturblab.cli import main
from perturblab.history.store import open_history


@pytest.fixture
def history(tmp_path):
    """v1 (accepted) agrees everywhere; v2 loses 1 example of 40, v3 loses 12 (a regression), v4 1."""
    where = tmp_path / "history.sqlite"
    with open_history(where) as h:
        for label, lost in (("v1", 0), ("v2", 1), ("v3", 12), ("v4", 1)):
            h.append(release(label, lost=lost))
    return where


def test_check_exits_1_on_the_release_that_regressed_only(history, capsys, tmp_path):
    assert main(["history", "accept", str(history), "v1"]) == 0
    codes = {v: main(["history", "check", str(history), "--release", v, "--fail-on-regression", "--window", "0"])
             for v in ("v2", "v3", "v4")}
    assert codes == {"v2": 0, "v3": 1, "v4": 0}
    out = capsys.readouterr().out
    assert "regressed (1):" in out and "agreement (invariances) 1.000 → 0.700: −0.300" in out
    # without --fail-on-regression it reports and passes; an equivalence margin fails it
    assert main(["history", "check", str(history), "--release", "v3", "--json", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["regressions"] == 1
    assert main(["history", "check", str(history), "--release", "v2", "--equivalent", "agreement=0.2",
                 "--window", "0"]) == 0
    assert main(["history", "check", str(history), "--release", "v2", "--equivalent", "agreement=0.01"]) == 1


def test_check_against_a_named_baseline_and_errors_exit_2(history, capsys, tmp_path):
    assert main(["history", "check", str(history), "--release", "v3", "--baseline", "v2",
                 "--fail-on-regression", "--window", "0"]) == 1
    capsys.readouterr()
    assert main(["history", "check", str(history), "--release", "v2", "--require-baseline"]) == 2  # none accepted
    assert "no release of the same setup was accepted" in capsys.readouterr().err
    assert main(["history", "check", str(history), "--release", "v2", "--baseline", "v9"]) == 2  # no such label
    assert "'v9' is not in the history" in capsys.readouterr().err
    assert main(["history", "check", str(history), "--release", "v9", "--baseline", "v1"]) == 2
    assert "'v9' is not in the history" in capsys.readouterr().err
    assert main(["history", "list", str(tmp_path / "none.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()  # a reading command creates nothing
    assert main(["history", "list", "postgresql://nobody@127.0.0.1:1/releases"]) == 2  # no server there
    assert "cannot open it" in capsys.readouterr().err


def test_list_and_a_release_of_another_setup_is_not_a_baseline(history, capsys):
    with open_history(history) as h:
        h.append(release("other", setup={"options": {"data": "sst2"}}))
    assert main(["history", "list", str(history)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[0] for ln in lines] == ["v1", "v2", "v3", "v4", "other"]
    assert main(["history", "check", str(history), "--release", "other", "--baseline", "v1"]) == 2
    assert "another setup" in capsys.readouterr().err


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.scripts += tag == "script"


def test_trend_page_charts_flags_and_escapes(history, tmp_path):
    hostile = '<img src=x onerror=alert(1)>"'
    with open_history(history) as h:
        h.accept("v1")
        h.append(release("v5 " + hostile, lost=0, target="cand<script>"))
    out = tmp_path / "trend.html"
    assert main(["history", "report", str(history), "--out", str(out)]) == 0
    html = out.read_text()
    page = _Page()
    page.feed(html)
    csp = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0] and "script-src 'sha256-" in csp[0]
    assert page.scripts == 1 and "<img src=x" not in html and "<script>" not in html.split("<script>", 1)[0][:-1]
    assert "cand&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert sum(t == "svg" for t, _ in page.tags) == 2  # one chart per target and key
    assert "regressed in v3" in html  # v3 against the accepted v1
    assert re.search(r'<td class="regressed">regressed</td>', html)
    assert sum(t == "circle" and "acc" in a.get("class", "") for t, a in page.tags) == 1  # v1, accepted
    assert any(t == "table" and a.get("class") == "sortable" for t, a in page.tags)


def test_a_change_beyond_noise_but_below_min_change_is_small_not_a_regression(tmp_path, capsys):
    """A quantised copy's Soft-SCoPE: every term a little below the reference copy's 1 (0.003 to
    0.007 below, about 0.995): beyond noise on 2,000 examples, but half a point, so not counted
    unless --min-change 0 asks for every change beyond noise. (This was 40 examples about 0.998,
    beyond noise by the bootstrap-t test; the betting test, valid for every distribution of
    differences in [−1, 1], cannot tell so small a change on 40 examples from one example of 40
    being far higher, so the case needs more examples.)"""
    import numpy as np

    from perturblab.history.release import Release

    rng = np.random.default_rng(0)
    where = tmp_path / "h.sqlite"

    def soft(label, terms):
        v = float(np.mean(list(terms.values())))
        return Release(label, "minilm-l6", {"data": "x"}, {"candidate": {"spec": "m"}},
                       [{"target": "candidate", "study": "invariances", "key": "soft_scope:typo", "value": v,
                         "low": v - 0.01, "high": min(1.0, v + 0.01), "n": 2000, "better": "higher"}],
                       {("candidate", "invariances", "soft_scope:typo"): terms})

    with open_history(where) as h:
        h.append(soft("v1", {str(i): 1.0 for i in range(2000)}))
        h.append(soft("v2", {str(i): float(1 - rng.uniform(0.003, 0.007)) for i in range(2000)}))
        h.accept("v1")
    assert main(["history", "check", str(where), "--release", "v2", "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "beyond noise but smaller than 0.01, not counted (1):" in out and "no regression beyond noise" in out
    assert main(["history", "check", str(where), "--release", "v2", "--fail-on-regression", "--min-change", "0"]) == 1
    assert "regressed (1):" in capsys.readouterr().out
    assert main(["history", "check", str(where), "--release", "v2", "--min-change", "-1"]) == 2


def test_first_run_with_no_accepted_baseline_passes_and_says_so(tmp_path, capsys):
    """A history's first release: nothing to compare with, so the check of a CI job's first run
    passes (exit 0) and says why in its first line; --require-baseline keeps the refusal."""
    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        h.append(release("v1", lost=3))
    code = main(["history", "check", str(where), "--release", "v1", "--fail-on-regression",
                 "--equivalent", "agreement=0.02", "--json", str(tmp_path / "c.json")])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == "release v1: no accepted baseline (no release of its setup was accepted before it); nothing to compare"
    assert "--equivalent: not checked, no baseline to compare v1 with" in out
    assert any(line.startswith(f"accept a baseline with `perturblab history accept {where} LABEL`") for line in out)
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["baseline"] is None and data["changes"] == [] and data["equivalence"] == [] and data["tests"] == 0
    with open_history(where) as h:
        assert h.release("v1").accepted is None  # nothing accepted without --accept-first
    assert main(["history", "check", str(where), "--release", "v1", "--require-baseline"]) == 2
    assert "no release of the same setup was accepted before v1" in capsys.readouterr().err


def test_accept_first_makes_the_first_release_the_baseline(tmp_path, capsys):
    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        h.append(release("v1"))
    assert main(["history", "check", str(where), "--release", "v1", "--accept-first", "--fail-on-regression"]) == 0
    assert "release v1 accepted as the first baseline of its setup" in capsys.readouterr().out
    with open_history(where) as h:
        assert h.release("v1").accepted is not None
        h.append(release("v2", lost=12))
    # the next release is compared with it, and --accept-first accepts nothing once a baseline exists
    assert main(["history", "check", str(where), "--release", "v2", "--accept-first", "--fail-on-regression",
                 "--window", "0"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("release v2 against v1: 1 estimate compared") and "regressed (1):" in out
    with open_history(where) as h:
        assert h.release("v2").accepted is None
    assert main(["history", "check", str(where), "--release", "v2", "--accept-first", "--baseline", "v1"]) == 2
    assert "--accept-first accepts a first baseline" in capsys.readouterr().err


def test_no_baseline_of_the_setup_names_an_accepted_release_of_another(tmp_path, capsys):
    """A changed setup leaves the new releases with no baseline: the check says which accepted
    release is of another setup, and what differs, instead of passing unseen."""
    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        h.append(release("v1"))
        h.accept("v1")
        h.append(release("v2", setup={"options": {"data": "sst2"}}))
    assert main(["history", "check", str(where), "--release", "v2"]) == 0
    out = capsys.readouterr().out
    assert "release v1 is accepted but was measured on another setup (differs in: options), so it is no baseline " \
           "of v2" in out


def _many(label: str, lost: int, n: int = 50, others: int = 23):
    """A release with ``agreement`` (1 but for the first ``lost`` of ``n`` examples) and ``others``
    Hard-SCoPE estimates that never change: ``others`` + 1 tests."""
    from perturblab.history.release import Release

    def est(key, terms):
        v = sum(terms.values()) / n
        return {"target": "candidate", "study": "invariances", "key": key, "measure": key, "value": v,
                "low": v - 0.05, "high": min(1.0, v + 0.05), "n": n, "better": "higher"}

    terms = {"agreement": {str(i): 0.0 if i < lost else 1.0 for i in range(n)}}
    terms.update({f"hard_scope:c{j}": {str(i): 1.0 for i in range(n)} for j in range(others)})
    return Release(label, "minilm-l6", {"data": "x"}, {"candidate": {"spec": "m"}},
                   [est(k, t) for k, t in terms.items()],
                   {("candidate", "invariances", k): t for k, t in terms.items()})


def test_a_change_beyond_noise_alone_but_not_after_holm_is_shown(tmp_path, capsys):
    """Agreement 1.000 → 0.880 (6 of 50 examples lost, none gained): McNemar's one-sided p is
    0.5⁶ = 0.015625, below 5 % alone; over 24 tests Holm multiplies the smallest p by 24, 0.375,
    so it is no regression, but the console shows it apart with both p values."""
    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        h.append(_many("v1", 0))
        h.append(_many("v2", 6))
        h.accept("v1")
    assert main(["history", "check", str(where), "--release", "v2", "--fail-on-regression", "--window", "0",
                 "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    head = "moved, not beyond noise after adjustment (1, not counted: p ≤ 0.05 alone, not after Holm):"
    assert head in out
    line = out.splitlines()[out.splitlines().index(next(x for x in out.splitlines() if x.startswith(head))) + 1]
    assert line.startswith("  candidate: agreement (invariances) 1.000 → 0.880: −0.120 [")
    assert line.endswith("(paired, n = 50; p = 0.0156, 0.375 after Holm over 24 tests)")
    assert "no estimate moved beyond noise (5 % family-wise error rate over 24 tests, Holm)" in out
    data = json.loads((tmp_path / "c.json").read_text())
    agreement = next(c for c in data["changes"] if c["key"] == "agreement")
    assert agreement["p"] == pytest.approx(0.5 ** 6, rel=1e-9) and agreement["adjusted"] == pytest.approx(0.375)
    assert agreement["verdict"] == "same" and data["not_beyond_noise_after_adjustment"] == 1 and data["tests"] == 24


def test_trend_page_links_reports_relative_to_its_own_folder(tmp_path):
    """Reports stored at ci/gate/v1/report.html, the page written to ci/site/trend.html: the link
    is ../gate/v1/report.html (a space quoted), which still leads there once the folder is copied
    elsewhere as one artifact; render_trend with no folder keeps the file:// address."""
    import shutil

    from perturblab.history.trend import render_trend

    report = tmp_path / "ci" / "gate" / "v 1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<p>the report</p>")
    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        r = release("v1")
        r.report = str(report.resolve())
        h.append(r)
    page = tmp_path / "ci" / "site" / "trend.html"
    page.parent.mkdir()
    assert main(["history", "report", str(where), "--out", str(page)]) == 0
    hrefs = {a["href"] for t, a in _tags(page.read_text()) if t == "a" and "href" in a}
    assert "../gate/v%201/report.html" in hrefs and not any(x.startswith("file:") for x in hrefs)
    moved = tmp_path / "artifact"
    shutil.copytree(tmp_path / "ci", moved)  # the link resolves the same from the copy
    from urllib.parse import unquote
    assert ((moved / "site") / unquote("../gate/v%201/report.html")).resolve().read_text() == "<p>the report</p>"
    with open_history(where) as h:
        assert report.resolve().as_uri() in render_trend(h)


def _tags(html: str) -> list[tuple[str, dict]]:
    page = _Page()
    page.feed(html)
    return page.tags
