"""The headline table that opens each study's section of the HTML report.

:func:`headline_table` lays a :class:`~perturblab.core.headline.Headline` out as one table: a row
per measure, a column per subject (model, or pair of models), each cell the estimate with its
95 % interval. The n and what the intervals are over go where they say the most with the least
repetition: in the note when they are the same for every estimate, in a column when they are the
same along each row, else in the cells.
"""

from __future__ import annotations

from typing import Any

from ..core.headline import CUT, Estimate, Headline
from .html_tables import Table

FLAG_MARK = "⚑"
#: the mark of a cell whose interval was cut to the measure's range
CUT_MARK = "†"
ARROWS = {"higher": " ↑", "lower": " ↓"}


def _same(values: list[Any]) -> bool:
    return len(set(values)) <= 1


def _n(n: Any) -> str:
    return "—" if n is None else str(n)


def headline_tables(headline: Headline) -> list[Table]:
    """``headline`` as tables (:func:`headline_table`), one per run of measures about the same
    subjects: a headline mixing per-model estimates with estimates across models (learnability's
    correlations) gets one table for each, not one mostly empty table."""
    blocks: list[list[Estimate]] = []
    subjects_of = {m: frozenset(e.subject for e in headline.estimates if e.measure == m)
                   for m in dict.fromkeys(e.measure for e in headline.estimates)}
    last = None
    for m, subjects in subjects_of.items():
        if subjects != last:
            blocks.append([])
            last = subjects
        blocks[-1] += [e for e in headline.estimates if e.measure == m]
    return [headline_table(Headline(headline.sentence, block)) for block in blocks]


def headline_table(headline: Headline) -> Table:
    """``headline`` as a report :class:`~perturblab.report.html_tables.Table` (see the module
    docstring): header ``measure, <subjects>``, then ``n`` and ``interval`` columns where those are
    constant along each row; flagged estimates marked ⚑ and named in the note."""
    ests = headline.estimates
    measures = list(dict.fromkeys(e.measure for e in ests))
    subjects = list(dict.fromkeys(e.subject for e in ests))
    cell: dict[tuple[str, str], Estimate] = {(e.measure, e.subject): e for e in ests}
    by_row = {m: [e for e in ests if e.measure == m] for m in measures}
    kind = {id(e): e.interval.split(CUT)[0] for e in ests}  # what the interval is over, cut or not
    n_all, iv_all = _same([e.n for e in ests]), _same([kind[id(e)] for e in ests])
    n_rows = not n_all and all(_same([e.n for e in row]) for row in by_row.values())
    iv_rows = not iv_all and all(_same([kind[id(e)] for e in row]) for row in by_row.values())
    cuts = list(dict.fromkeys(e.interval.split(CUT)[1] for e in ests if CUT in e.interval))
    header = ["measure", *subjects] + (["n"] if n_rows else []) + (["interval"] if iv_rows else [])
    rows = []
    for m in measures:
        row: list[Any] = [m + ARROWS.get(by_row[m][0].better, "")]
        for s in subjects:
            e = cell.get((m, s))
            if e is None:
                row.append("")
                continue
            text = e.text()
            if CUT in e.interval:
                text += CUT_MARK
            if not (n_all or n_rows):
                text += f" (n = {_n(e.n)})"
            if not (iv_all or iv_rows) and e.interval:
                text += f" ({kind[id(e)]})"
            row.append(text + (f" {FLAG_MARK}" if e.flags else ""))
        row += [_n(by_row[m][0].n)] if n_rows else []
        row += [kind[id(by_row[m][0])]] if iv_rows else []
        rows.append(row)
    notes = ["Each cell: the estimate [its 95 % interval]."] if any(e.low is not None for e in ests) else []
    if ests and iv_all and ests[0].interval:
        notes.append(f"Intervals: {kind[id(ests[0])]}.")
    if cuts:
        notes.append(f"{CUT_MARK} an interval that reached past the measure's range, cut to it "
                     f"({'; '.join(c.strip() for c in cuts)}).")
    if ests and n_all:
        notes.append(f"n = {_n(ests[0].n)} for every estimate.")
    arrows = sorted({e.better for e in ests if e.better in ARROWS})
    if arrows:
        notes.append(" ".join(f"{ARROWS[b].strip()} {b} is better." for b in arrows))
    flagged = list(dict.fromkeys(f"{e.subject}: {', '.join(e.flags)}" for e in ests if e.flags))
    if flagged:
        notes.append(f"{FLAG_MARK} flagged ({'; '.join(flagged)}): read it with the Flags above.")
    numeric = [False] + [True] * len(subjects) + ([True] if n_rows else []) + ([False] if iv_rows else [])
    return Table(header=header, rows=rows, numeric=numeric, note=" ".join(notes))
