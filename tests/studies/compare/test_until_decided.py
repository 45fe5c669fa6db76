"""``compare --until decided``: levels read from confidence sequences (each finding at 5 %/m of a
target's m findings, the fixed-n findings' Holm tests at the rest), and the rounds: a study that
grows runs again at a larger size while a finding is open, the run stops at the first look where
every finding is decided, when the budget is spent, or when no size within the study decides what
is open, and each round is said and kept."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from perturblab.core.headline import Estimate, Headline, wilson_interval
from perturblab.measures.sequences import paired_sequence, share_sequence
from perturblab.studies.compare import function
from perturblab.studies.part import CLASSIFIER
from perturblab.studies.compare.plan import make_plan
from perturblab.studies.compare.severity import Severity, assign_levels, rate_finding
from helpers.compare import args_of, share

ALPHA = 0.05


# -- levels from confidence sequences -----------------------------------------------------------------
def test_each_sequence_finding_gets_its_share_of_five_percent_and_the_level_its_interval_lies_within():
    clean = rate_finding(share("t", "hard_scope:typo", 300, 300), CLASSIFIER)       # 0 of 300 changed
    major = rate_finding(share("t", "agreement", 140, 200), CLASSIFIER)            # 30 % disagree
    open_ = rate_finding(share("t", "hard_scope:synonym", 188, 200), CLASSIFIER)   # 6 %: straddles 5 %
    found = [clean, major, open_]
    assign_levels(found, CLASSIFIER, anytime=True)
    each = ALPHA / 3
    assert [s.alpha for s in found] == [each] * 3
    for s, k, n in ((clean, 0, 300), (major, 60, 200), (open_, 12, 200)):
        assert (s.low, s.high) == pytest.approx(share_sequence(k, n, each), abs=1e-12)
    assert (clean.level, major.level, open_.level) == ("minor", "major", "undecided")
    assert clean.high < 0.05 <= open_.high and major.low >= 0.10
    # wider than the fixed-n Wilson interval of the same count: the price of looking at every round
    assert open_.high > wilson_interval(12, 200)[1]
    assert [s.decided(CLASSIFIER) for s in found] == [True, True, False]
    assert "valid at every look" in clean.interval and "3 findings together" in clean.interval


def test_a_paired_gap_uses_its_counts_and_a_gap_within_noise_is_decided_only_below_the_medium_line():
    def gap(gained, lost, n):
        low, high = paired_sequence(gained, lost, n, 0.05)
        return Estimate("t", "gap", (gained - lost) / n, low, high, n=n, interval="95 % Jeffreys", key="accuracy_gap",
                        counts=(gained, lost))

    tight, loose = rate_finding(gap(3, 4, 600), CLASSIFIER), rate_finding(gap(20, 24, 120), CLASSIFIER)
    assign_levels([tight, loose], CLASSIFIER, anytime=True)
    low, high = paired_sequence(3, 4, 600, ALPHA / 2)
    assert (tight.low, tight.high) == pytest.approx((-high, -low), abs=1e-12)  # the rate is −gap
    assert tight.level == "within noise" and tight.high < 0.05
    assert loose.low < 0 < 0.05 < loose.high and loose.level == "undecided"  # a fixed-n run calls it within noise


def test_findings_without_a_sequence_keep_holm_at_what_the_sequences_leave():
    # a robustness gap (normal interval, a study run once) whose p-value passes 5 % but not 5 % · 1/2
    z = 2.1  # one-sided p = 0.0179: below 0.05, above 0.025
    fixed = Severity("relative_robustness_gap:typo", "", 0.05 + 0.02 * z / 1.959963984540054 * 1.96, 0.0, 0.2,
                     n=300, method="normal")
    fixed.low = fixed.rate - 1.959963984540054 * 0.02  # standard error 0.02
    fixed.high = fixed.rate + 1.959963984540054 * 0.02
    seq = rate_finding(share("t", "agreement", 200, 200), CLASSIFIER)
    assign_levels([fixed, seq], CLASSIFIER)  # fixed n: Holm over 4 tests at 5 %
    alone = fixed.adjusted["medium"]
    assign_levels([fixed, seq], CLASSIFIER, anytime=True)
    assert seq.alpha == pytest.approx(0.025) and fixed.alpha is None
    assert fixed.p["medium"] == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), rel=1e-3)
    assert fixed.adjusted["medium"] <= 0.05 and fixed.level != "medium"  # held to 2.5 %, the rest of the 5 %
    assert alone >= fixed.adjusted["medium"]


# -- the rounds ---------------------------------------------------------------------------------------
class _Simulated:
    """A study's result at n: each target's outcomes, drawn once per seed, nested (n takes the first n)."""

    def __init__(self, rates: dict[str, float], n: int, seed: int = 0) -> None:
        self.rates, self.n = rates, n
        rng = np.random.default_rng(seed)
        self.draws = {t.split("=")[0]: rng.random(5000) < r for t, r in rates.items()}  # by the name reported

    def headline(self) -> Headline:
        out = []
        for t, changed in self.draws.items():
            k = int(changed[: self.n].sum())
            low, high = wilson_interval(self.n - k, self.n)
            out.append(Estimate(t, "Agreement with the reference", (self.n - k) / self.n, low, high, n=self.n,
                                interval=f"95 % Wilson interval over the {self.n} examples", key="agreement"))
        return Headline("simulated", out)


@pytest.fixture
def simulated(monkeypatch, tmp_path):
    """``run_planned`` replaced by the simulated study above: each run of n samples takes ``pace``
    seconds a sample of the clock :func:`function.time.time` reads (a fake clock, advanced here)."""
    clock = {"now": 1000.0, "pace": 0.01, "sizes": []}
    monkeypatch.setattr(function.time, "time", lambda: clock["now"])

    def run(result, p, options, planned=None):
        before = getattr(result.results.get(p.name), "n", 0)
        clock["sizes"].append(p.count)
        took = (p.count - before) * clock["pace"]
        clock["now"] += took
        result.seconds[p.name] = result.seconds.get(p.name, 0.0) + took
        result.results[p.name] = _Simulated(clock["rates"], p.count)

    monkeypatch.setattr(function, "run_planned", run)
    return clock


def _run(tmp_path, clock, rates, budget="10m", **kw):
    clock["rates"] = rates
    args = args_of(reference="tfidf-lr", targets=",".join(rates), studies="invariances", until="decided",
                   budget=budget, out=str(tmp_path / "out"), quiet=True, **kw)
    return function.run_compare(args, _first_round(args, clock))


def _first_round(args, clock, first=40):
    """The plan of ``args`` with its study starting at ``first`` samples, each planned at the
    simulation's seconds (so the budget is the fake clock's)."""
    plan = make_plan(args)
    for p in plan.studies:
        p.options, p.count = {**p.options, p.size_key: first}, first
        p.per_sample, p.seconds = clock["pace"], clock["pace"] * first
    return plan


def _first_decided(rates, sizes):
    """The first size of ``sizes`` at which every target's agreement is decided (by the sequence)."""
    for n in sizes:
        draws = _Simulated(rates, n).draws
        if all(_decided(int(d[:n].sum()), n, ALPHA) for d in draws.values()):
            return n
    return None


