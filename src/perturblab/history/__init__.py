"""A history of releases: each comparison (and each training checkpoint) appended to one
database, a release checked against its baseline paired on the examples both hold, a drift test
over the last releases, and a trend page (docs/history.md).

>>> import os, tempfile
>>> from perturblab.history import Release, open_history, check_release
>>> def release(label, lost):
...     terms = {str(i): 0.0 if i < lost else 1.0 for i in range(50)}
...     value = sum(terms.values()) / 50
...     return Release(label, "minilm-l6", {"data": "rotten_tomatoes"}, {"candidate": {"spec": "minilm-l3"}},
...                    [{"target": "candidate", "study": "invariances", "key": "agreement", "value": value,
...                      "low": value - 0.05, "high": value, "n": 50, "better": "higher"}],
...                    {("candidate", "invariances", "agreement"): terms})
>>> with open_history(os.path.join(tempfile.mkdtemp(), "history.sqlite")) as h:
...     _ = h.append(release("v1", 0)), h.append(release("v2", 9)), h.accept("v1")
...     check = check_release(h, "v2")
>>> [(c.key, c.verdict, round(c.diff, 2)) for c in check.regressions()]
[('agreement', 'regressed', -0.18)]
"""

from .check import Change, Drift, HistoryCheck, check_release
from .release import Release
from .store import History, open_history
from .trend import render_trend, write_trend

__all__ = ["Change", "Drift", "History", "HistoryCheck", "Release", "check_release", "open_history", "render_trend",
           "write_trend"]
