"""The timing of a model before a plan: bounded (warm-up included) however slow the model or busy
the machine, and a figure kept only when it looks steady, read back for a month at most, measured
again on request."""

from __future__ import annotations

import datetime
import json
import time

import pytest

from perturblab.models import resolve
from perturblab.models import speed as speed_module
from perturblab.models.speed import (FAR_BELOW, LEAST_PASSES, MAX_AGE_DAYS, MOST_SECONDS, PIECE, PROBE_TEXTS, Speed,
                                     measure_speed, speed_key)

SPEC = "smollm2-135m"  # timed as a fake here: its key needs no load
N = len(PROBE_TEXTS)


class Clock:
    """The timing's clock, moved by the fake models' calls alone."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeLM:
    """A language model whose every call takes ``per_text`` seconds a text on ``clock`` (and
    ``first`` more on its first call: kernels, dequantisation), or as the ``slow`` list of each
    call's seconds per text says; records the number of texts of each call."""

    def __init__(self, clock, per_text, first=0.0, slow=None):
        self.clock, self.per_text, self.first, self.slow, self.calls = clock, per_text, first, slow, []

    def token_logprobs(self, texts):
        per = self.slow[len(self.calls)] if self.slow and len(self.calls) < len(self.slow) else self.per_text
        self.clock.now += per * len(texts) + (self.first if not self.calls else 0.0)
        self.calls.append(len(texts))
        return [[0.0] * len(t.split()) for t in texts]

    def encode(self, text):
        return text.split()


@pytest.fixture
def timed(tmp_path, monkeypatch):
    """measure_speed of SPEC against a :class:`FakeLM` on its own clock; returns (clock, make),
    where make(**FakeLM options) sets the model the next measurement loads."""
    clock = Clock()
    monkeypatch.setenv("PERTURBLAB_SPEEDS", str(tmp_path / "speeds.json"))
    monkeypatch.setattr(speed_module, "_clock", clock)
    held = {}

    def make(**kw):
        held["model"] = FakeLM(clock, **kw)
        return held["model"]

    monkeypatch.setattr(resolve, "load_model", lambda spec, role: held["model"])
    return clock, make


def _measured(clock, **kw):
    """(speed, seconds of the clock the timing took)."""
    start = clock.now
    speed = measure_speed(SPEC, "language_model", **kw)
    return speed, clock.now - start


def _kept(tmp_path):
    try:
        return json.loads((tmp_path / "speeds.json").read_text())
    except FileNotFoundError:
        return {}


def test_a_slow_model_is_timed_within_the_bound_warm_up_included(timed, tmp_path):
    """At 1 s a text, the timing before (a whole pass to warm up, then passes until 10 s of timed
    work) took 32 + 32 s; now the warm-up is one piece of 8 texts (8 s) and no other piece fits in
    the 10 s, so the warm-up's own time is the figure."""
    clock, make = timed
    model = make(per_text=1.0)
    speed, took = _measured(clock)
    assert took <= MOST_SECONDS and model.calls == [PIECE]
    assert speed.texts_per_s == pytest.approx(1.0, rel=1e-12)  # 8 texts in 8 s
    assert speed.tokens_per_s == pytest.approx(sum(len(t.split()) for t in PROBE_TEXTS[:PIECE]) / PIECE, rel=1e-12)
    assert "does not fit in the 10 s" in speed.unkept and "timed on 8 of them" in speed.unkept
    assert not speed.cached and _kept(tmp_path) == {}  # not kept: the next plan measures it again


