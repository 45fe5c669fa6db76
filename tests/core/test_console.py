"""The console of a run: one line per model load, the libraries' own progress and warnings only
with -v, no terminal escape codes where stderr is not a terminal."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest

pytest.importorskip("transformers")

from helpers.tiny_classifier import WORDS, tiny_model_dir  # noqa: E402

from perturblab.cli import main  # noqa: E402
from perturblab.core import console  # noqa: E402


def test_a_run_prints_one_line_per_model_load_and_nothing_of_the_libraries(tmp_path, capsys):
    a, b = tiny_model_dir(tmp_path / "a", 0), tiny_model_dir(tmp_path / "b", 1)
    rng = np.random.default_rng(0)
    rows = ["text,label"] + [f"the {' '.join(rng.choice(WORDS[:15], size=7))} .,{'pos' if i % 2 else 'neg'}"
                             for i in range(40)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    code = main(["scope", "--reference", f"ref={a}", "--targets", f"tgt={b}", "--capabilities", "typo", "--data",
                 str(tmp_path / "d.csv"), "--n", "4", "--trials", "1", "--n-boot", "20", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0
    lines = [x.strip() for x in err.replace("\r", "\n").splitlines() if x.strip()]
    loads = [x for x in lines if x.startswith("loading model")]
    assert [x.split(":")[0] for x in loads] == ["loading model ref", "loading model tgt"]
    assert all(" done in " in x for x in loads)
    assert "Loading weights" not in err and "\x1b" not in err  # stderr here is no terminal
    assert any(x.startswith("searches:") for x in lines)  # perturblab's own bar stays


def test_libraries_quiet_restores_what_it_found_and_nests():
    from transformers.utils import logging as hf_logging

    before = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    assert console.verbose() is False
    with console.libraries_quiet():
        assert not hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == logging.ERROR
        with console.libraries_quiet():  # the driver's block inside the command's
            pass
        assert not hf_logging.is_progress_bar_enabled()  # the inner block left it to the outer one
    assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == before


def test_verbose_leaves_the_libraries_alone(caplog):
    from transformers.utils import logging as hf_logging

    before = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    caplog.set_level(logging.DEBUG, logger="perturblab")
    assert console.verbose()
    with console.libraries_quiet():
        assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == before
    lib = types.SimpleNamespace(tqdm=lambda *a, **k: k)
    with console.bars_off(lib):
        assert lib.tqdm(total=3) == {"total": 3}  # bars stay on with -v


def test_bars_off_disables_a_librarys_own_tqdm_for_the_block():
    made = []
    lib = types.SimpleNamespace(tqdm=lambda *a, **k: made.append(k) or k)
    original = lib.tqdm
    with console.bars_off(lib):
        assert lib.tqdm(range(3), desc="Converting", disable=False) == {"desc": "Converting", "disable": True}
    assert lib.tqdm is original and made == [{"desc": "Converting", "disable": True}]
    assert console.terminal() is False  # pytest captures stderr: nested bars are not drawn


# ------------------------------------------------------------------ a bar that moves within a cell


class RecordedBar:
    """A phase's bar that records its count after every move (what the console would show)."""

    made: list["RecordedBar"] = []

    def __init__(self, total, desc, disable=False):
        self.total, self.desc, self.n, self.seen = total, desc, 0.0, []
        RecordedBar.made.append(self)

    def update(self, delta):
        self.n += delta
        self.seen.append(self.n)

    def close(self):
        pass


@pytest.fixture
def bars(monkeypatch):
    from perturblab.core import driver

    RecordedBar.made = []
    monkeypatch.setattr(driver, "progress_bar", RecordedBar)
    return RecordedBar.made


def _phase_study(report, tasks=8, batch_size=8):
    """A study of one phase of ``tasks`` tasks in cells of ``batch_size``, whose cells call
    ``report(payload)`` as each payload is done and return its square."""
    from perturblab.core.study import Phase, Study, StudyResult, Task

    class Squares(Study):
        name = "squares"

        def prepare(self, ctx):
            pass

        def identity(self):
            return {"tasks": tasks}

        def phases(self, ctx):
            def compute(group, payloads):
                out = []
                for x in payloads:
                    out.append(x * x)
                    report(x)
                return out

            self.phase = Phase("squares", [Task(f"k{i}", i) for i in range(tasks)], compute, batch_size=batch_size,
                               label="squares")
            yield self.phase

        def finish(self, ctx):
            return StudyResult([{"i": i, "square": self.phase.results[f"k{i}"]} for i in range(tasks)])

    return Squares()


