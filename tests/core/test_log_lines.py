"""perturblab's messages go through logging and warnings: a Python caller captures or silences
them with the standard calls, a Python call with no logging configured shows them on stderr, and
the command prints each as one plain line (its warnings as ``warning:`` and ``note:`` lines)."""

from __future__ import annotations

import logging
import warnings

import pytest

import perturblab as pl
from perturblab.core import console
from perturblab.core.readers import OldNameWarning
from perturblab.history.store import ReleaseConflictWarning
from perturblab.studies.compare.plan import PlanWarning
from perturblab.studies.registry import PluginWarning

#: a comparison that runs in seconds (with ``tiny_costs``): robustness alone, on the bag of words
SMALL = dict(reference="tfidf-lr", targets="candidate=tfidf-lr", studies="robustness")


def _logger_as_before() -> bool:
    """The ``perturblab`` logger as the application left it: no handler, no level, propagating."""
    logger = logging.getLogger("perturblab")
    return logger.handlers == [] and logger.level == logging.NOTSET and logger.propagate


def test_a_python_call_logs_the_plan_and_its_lines_and_a_level_silences_them(tmp_path, tiny_costs, caplog, capsys):
    caplog.set_level(logging.INFO, logger="perturblab")
    result = pl.compare(**SMALL, out=str(tmp_path / "o"), quiet=False)
    said = [r for r in caplog.records if r.levelno == logging.INFO]
    assert all(r.name.startswith("perturblab.") for r in said)
    messages = [r.getMessage() for r in said]
    assert result.plan.table() in messages  # the plan, as the command prints it
    assert [m.split(" (planned")[0].split(" in ")[0] for m in messages if m.startswith("robustness: done")] == [
        "robustness: done"]
    assert capsys.readouterr().err.count("plan (classifiers)") == 0  # configured: records, not prints

    caplog.clear()
    logging.getLogger("perturblab").setLevel(logging.WARNING)  # what a caller does to silence them
    pl.compare(**SMALL, out=str(tmp_path / "o"), quiet=False)  # a re-run: read back
    assert [r for r in caplog.records if r.levelno < logging.WARNING] == []
    assert "plan (classifiers)" not in capsys.readouterr().err


def test_a_python_call_with_no_logging_configured_shows_its_lines_on_stderr(tmp_path, tiny_costs, capsys):
    assert _logger_as_before()
    result = pl.compare(**SMALL, out=str(tmp_path / "o"), quiet=False)
    err = capsys.readouterr().err
    assert result.plan.table() + "\n" in err and "robustness: done in " in err
    assert _logger_as_before()  # the call's own handler is gone with it


def test_a_quiet_call_says_only_the_plans_warnings_as_python_warnings(tmp_path, tiny_costs, capsys):
    with pytest.warns(PlanWarning) as said:
        result = pl.compare(**SMALL, out=str(tmp_path / "o"), quiet=True, equivalent=["accuracy_gap=0.02"])
    gates = [n.removeprefix("warning: ") for n in result.plan.notes if n.startswith("warning: ")]
    assert gates and [str(w.message) for w in said if w.category is PlanWarning] == gates
    assert gates[0].startswith("--equivalent accuracy_gap=0.02 cannot pass")
    assert "plan (" not in capsys.readouterr().err  # quiet: no plan, no progress lines


def test_a_study_run_by_hand_and_a_config_run_from_python_show_their_lines_too(tmp_path, capsys):
    """``core.entry.run(study)`` (a study object run without its function) and ``runs.run(config)``
    show their lines on stderr as a study function does, with the logger left as it was."""
    from helpers.tiny_classifier import tiny_model_dir

    from perturblab.core.entry import run
    from perturblab.runs.config import load_config
    from perturblab.runs.runner import run as run_config
    from perturblab.studies.robustness.config import RobustnessArgs
    from perturblab.studies.robustness.study import RobustnessStudy

    model = tiny_model_dir(tmp_path / "m", 0)
    args = RobustnessArgs(models=str(model), perturbations="change_char", n_train=8, n_eval=8, trials=1,
                          metrics="accuracy", n_boot=20, out=None)
    assert _logger_as_before()
    run(RobustnessStudy(args), tmp_path / "by-hand")
    assert "loading" in capsys.readouterr().err and _logger_as_before()
    (tmp_path / "c.yaml").write_text(f"studies:\n  - {{name: r, kind: robustness, models: [{model}], "
                                     "perturbations: [change_char], n-train: 8, n-eval: 8, trials: 1, "
                                     "metrics: [accuracy], n-boot: 20}\n")
    run_config(load_config(tmp_path / "c.yaml", out=tmp_path / "cfg"))
    assert "loading model" in capsys.readouterr().err and _logger_as_before()


