"""What the report's tests share besides their fixtures (``robustness_study`` and ``chromium``,
in tests/conftest.py): a parser of the page (:class:`Page`) and a PNG figure maker."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np


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