def test_a_cell_moves_its_bar_as_its_work_reports_and_by_no_more_than_its_tasks(tmp_path, bars):
    from perturblab.core.driver import run_study

    result = run_study(_phase_study(lambda x: console.advance(1.0)), tmp_path / "a")
    assert [r["square"] for r in result.rows] == [i * i for i in range(8)]
    (bar,) = bars
    # one cell of 8 tasks: the bar moves by each task as the cell reports it, short of the last
    # (a cell's reports never count a task it has not returned), then to 8 when the cell ends
    assert bar.total == 8 and bar.desc == "squares"
    assert bar.seen[:7] == pytest.approx([1, 2, 3, 4, 5, 6, 7]) and bar.seen[-1] == pytest.approx(8)
    assert all(b >= a for a, b in zip(bar.seen, bar.seen[1:])) and max(bar.seen) <= 8 + 1e-9
    # a cell that says more than its tasks moves its bar by its tasks alone
    run_study(_phase_study(lambda x: console.advance(5.0), tasks=4, batch_size=2), tmp_path / "b")
    assert max(bars[1].seen) == pytest.approx(4) and bars[1].seen[-1] == pytest.approx(4)
    assert all(b >= a - 1e-9 for a, b in zip(bars[1].seen, bars[1].seen[1:]))


def test_a_search_cell_moves_the_bar_at_least_once_per_sample_and_finds_the_same(tmp_path, bars):
    """A cell of 8 searches (run in lock-step) moves its bar by shares of a search after each
    request of candidates, so it moves between every two whole samples; the searches find what
    they find without a bar."""
    from helpers.lexicon import make_splits, models
    from perturblab.core.entry import run
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    args = ScopeArgs(reference="ref", targets="tgt", capabilities="typo", n=8, trials=1, n_boot=20)
    shown = run(ScopeStudy(args, models=models(), splits=make_splits(), chunk_size=8), tmp_path / "shown")
    bar, scored = bars  # the searches, then the predictions: a cell per model and list of inputs
    assert bar.total == 8 and bar.desc == "searches" and bar.seen[-1] == pytest.approx(8)
    assert scored.desc == "predictions" and scored.total == 4  # ref and tgt: the base samples, what typo found
    within = [n for n in bar.seen if n < 8 - 1e-9]  # the moves while the one cell ran
    assert len(within) >= 8
    assert {int(n + 1e-9) for n in bar.seen} == set(range(9))  # every whole sample shown on the way
    assert any(abs(n - round(n)) > 1e-6 for n in within)  # shares of a search, not only whole ones
    quiet = run(ScopeStudy(args, models=models(), splits=make_splits(), chunk_size=8), tmp_path / "quiet", quiet=True)
    assert shown.perturbations == quiet.perturbations and shown.rows == quiet.rows


def test_the_bar_counts_whole_tasks_and_never_rounds_up():
    bar = console.progress_bar(8, "searches")
    try:
        bar.update(7.9)
        assert "| 7/8 [" in str(bar)
        bar.update(0.1)
        assert "| 8/8 [" in str(bar)
    finally:
        bar.close()


def test_the_lm_search_bar_moves_at_least_once_per_sentence(tmp_path, bars):
    """LM SCoPE's searches (a cell of 4 sentences) move their bar within the cell as well."""
    import torch

    from perturblab.core.entry import run
    from perturblab.models.lm import HFCausalLM
    from perturblab.studies.scope.config import LMScopeArgs
    from perturblab.studies.scope.lm import LMScopeStudy
    from helpers.tiny_lm import tiny_causal_model, train_tokenizer

    sentences = ["The quick brown fox jumps over the lazy dog near the river bank.",
                 "A wonderful movie with brilliant acting and a thoughtful story.",
                 "Scientists discovered a strange planet orbiting a distant star.",
                 "The committee approved the budget after a long debate on Tuesday."]
    tok = train_tokenizer(sentences, vocab_size=300)
    torch.manual_seed(0)
    ref = HFCausalLM(tiny_causal_model(len(tok), 0, max_positions=128, initializer_range=0.3), tok, name="ref")
    args = LMScopeArgs(reference="ref", targets="ref", capabilities="typo", n=4, trials=1, n_boot=20, chunk_size=4)
    run(LMScopeStudy(args, models={"ref": ref}, sentences=sentences), tmp_path / "lm")
    searches = next(b for b in bars if b.desc == "LM SCoPE searches")
    assert searches.total == 4 and searches.seen[-1] == pytest.approx(4)
    assert {int(n + 1e-9) for n in searches.seen} == set(range(5)) and len(searches.seen) > 4