def _decided(k, n, alpha):
    low, high = share_sequence(k, n, alpha)
    return high < 0.05 or (low >= 0.05 and high < 0.10) or low >= 0.10


def test_the_run_grows_only_while_a_finding_is_open_and_stops_at_the_first_look_all_are_decided(tmp_path,
                                                                                              simulated):
    rates = {"clean=tfidf-lr": 0.0, "apart=tfidf-lr": 0.3}
    result = _run(tmp_path, simulated, rates)
    sizes = simulated["sizes"]
    assert len(sizes) >= 2 and all(b >= math.ceil(1.5 * a) for a, b in zip(sizes, sizes[1:]))  # rounds that pay
    assert _first_decided(rates, sizes) == sizes[-1]  # not one round more, not one fewer
    assert [r["sizes"]["invariances"] for r in result.rounds] == sizes
    assert result.rounds[-1]["stopped"] == "every finding decided"
    assert result.rounds[-1]["decided"] == result.rounds[-1]["findings"] == 2
    assert {v.target: [s.level for s in v.severity] for v in result.verdicts} == {"clean": ["minor"], "apart": ["major"]}
    assert result.undecided() == [] and result.exit_code() == 0
    json_ = result.to_json()
    assert json_["until"] == "decided" and json_["rounds"] == result.rounds


def test_a_spent_budget_stops_the_rounds_and_undecided_fail_exits_one(tmp_path, simulated):
    simulated["pace"] = 0.5  # seconds a sample: a 2-minute budget buys about 240 samples in all
    rates = {"edge=tfidf-lr": 0.01}  # 1 %: decided below 5 % at a few hundred samples, more than 2 minutes buy
    result = _run(tmp_path, simulated, rates, budget="2m", undecided="fail")
    assert len(simulated["sizes"]) >= 2  # it grew while the budget lasted
    assert sum(np.diff([0, *simulated["sizes"]])) * 0.5 <= 120 + 1e-9  # the rounds stayed within the budget
    assert "budget is spent" in result.rounds[-1]["stopped"]
    assert result.undecided() == ["edge: agreement"] and result.exit_code() == 1
    quiet = function.CompareResult(result.args.__class__(**{**result.args.__dict__, "undecided": "pass"}),
                                   result.plan, result.verdicts, result.checks)
    assert quiet.exit_code() == 0


def test_the_run_says_each_round(tmp_path, simulated, caplog):
    rates = {"clean=tfidf-lr": 0.0}
    clock = simulated
    clock["rates"] = rates
    args = args_of(reference="tfidf-lr", targets="clean=tfidf-lr", studies="invariances", until="decided",
                   budget="10m", out=str(tmp_path / "o"))
    caplog.set_level(logging.INFO, logger="perturblab")
    result = function.run_compare(args, _first_round(args, clock))
    err = "\n".join(caplog.messages)  # what the command prints, one line each
    lines = [line for line in err.splitlines() if line.startswith("round ")]
    assert len(lines) == len(result.rounds) and lines[0].startswith("round 1: 0 of 1 findings decided (invariances n = ")
    assert lines[-1].startswith(f"round {len(result.rounds)}: 1 of 1 findings decided")
    assert "stopped: every finding decided" in err