def test_lines_shown_only_when_the_application_configured_no_logging(caplog):
    logger = logging.getLogger("perturblab")
    assert _logger_as_before() and not console.configured()
    with console.lines_shown():
        assert logger.level == logging.INFO and not logger.propagate and not console.verbose()
        assert [type(h) for h in logger.handlers] == [console.LineHandler]
        with console.lines_shown():  # a call within a call: one handler
            assert len(logger.handlers) == 1
        assert len(logger.handlers) == 1
    assert _logger_as_before()
    caplog.set_level(logging.INFO, logger="perturblab.studies.compare.function")  # a child configured
    assert console.configured()
    with console.lines_shown():
        assert _logger_as_before()  # its records go where the application's logging sends them


def test_the_command_prints_lines_plain_and_every_other_record_with_its_level(monkeypatch, capsys):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # a process whose logging nobody configured
    monkeypatch.setattr(root, "level", root.level)
    mine, other = logging.getLogger("perturblab.studies.compare.function"), logging.getLogger("a_library")
    for verbose, shown in ((False, ["plan 5 %", "WARNING perturblab.studies.compare.function: careful"]),
                           (True, ["plan 5 %", "DEBUG perturblab.studies.compare.function: detail",
                                   "WARNING perturblab.studies.compare.function: careful", "INFO a_library: its own"])):
        root.handlers = []
        with console.command_lines(verbose=verbose):
            assert console.verbose() is verbose
            mine.info("plan 5 %")  # a line: its message alone, "%" as it is
            mine.debug("detail")
            mine.warning("careful")
            other.info("its own")
        assert capsys.readouterr().err.splitlines() == shown
        assert _logger_as_before()


def test_each_project_warning_is_one_line_once_and_other_warnings_are_shown_as_before(capsys):
    with warnings.catch_warnings(record=True) as python:
        warnings.simplefilter("always")
        warnings.filterwarnings("error", category=FutureWarning)  # an old name would raise (-W error::FutureWarning)
        with console.warnings_as_lines():
            for _ in range(2):
                warnings.warn("--seeds is the old name of --trials", OldNameWarning)
                warnings.warn("release v1 is stored already with other models", ReleaseConflictWarning)
                warnings.warn("the study plugin 'x = y' is left out: boom", PluginWarning)
                warnings.warn("--equivalent agreement=0.05 cannot pass", PlanWarning)
            warnings.warn("not perturblab's", UserWarning)
    assert capsys.readouterr().err.splitlines() == [
        "note: --seeds is the old name of --trials", "warning: release v1 is stored already with other models",
        "warning: the study plugin 'x = y' is left out: boom", "warning: --equivalent agreement=0.05 cannot pass"]
    assert [(w.category, str(w.message)) for w in python] == [(UserWarning, "not perturblab's")]


def test_the_command_prints_the_plan_once_and_under_quiet_only_its_warnings(tmp_path, tiny_costs, capsys):
    from perturblab.cli import main

    argv = ["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies", "robustness",
            "--equivalent", "accuracy_gap=0.02", "--out", str(tmp_path / "o")]
    assert main(argv) == 1  # the gate cannot pass
    err = capsys.readouterr().err.replace("\r", "\n").splitlines()
    gate = next(line for line in err if "cannot pass" in line)
    assert gate.startswith("  warning: --equivalent accuracy_gap=0.02 cannot pass")  # a line of the plan
    assert sum(line.startswith("plan (classifiers)") for line in err) == 1 and err.count(gate) == 1
    assert sum(line.startswith("robustness: done in ") for line in err) == 1
    assert main(argv + ["--quiet"]) == 1  # read back
    quiet = [line for line in capsys.readouterr().err.splitlines() if line]
    assert quiet[0] == gate.strip() and not any(line.startswith(("plan (", "robustness: ")) for line in quiet)
