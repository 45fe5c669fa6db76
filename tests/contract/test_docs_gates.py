"""The gates the documentation shows are gates the command takes: every ``--fail-under`` and
``--equivalent`` example of README.md and the CI, compare and history pages (and the
``fail-under:``/``equivalent:`` lists of a study config) reads as ``METRIC=VALUE``, names a key a
classifier comparison gives (:func:`~perturblab.studies.compare.keys.check_metrics`), with a
capability or perturbation that exists, and a value in its range; and no ``--fail-under`` example
gates on a target's own score, which even a perfect copy of the reference can fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perturblab.studies.compare.config import threshold
from perturblab.studies.compare.keys import check_margin, check_metrics, check_range, gap_of
from perturblab.studies.part import CLASSIFIER, parts

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/ci.md", "docs/compare.md", "docs/history.md")
#: an option and its METRIC=VALUE on a command line (a shell line, a YAML run: block, prose in backticks)
FLAG = re.compile(r"--(fail-under|equivalent)[ =]([A-Za-z_][\w:|.*-]*\s*=\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+))")
#: the same as a study config's list: ``fail-under: [hard_scope:typo=0.9]``
LISTED = re.compile(r"^\s*(fail-under|equivalent):\s*\[([^\]]*)\]", re.M)


def gates(page: str) -> list[tuple[str, str]]:
    """(option, METRIC=VALUE) of every gate example on ``page``."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = [(m.group(1), m.group(2)) for m in FLAG.finditer(text)]
    found += [(m.group(1), item.strip()) for m in LISTED.finditer(text) for item in m.group(2).split(",")
              if item.strip()]
    return found


def test_the_pages_show_gates():
    """The parser finds the examples (a page whose examples it missed would pass unchecked)."""
    counts = {page: len(gates(page)) for page in PAGES}
    assert counts["README.md"] >= 4 and counts["docs/ci.md"] >= 8 and counts["docs/compare.md"] >= 4
    assert counts["docs/history.md"] >= 1


@pytest.mark.parametrize("page", PAGES)
def test_every_gate_example_names_a_key_a_comparison_takes(page):
    from perturblab.perturb.capabilities import CAPABILITIES
    from perturblab.perturb.catalogue import perturbation_names

    studies = [name for name, part in parts().items() if part.serves(CLASSIFIER)]
    perturbations = set(perturbation_names("robustness")) | set(perturbation_names("all"))
    second = {"hard_scope": set(CAPABILITIES.names()), "soft_scope": set(CAPABILITIES.names()),
              "relative_robustness": perturbations, "relative_robustness_gap": perturbations}
    for option, text in gates(page):
        metric, value = threshold(text)
        check_metrics([metric], studies, f"--{option}")  # an InputError names a key no study gives
        first, _, rest = metric.partition(":")
        if rest:
            assert first in second and rest.split(":")[0] in second[first], f"{page}: --{option} {text}"
        if option == "fail-under":
            check_range(metric, value)
            assert gap_of(metric) is None, (f"{page}: --fail-under {text} gates on the target's own score; "
                                            f"gate on {gap_of(metric)}")
        else:
            check_margin(metric, value)


def test_an_own_score_threshold_gets_a_note_naming_its_gap():
    """What the pages say: a threshold of a target's own score is taken, with a note naming the
    paired gap; a share kept or a gap gets none."""
    note = check_range("relative_robustness:change_char", 0.9)
    assert note.startswith("note: --fail-under relative_robustness:change_char=0.9 checks the target's own "
                           "relative_robustness") and "relative_robustness_gap:change_char checks the difference" in note
    assert "accuracy_gap checks the difference" in check_range("accuracy", 0.8)
    assert check_range("agreement", 0.95) == check_range("accuracy_gap", -0.02) == ""
    assert check_range("relative_robustness_gap:change_char", -0.05) == ""
    assert check_range("accuracy", 0.8, "--equivalent") == ""  # the note is of --fail-under's thresholds


def test_the_keys_examples_run():
    import doctest

    import perturblab.studies.compare.keys as keys

    result = doctest.testmod(keys)
    assert result.attempted > 0 and result.failed == 0
