"""What the report's tests share: a parser of the page (:class:`Page`), a PNG figure maker, a
real small robustness study to report on, and the Chromium the browser tests use."""

from __future__ import annotations

import os
from html.parser import HTMLParser

import numpy as np
import pytest
from conftest import write_marker_csv

from perturblab.cli import main
from perturblab.report.screenshot import find_chromium


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




@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable; skips (fails under PERTURBLAB_REQUIRE_BROWSER=1) when there is none."""
    exe = find_chromium()
    if exe is None:
        if os.environ.get("PERTURBLAB_REQUIRE_BROWSER") == "1":
            pytest.fail("PERTURBLAB_REQUIRE_BROWSER=1 but no Chromium was found; run ./setup.sh --browser")
        pytest.skip("no Chromium found (install it with ./setup.sh --browser)")
    return exe
