"""Fault tolerance: a study killed with SIGKILL at a random moment and then resumed gives the same
results as an uninterrupted run, with no stored row lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

RUN_CONFIG = """\
studies:
  - name: rob
    kind: robustness
    models: [tfidf-lr, textrnn]
    perturbations: [change_char, add_text, swap_words, drop_first]
    data: {data}
    n_train: 120
    n_test: 400
    seeds: 2
"""


def command(study: str, data, out, resume: bool = False) -> list[str]:
    """The study's command; ``run`` is the robustness study through a config (resumed with
    ``perturblab resume``)."""
    if study == "run":
        if resume:
            return [sys.executable, "-m", "perturblab.cli", "resume", str(out), "--quiet"]
        config = out.parent / "run.yaml"
        config.write_text(RUN_CONFIG.format(data=data))
        return [sys.executable, "-m", "perturblab.cli", "run", str(config), "--out", str(out), "--quiet"]
    if study == "scope":  # 4 trials x 40 samples: four search cells of 40 (typo needs no WordNet)
        return [sys.executable, "-m", "perturblab.cli", "scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr",
                "--capabilities", "typo", "--data", str(data), "--n", "40", "--trials", "4",
                "--out", str(out), "--quiet"]
    if study in ("layer-probes", "grounding", "checkpoints", "finetuning"):
        return bert_command(study, data, out)
    if study in ("generation", "selfcheck"):  # a tiny causal LM directory
        from helpers.tiny_lm import save_lm

        lm_dir = save_lm(out.parent / "lm")
        if study == "selfcheck":  # one cell per chunk of 4 examples of each metric and setting
            corpus = out.parent / "corpus.txt"
            corpus.write_text("\n\n".join(f"{s} (number {i})." for i, s in enumerate(lm_sentences() * 4)) + "\n")
            return [sys.executable, "-m", "perturblab.cli", "selfcheck", "--models", str(lm_dir), "--corpus",
                    str(corpus), "--benign-corpus", "none", "--metrics", "negation,word_order,entropy", "--n", "24",
                    "--chunk", "4", "--out", str(out), "--quiet"]
        pairs = out.parent / "pairs.jsonl"
        pairs.write_text("".join(json.dumps({"source": s + " " + s, "reference": s}) + "\n" for s in lm_sentences()))
        return [sys.executable, "-m", "perturblab.cli", "generation", "--models", str(lm_dir), "--data", str(pairs),
                "--perturbations", "drop_first,drop_last,change_char,swap_words,add_text", "--trials", "3",
                "--max-new-tokens", "6", "--n-boot", "50", "--out", str(out), "--quiet"]
    if study == "scope-lm":  # two tiny LMs of one vocabulary: search and scoring cells of 2 sentences
        from helpers.tiny_lm import save_lm

        ref, target = save_lm(out.parent / "lm"), save_lm(out.parent / "lm1", seed=1)
        corpus = out.parent / "sentences.txt"
        corpus.write_text("\n\n".join(f"{s} (number {i})." for i, s in enumerate(lm_sentences() * 2)) + "\n")
        return [sys.executable, "-m", "perturblab.cli", "scope-lm", "--reference", str(ref), "--targets",
                str(target), "--capabilities", "typo", "--corpus", str(corpus), "--n", "8", "--trials", "2",
                "--chunk-size", "2", "--max-words", "2", "--n-boot", "50", "--out", str(out), "--quiet"]
    common = ["--data", str(data), "--trials", "2", "--out", str(out), "--quiet"]
    if study == "learnability":
        return [sys.executable, "-m", "perturblab.cli", "learnability", "--models", "tfidf-lr,textrnn",
                "--perturbations", "leet_letters,whitespace,butter_fingers", "--n-train", "120", "--n-test", "60",
                "--ps", "0.01,0.1,1", "--workers", "1", *common]
    return [sys.executable, "-m", "perturblab.cli", "robustness", "--models", "tfidf-lr,textrnn",
            "--perturbations", "change_char,add_text,swap_words,drop_first", "--n-train", "120", "--n-test", "400",
            "--metrics", "accuracy,mcc", *common]


def bert_command(study: str, data, out) -> list[str]:
    """The command of a study of tiny BERT directories (made in ``out.parent`` once)."""
    from helpers import tiny_bert

    if study == "layer-probes":  # a tiny BERT directory: one cell per perturbation and one clean
        model = out.parent / "bert"
        if not model.is_dir():
            tiny_bert.save_bert(model, 0)
        return [sys.executable, "-m", "perturblab.cli", "layer-probes", "--model", str(model), "--data", str(data),
                "--perturbations", "change_char,swap_words,drop_first,drop_last,random_typo", "--n-train", "200",
                "--n-eval", "100", "--out", str(out), "--quiet"]
    if study == "grounding":  # three tiny BERT directories: a cell per probe, per distance, and the warm-up
        dirs = []
        for i in range(3):
            model = out.parent / f"bert{i}"
            if not model.is_dir():
                tiny_bert.save_bert(model, i)
            dirs.append(str(model))
        return [sys.executable, "-m", "perturblab.cli", "grounding", "--variants", ",".join(dirs), "--data", str(data),
                "--n-train", "200", "--n-eval", "100", "--measures", "cka,procrustes", "--pc-layers", "1,2",
                "--n-boot", "200", "--out", str(out), "--quiet"]
    if study == "checkpoints":  # a tiny fine-tune saved at 0, 50 and 100 %: one search cell per reference and trial
        run = out.parent / "fine-tune"
        if not run.is_dir():
            from perturblab.models.finetune import FinetuneConfig, finetune_classifier

            base = out.parent / "bert-base"  # an encoder without a head: the fine-tune adds one
            tiny_bert.bert(0).save_pretrained(base)
            tiny_bert.tokenizer().save_pretrained(base)
            config = FinetuneConfig(epochs=4, lr=1e-2, batch_size=16, max_length=16, max_seconds=None)
            finetune_classifier(base, tiny_bert.dataset(96), seed=0, out_dir=run, config=config, progress=False,
                                checkpoints=(0, 0.5, 1))
        words = out.parent / "words.csv"
        if not words.is_file():
            tiny_bert.write_csv(words, 200)
        return [sys.executable, "-m", "perturblab.cli", "checkpoints", "--checkpoints", str(run), "--data",
                str(words), "--capabilities", "typo", "--n", "10", "--trials", "2", "--out", str(out), "--quiet"]
    # finetuning: a given fine-tuned copy (nothing is trained): a cell per measure
    base, ft = out.parent / "bert-base", out.parent / "bert-ft"
    for model, seed in ((base, 0), (ft, 1)):
        if not model.is_dir():
            tiny_bert.save_bert(model, seed)
    words = out.parent / "words.csv"
    if not words.is_file():
        tiny_bert.write_csv(words, 200)
    return [sys.executable, "-m", "perturblab.cli", "finetuning", "--base", str(base), "--finetuned", str(ft),
            "--data", str(words), "--n-train", "100", "--n-eval", "40", "--k", "4", "--out", str(out), "--quiet"]


def lm_sentences() -> list[str]:
    from helpers.tiny_lm import SENTENCES

    return list(SENTENCES)


def table_rows(db, table: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return sorted(con.execute(f"SELECT * FROM {table}").fetchall())
    finally:
        con.close()


def count_rows(db, table: str) -> int:
    try:
        con = sqlite3.connect(db, timeout=0.05)
        try:
            return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:  # not created yet, or locked by the writer this instant
        return -1


def kill_after(cmd, env, db, table: str, rows: int, extra_delay: float, timeout: float = 300) -> bool:
    """Start ``cmd``, SIGKILL it ``extra_delay`` s after its store holds ``rows`` rows of ``table``;
    True when it was killed before finishing."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and count_rows(db, table) < rows and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(extra_delay)
    running = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return running


