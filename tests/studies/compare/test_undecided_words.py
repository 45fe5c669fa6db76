"""An undecided finding says what leaves it open: where its whole 95 % interval lies above the
medium line, the words name its one-sided test (and the adjustment over the target's findings,
when that is what stops it), not the n alone."""

from __future__ import annotations

from scipy import stats

from perturblab.core.headline import wilson_interval
from perturblab.studies.part import CLASSIFIER
from perturblab.studies.compare.severity import Severity, assign_levels


def _share(key, k, n):
    return Severity(key, "invariances of the reference not kept", k / n, *wilson_interval(k, n), n=n,
                    method="wilson")


def _family(first):
    return [first] + [_share(f"hard_scope:c{i}", 0, 200) for i in range(12)]


def test_the_adjustment_named_where_it_and_not_the_test_leaves_a_finding_open():
    s = _share("hard_scope:typo", 18, 200)  # 9 %: Wilson [5.8 %, 13.8 %], exact p below 5 %
    assign_levels(_family(s), CLASSIFIER)
    p = float(stats.binom.sf(17, 200, 0.05))
    assert s.low > 0.05 and p < 0.05 < s.adjusted["medium"] and s.level == "undecided"
    assert f'does not show it: p = {p:.2g}, {s.adjusted["medium"]:.2g} after the adjustment over this ' \
           "target's findings" in s.text()
    assert "at this n" not in s.text()


def test_the_exact_test_named_where_it_asks_more_than_the_wilson_interval():
    s = _share("hard_scope:fairness", 4, 30)  # 13 %: Wilson [5.3 %, 29.7 %], exact p = 0.061
    assign_levels(_family(s), CLASSIFIER)
    assert s.low > 0.05 and s.p["medium"] > 0.05 and s.level == "undecided"
    assert f'p = {float(stats.binom.sf(3, 30, 0.05)):.2g}, the exact test asking more than the interval' in s.text()


def test_an_interval_reaching_below_the_line_keeps_its_span():
    s = _share("hard_scope:typo", 6, 100)
    s.span = "minor to major"
    assign_levels(_family(s), CLASSIFIER)
    assert s.level == "undecided" and "(its interval reaches minor to major)" in s.text()


def test_an_accuracy_gap_states_a_direction_only_where_the_targets_findings_hold_it():
    from perturblab.core.headline import Estimate
    from perturblab.studies.part import side
    from perturblab.studies.compare.severity import rate_finding

    def gap(value, low, high):
        return Estimate("t", "gap", value, low, high, n=200, interval="95 % Jeffreys", key="accuracy_gap")

    held, alone = gap(-0.06, -0.09, -0.03), gap(-0.021, -0.041, -0.001)  # z = 3.9 and 2.1 (p 1e-4, 0.036)
    found = [rate_finding(held, CLASSIFIER), rate_finding(alone, CLASSIFIER)]
    found[1].key = "accuracy_gap:other"
    assign_levels(_family(found[0]) + [found[1]], CLASSIFIER)
    assert found[0].direction_held == "worse" and found[1].direction_held == ""
    assert side(held, found[0]) == " (lower, beyond noise after the adjustment over the target's findings)"
    assert side(alone, found[1]) == (" (within noise after the adjustment over the target's findings, though "
                                     "beyond its 95 % interval alone)")
    assert side(alone) == " (lower, beyond the interval)"  # without its finding: the interval's words