@pytest.mark.parametrize("per_text, first, pieces", [(0.5, 0.0, 1), (0.3, 0.0, 3), (0.1, 3.0, 4)])
def test_a_model_whose_whole_pass_does_not_fit_is_timed_a_piece_at_a_time(timed, per_text, first, pieces):
    """Pieces of 8 texts while the next is expected to end within the bound: at 0.5 s a text the
    warm-up takes 4 s (a whole pass would end at 4 + 16 s) and one piece more fits (8 s); at 0.3 s,
    three more (2.4 + 3 · 2.4 = 9.6 s); a first call 3 s slower (first use: 3.8 s, so a whole pass
    looks like 15.2 s) leaves the four pieces at 0.8 s each (7 s in all)."""
    clock, make = timed
    model = make(per_text=per_text, first=first)
    speed, took = _measured(clock)
    assert took <= MOST_SECONDS
    assert model.calls == [PIECE] * (1 + pieces)
    assert speed.texts_per_s == pytest.approx(1 / per_text, rel=1e-9)  # the warm-up is not in the figure
    assert f"timed on {PIECE * pieces} of them" in speed.unkept


def test_whole_passes_are_timed_while_the_next_fits_and_the_fastest_counts(timed, tmp_path):
    clock, make = timed
    model = make(per_text=0.05)  # a pass of 1.6 s: warm-up 0.4 s, then passes while one more fits
    speed, took = _measured(clock)
    assert model.calls == [PIECE] + [N] * LEAST_PASSES  # stopped at 3 passes and at least 1 s of timed work
    assert took == pytest.approx(0.4 + 3 * 1.6) and took <= MOST_SECONDS
    assert speed.texts_per_s == pytest.approx(20.0, rel=1e-9) and speed.unkept == ""
    assert list(_kept(tmp_path).values())[0]["texts_per_s"] == pytest.approx(20.0)


def test_a_model_whose_batch_sleeps_is_timed_within_the_bound(tmp_path, monkeypatch):
    """The real clock: a model sleeping 25 ms a text under a bound of 1 s (a pass would take 0.8 s)."""
    monkeypatch.setenv("PERTURBLAB_SPEEDS", str(tmp_path / "speeds.json"))
    monkeypatch.setattr(speed_module, "MOST_SECONDS", 1.0)

    class Sleepy(FakeLM):
        def token_logprobs(self, texts):
            time.sleep(0.025 * len(texts))
            self.calls.append(len(texts))
            return [[0.0] for _ in texts]

    model = Sleepy(None, 0.025)
    monkeypatch.setattr(resolve, "load_model", lambda spec, role: model)
    t0 = time.perf_counter()
    speed = measure_speed(SPEC, "language_model")
    took = time.perf_counter() - t0
    assert took < 1.0 + 0.5, f"{took:.2f} s"  # the bound, and the key and the cache file around it
    # sleeping gives at least 25 ms a text, and a loaded machine adds to it: at most 40 texts/s
    assert 0 < speed.texts_per_s <= 40.0 + 1e-9 and model.calls[0] == PIECE


def test_a_kept_figure_is_read_back_for_a_month_then_measured_again(timed, tmp_path):
    clock, make = timed
    make(per_text=0.05)
    first, _ = _measured(clock)
    model = make(per_text=0.05)
    again, took = _measured(clock)
    assert again.cached and again.texts_per_s == first.texts_per_s and took == 0 and model.calls == []
    assert again.when() == f"measured {datetime.date.today().isoformat()}, today"
    key, _ = speed_key(SPEC, "language_model")
    data = _kept(tmp_path)
    for age, read_back in ((MAX_AGE_DAYS, True), (MAX_AGE_DAYS + 1, False)):
        day = (datetime.date.today() - datetime.timedelta(days=age)).isoformat()
        data[key]["measured"] = day
        (tmp_path / "speeds.json").write_text(json.dumps(data))
        model = make(per_text=0.04)
        speed, _ = _measured(clock)
        assert speed.cached is read_back and bool(model.calls) is not read_back
        if read_back:
            assert speed.when() == f"measured {day}, {age} days ago" and speed.age_days() == age
        else:  # measured again and kept in place of the old one
            assert speed.texts_per_s == pytest.approx(25.0) and _kept(tmp_path)[key]["measured"] != day