SLOW = pytest.mark.slow


# the default tier kills a search study, a training study and a config run (whose study is robustness);
# the other studies are killed in the slow tier
@pytest.mark.parametrize("study,table", [("learnability", "cells"), pytest.param("robustness", "cells", marks=SLOW),
                                         ("run", "cells"), ("scope", "cells"),
                                         pytest.param("layer-probes", "cells", marks=SLOW),
                                         pytest.param("grounding", "cells", marks=SLOW),
                                         pytest.param("generation", "cells", marks=SLOW),
                                         pytest.param("selfcheck", "cells", marks=SLOW),
                                         pytest.param("scope-lm", "cells", marks=SLOW),
                                         pytest.param("checkpoints", "cells", marks=SLOW),
                                         pytest.param("finetuning", "cells", marks=SLOW)])
def test_sigkill_then_resume_equals_uninterrupted_run(tmp_path, marker_csv, study, table):
    env = {**os.environ, "PERTURBLAB_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    data = marker_csv(tmp_path / "toy.csv", 640, n_words=8)
    sub = "rob" if study == "run" else "."  # a config's study writes into its own folder
    subprocess.run(command(study, data, tmp_path / "ref"), env=env, check=True, capture_output=True, timeout=600)
    reference = json.loads((tmp_path / "ref" / sub / "results.json").read_text())
    ref_rows = table_rows(tmp_path / "ref" / sub / "results.sqlite", table)
    rng = np.random.default_rng(7)
    mid_run = 0
    for attempt in range(3):  # a random point of progress, and a random moment after it
        if mid_run:
            break
        out = tmp_path / f"killed{attempt}"
        target, delay = int(rng.integers(1, len(ref_rows))), float(rng.uniform(0, 0.01))
        if attempt == 1:  # the first kill came too late: a study whose cells are cheap stores its last
            target = 1    # batches within milliseconds, so kill right after its first stored batch
        # (at least one kill must land mid-run)
        killed = kill_after(command(study, data, out), env, out / sub / "results.sqlite", table, target, delay)
        partial = table_rows(out / sub / "results.sqlite", table)
        assert killed, "the kill came after the study had finished"
        mid_run += len(partial) < len(ref_rows)
        assert set(partial) <= set(ref_rows)  # what was written before the kill is complete and correct
        con = sqlite3.connect(out / sub / "results.sqlite")
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        subprocess.run(command(study, data, out, resume=True), env=env, check=True, capture_output=True, timeout=600)
        rows = table_rows(out / sub / "results.sqlite", table)
        assert len(set(r[:-1] for r in rows)) == len(rows)  # no key twice
        assert rows == ref_rows  # none lost
        assert json.loads((out / sub / "results.json").read_text()) == reference
        if study == "run":
            assert json.loads((out / "run.json").read_text())["studies"]["rob"]["state"] == "done"
    assert mid_run >= 1, "every kill came after the last row was stored (while writing outputs)"


def test_sigterm_ends_a_run_as_ctrl_c_does_and_the_same_command_resumes(tmp_path, marker_csv):
    """SIGTERM (what CI runners and ``timeout`` send) mid-run: one line that says how to resume, exit
    143 (128 + 15), no traceback, the store intact; the same command then finishes with the
    uninterrupted run's results."""
    env = {**os.environ, "PERTURBLAB_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    data = marker_csv(tmp_path / "toy.csv", 640, n_words=8)
    subprocess.run(command("scope", data, tmp_path / "ref"), env=env, check=True, capture_output=True, timeout=600)
    reference = json.loads((tmp_path / "ref" / "results.json").read_text())
    out = tmp_path / "term"
    proc = subprocess.Popen(command("scope", data, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and count_rows(out / "results.sqlite", "cells") < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before the signal"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "terminated (SIGTERM); re-run the same command to resume"
    assert "Traceback" not in err and not (out / "results.json").exists()
    con = sqlite3.connect(out / "results.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    subprocess.run(command("scope", data, out), env=env, check=True, capture_output=True, timeout=600)
    assert json.loads((out / "results.json").read_text()) == reference