def test_the_report_and_compare_json_keep_the_rounds(tmp_path, simulated):
    from perturblab.report.html_compare import rounds_line

    result = _run(tmp_path, simulated, {"clean=tfidf-lr": 0.0, "apart=tfidf-lr": 0.3})
    sizes = ", ".join(str(r["sizes"]["invariances"]) for r in result.rounds)
    line = rounds_line(result.to_json()["rounds"])
    assert line.startswith(f"Until decided: {len(result.rounds)} rounds (invariances n = {sizes}); 2 of 2 findings "
                           "decided in ")
    assert line.endswith("; stopped: every finding decided.")
    assert rounds_line([]) == "" and rounds_line(None) == ""


# -- the gates under --until decided ---------------------------------------------------------------
def test_strict_and_equivalence_checks_read_the_confidence_sequence():
    from perturblab.studies.compare.checks import run_checks, run_equivalence

    kept = share("t", "agreement", 200, 200)  # no disagreement in 200
    seq = function.anytime_estimate(kept)
    assert (seq.low, seq.high) == pytest.approx((1 - share_sequence(0, 200, 0.05)[1], 1.0), abs=1e-12)
    assert kept.low > 0.975 > seq.low  # Wilson's lower end passes a 0.975 gate; the sequence's does not
    fixed = run_checks({"t": [("invariances", kept)]}, [("agreement", 0.975)], strict=True)
    anytime = run_checks({"t": [("invariances", seq)]}, [("agreement", 0.975)], strict=True)
    assert [c.passed for c in fixed + anytime] == [True, False]
    assert anytime[0].used == "lower end of the 95 % confidence sequence"
    # equivalence: the sequence's ends as they are (each side at most 5 % at every look), not a 90 % interval
    eq = run_equivalence({"t": [("invariances", seq)]}, {}, [("agreement", 0.05)])[0]
    assert (eq.low, eq.high) == pytest.approx((0.0, share_sequence(0, 200, 0.05)[1]), abs=1e-12)
    assert eq.outcome == "equivalent" and eq.used.startswith("95 % confidence sequence")
    # a gap with its counts gets the paired sequence; one without, and an exact one, stay as they are
    gap = Estimate("t", "gap", -0.01, -0.03, 0.01, n=300, interval="95 % Jeffreys", key="accuracy_gap", counts=(2, 5))
    assert (function.anytime_estimate(gap).low, function.anytime_estimate(gap).high) == pytest.approx(
        paired_sequence(2, 5, 300, 0.05), abs=1e-12)
    bare = Estimate("t", "gap", -0.01, -0.03, 0.01, n=300, interval="95 % paired bootstrap", key="accuracy_gap")
    assert function.anytime_estimate(bare) is bare


@pytest.mark.parametrize("extra, needle", [
    (dict(strict=True, fail_under=["soft_scope=0.9"]), "--strict --fail-under soft_scope"),
    (dict(equivalent=["soft_scope=0.05"]), None),  # refused already: soft_scope is no paired measure
    (dict(detect=0.02), "--detect sizes each study once"),
])
def test_gates_whose_interval_holds_at_one_n_are_refused_with_until(extra, needle):
    from perturblab.errors import InputError

    args = args_of(reference="tfidf-lr", targets="twin=tfidf-lr", studies="invariances", until="decided", **extra)
    with pytest.raises(InputError) as e:
        args.check()
        make_plan(args)
    if needle:
        assert needle in str(e.value)


def test_undecided_applies_only_with_until():
    from perturblab.errors import InputError

    with pytest.raises(InputError, match="applies to a run with --until decided"):
        args_of(reference="tfidf-lr", targets="twin=tfidf-lr", undecided="fail").check()
    # without --strict a gate on the estimate itself is taken
    make_plan(args_of(reference="tfidf-lr", targets="twin=tfidf-lr", studies="invariances", until="decided",
                      fail_under=["soft_scope=0.9"]))


def test_a_plan_without_a_study_that_grows_runs_once_and_says_so(tmp_path, simulated):
    simulated["rates"] = {"clean=tfidf-lr": 0.0}
    args = args_of(reference="tfidf-lr", targets="clean=tfidf-lr", studies="robustness", until="decided",
                   budget="10m", out=str(tmp_path / "o"), quiet=True)
    plan = make_plan(args)
    assert not any("starts at" in n for n in plan.notes)
    result = function.run_compare(args, plan)
    assert simulated["sizes"] == [plan.studies[0].count]  # one run, at its planned size
    assert [r["stopped"] for r in result.rounds] == ["no study of this plan grows in rounds; it ran once"]
