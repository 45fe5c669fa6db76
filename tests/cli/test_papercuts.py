"""Small things of the command line a user meets first: output piped into ``head``, errors that
name an option or a model once, the option the user typed, a "did you mean" for a mistyped model,
percentages that round to zero, and the result lines ``--quiet`` keeps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perturblab.cli import main

PERTURBLAB = Path(sys.executable).with_name("perturblab")


# -- output piped into a reader that stops early ------------------------------------------------------
def test_a_closed_stdout_ends_the_command_quietly(monkeypatch, capsys):
    """stdout a pipe whose reader is gone (deterministic: the read end is closed before the first
    write): no BrokenPipeError escapes, and the status is that of a process ended by SIGPIPE."""
    read, write = os.pipe()
    os.close(read)
    out = os.fdopen(write, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert main(["models"]) == 128 + 13
    finally:
        out.close()  # what is left goes to /dev/null, which now stands where the pipe was: no error
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(not PERTURBLAB.is_file(), reason="the perturblab script is not installed beside this Python")
def test_models_piped_into_head_prints_its_first_line_and_no_traceback():
    first = subprocess.run([str(PERTURBLAB), "models"], capture_output=True, text=True, check=True).stdout
    for _ in range(3):  # head may or may not exit before the last write: no traceback either way
        done = subprocess.run(["bash", "-c", f"'{PERTURBLAB}' models | head -1"], capture_output=True, text=True,
                              timeout=60)
        assert done.stdout == first.splitlines(keepends=True)[0]
        assert done.stderr == ""


# -- an option or a model named once --------------------------------------------------------------------
@pytest.mark.parametrize("argv,line", [
    (["--fail-under", "hard_scope=90"], "error: --fail-under: hard_scope=90: hard_scope lies in [0, 1]; for 90 % give 0.9"),
    (["--equivalent", "agreement=5"], "error: --equivalent: agreement=5: a margin of a share lies in (0, 1]; for 5 points "
                                      "give 0.05"),
    (["--equivalent", "agreement=0"], "error: --equivalent: agreement=0: the margin must be above 0"),
])
def test_a_threshold_error_names_its_option_once(argv, line, tmp_path, capsys):
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--out", str(tmp_path / "o"),
                 *argv]) == 2
    assert capsys.readouterr().err.strip() == line
    assert not (tmp_path / "o").exists()


def test_equivalence_of_an_own_score_names_its_gap(tmp_path, capsys):
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--out", str(tmp_path / "o"),
                 "--equivalent", "relative_robustness:change_char=0.05"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --equivalent: relative_robustness:change_char=0.05: equivalence is of a target "
                          "against the reference; give its paired gap, relative_robustness_gap:change_char, or one of")


def test_a_label_stored_with_other_models_names_each_model_once(tmp_path):
    """A spec that names its model (``candidate=minilm-l3``) is shown as it is, not behind its
    name again; one that is its own name is shown once; another name is shown NAME=SPEC."""
    from perturblab.errors import InputError
    from perturblab.history.release import Release
    from perturblab.history.store import open_history

    with open_history(tmp_path / "h.sqlite") as h:
        h.append(Release("v1", "minilm-l6", {}, {"candidate": {"spec": "candidate=minilm-l3"},
                                                  "minilm-l6-int8": {"spec": "minilm-l6-int8"},
                                                  "vs_final": {"spec": "step0"}}, []))
        with pytest.raises(InputError) as e:
            h.check_append("v1", {"candidate": "candidate=tfidf-lr"})
    assert "(candidate=minilm-l3, minilm-l6-int8, vs_final=step0)" in str(e.value)
    assert "candidate=candidate=" not in str(e.value) and "minilm-l6-int8=minilm-l6-int8" not in str(e.value)


# -- the option the user typed -------------------------------------------------------------------------
@pytest.mark.parametrize("option,fix", [
    ("--text-column", "name the text column with --text-column A (or --text-fields A,B for a text pair)"),
    ("--text-fields", "name the text column with --text-fields A (or A,B for a text pair)"),
])
def test_a_missing_text_column_names_the_option_used(option, fix, tmp_path, capsys):
    data = tmp_path / "reviews.csv"
    data.write_text("sentence,label\nI liked it,1\nawful,0\n")
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--data", str(data), option, "review",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --data: text column 'review' not in reviews.csv; columns are: sentence, label; {fix}"


# -- a mistyped model ------------------------------------------------------------------------------------
@pytest.mark.parametrize("typed,meant", [
    ("minlm-l6", "minilm-l6"),              # one letter left out: one name is closest
    ("minilm-l7", "minilm-l3 or minilm-l6"),  # as close to both: both are offered
    ("textrn", "textrnn"),                  # a model trained here
])
def test_an_unknown_model_preset_gets_a_did_you_mean(typed, meant, tmp_path, capsys):
    assert main(["compare", "--reference", typed, "--targets", "minilm-l3", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --reference: unknown model preset {typed!r} (did you mean {meant}?); known model "
                          "presets: minilm-l3, minilm-l6")


def test_no_did_you_mean_without_a_close_name():
    from perturblab.errors import InputError
    from perturblab.models.spec_check import check_spec

    with pytest.raises(InputError) as e:
        check_spec("zzz", "classifier")
    assert "did you mean" not in str(e.value) and str(e.value).startswith("unknown model preset 'zzz'; known")
    with pytest.raises(InputError, match=r"unknown language model preset 'smollm-135m' \(did you mean smollm2-135m\?\)"):
        check_spec("smollm-135m", "language_model")


# -- a percentage that rounds to zero -----------------------------------------------------------------------
def test_a_rate_that_rounds_to_zero_prints_unsigned():
    """An accuracy gap of exactly 0 is a rate of −0.0 lost (−gap), and one of +0.0004 a rate of
    −0.0004: both print 0.0 %, in the console's finding and in the report's cell."""
    from perturblab.core.headline import Estimate
    from perturblab.report.html_compare import _severity_cell
    from perturblab.studies.part import CLASSIFIER
    from perturblab.studies.compare.severity import rate_finding

    for gap, low, high in ((0.0, -0.02, 0.02), (0.0004, -0.0003, 0.02)):
        s = rate_finding(Estimate("int8", "accuracy gap", gap, low, high, n=300, key="accuracy_gap",
                                  interval="95 % paired bootstrap"), CLASSIFIER)
        text = s.text()
        assert ": 0.0 % [-2.0 %, " in text and "-0.0" not in text, text
        cell = str(_severity_cell({"level": "within noise", **{k: getattr(s, k) for k in ("rate", "low", "high")}}))
        assert "· 0.0 % [-2.0, " in cell and "-0.0" not in cell, cell


# -- the result lines --quiet keeps ----------------------------------------------------------------------------
def test_quiet_keeps_the_history_and_mlflow_lines(tmp_path, tiny_costs, capsys):
    pytest.importorskip("mlflow", reason="the mlflow extra is not installed (./setup.sh installs it)")
    history, uri = tmp_path / "h.sqlite", f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies", "robustness",
                 "--budget", "10m", "--out", str(tmp_path / "o"), "--quiet",
                 "--history", str(history), "--release", "r1", "--mlflow", uri]) == 0
    err = capsys.readouterr().err.splitlines()
    assert f"history: release r1 appended to {history}" in err
    assert any(line.startswith("mlflow: run ") and line.endswith(f" at {uri}") for line in err)
    assert not any(": done in " in line for line in err)  # progress stays quiet