def test_retime_measures_again_and_keeps_a_steady_figure(timed, tmp_path):
    clock, make = timed
    make(per_text=0.05)
    _measured(clock)
    model = make(per_text=0.04)
    speed, _ = _measured(clock, retime=True)
    assert not speed.cached and model.calls and speed.texts_per_s == pytest.approx(25.0)
    assert list(_kept(tmp_path).values())[0]["texts_per_s"] == pytest.approx(25.0)


def test_a_figure_that_looks_measured_under_load_is_not_kept(timed, tmp_path):
    clock, make = timed
    # passes that vary: 1.6 s, then 3.2 s twice (the median twice the fastest)
    make(per_text=0.05, slow=[0.05, 0.05, 0.1, 0.1])
    uneven, _ = _measured(clock)
    assert uneven.texts_per_s == pytest.approx(20.0) and _kept(tmp_path) == {}
    assert uneven.unkept.startswith("its 3 passes varied 2.0x (median over the fastest)")
    # a steady figure is kept; one far below it, measured again within the month, is not
    make(per_text=0.05)
    kept, _ = _measured(clock)
    assert kept.unkept == "" and len(_kept(tmp_path)) == 1
    make(per_text=0.05 / (FAR_BELOW - 0.1))  # steady, but 0.4 times the figure kept
    slow, _ = _measured(clock, retime=True)
    assert slow.texts_per_s == pytest.approx(20.0 * (FAR_BELOW - 0.1))
    assert slow.unkept.startswith(f"0.40x the figure of {kept.measured}")
    assert list(_kept(tmp_path).values())[0]["texts_per_s"] == pytest.approx(20.0)  # the kept one stays
    assert slow.when().startswith("measured now, not kept: 0.40x the figure")


def test_the_plan_says_how_old_a_figure_is_and_how_to_measure_it_again():
    from perturblab.studies.compare.plan import Plan

    day = (datetime.date.today() - datetime.timedelta(days=11)).isoformat()
    plan = Plan("language_model", speeds={
        "old": Speed(13.0, 276.0, "cpu (2 threads), float32", cached=True, measured=day),
        "new": Speed(13.0, 276.0, "cpu (2 threads), float32"),
        "busy": Speed(5.0, 100.0, "cpu (2 threads), float32",
                      unkept="its 3 passes varied 2.0x (median over the fastest), as when other work shares the machine")})
    lines = [x.strip() for x in plan.table().splitlines() if x.strip().startswith("speed:")]
    assert lines == [f"speed: old: cpu (2 threads), float32: 276 tokens/s (measured {day}, 11 days ago; --retime "
                     "measures again)",
                     "speed: new: cpu (2 threads), float32: 276 tokens/s",
                     "speed: busy: cpu (2 threads), float32: 100 tokens/s (measured now, not kept: its 3 passes varied "
                     "2.0x (median over the fastest), as when other work shares the machine)"]
    # a budget refused on a figure read back says so, and how to measure it again
    assert plan.read_back() == (f"; it reads back speeds measured before: old (measured {day}, 11 days ago); "
                                "--retime measures again")
    assert Plan("language_model", speeds={"new": plan.speeds["new"]}).read_back() == ""


def test_a_budget_refused_on_a_speed_read_back_names_it(monkeypatch):
    from perturblab.errors import InputError
    from perturblab.studies.compare import plan as plan_module
    from perturblab.studies.compare.config import CompareArgs

    def slow(spec, kind, plan, quiet=True, retime=False, least=0.1):
        plan.speeds[spec] = Speed(1.3, 27.6, "cpu (2 threads), float32", cached=True, measured="2026-11-20")
        return 10.0

    monkeypatch.setattr(plan_module, "measured_cost", slow)
    with pytest.raises(InputError, match=r"reads back speeds measured before: smollm2-135m \(measured 2026-11-20.*"
                                         r"--retime measures again"):
        plan_module.make_plan(CompareArgs(reference="smollm2-135m", targets="smollm2-135m-int8", budget="2m",
                                          out=None), measure=True)
