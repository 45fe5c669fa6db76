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
    assert main(["history", "check", str(history), "--release", "v2"]) == 2  # nothing accepted yet
    assert "no release of the same setup was accepted" in capsys.readouterr().err
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
    """A quantised copy's Soft-SCoPE: every term a little below the reference copy's 1 (about
    0.998): beyond noise on 40 examples, but a fifth of a point, so not counted unless
    --min-change 0 asks for every change beyond noise."""
    import numpy as np

    from perturblab.history.store import Release

    rng = np.random.default_rng(0)
    where = tmp_path / "h.sqlite"

    def soft(label, terms):
        v = float(np.mean(list(terms.values())))
        return Release(label, "minilm-l6", {"data": "x"}, {"candidate": {"spec": "m"}},
                       [{"target": "candidate", "study": "invariances", "key": "soft_scope:typo", "value": v,
                         "low": v - 0.01, "high": min(1.0, v + 0.01), "n": 40, "better": "higher"}],
                       {("candidate", "invariances", "soft_scope:typo"): terms})

    with open_history(where) as h:
        h.append(soft("v1", {str(i): 1.0 for i in range(40)}))
        h.append(soft("v2", {str(i): float(1 - rng.uniform(0.001, 0.004)) for i in range(40)}))
        h.accept("v1")
    assert main(["history", "check", str(where), "--release", "v2", "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "beyond noise but smaller than 0.01, not counted (1):" in out and "no regression beyond noise" in out
    assert main(["history", "check", str(where), "--release", "v2", "--fail-on-regression", "--min-change", "0"]) == 1
    assert "regressed (1):" in capsys.readouterr().out
    assert main(["history", "check", str(where), "--release", "v2", "--min-change", "-1"]) == 2
