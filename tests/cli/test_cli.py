"""CLI end to end on tiny HF models built from configs (no download), and its error paths."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perturblab.cli import main
from helpers.tiny_classifier import WORDS, tiny_model_dir


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    a = tiny_model_dir(root / "model_a", 0)
    b = tiny_model_dir(root / "model_b", 1)
    rng = np.random.default_rng(0)
    lines = ["text,label"]
    for i in range(80):
        words = rng.choice(WORDS[:15], size=7)
        lines.append(f"the {' '.join(words)} .,{'pos' if i % 2 else 'neg'}")
    data = root / "data.csv"
    data.write_text("\n".join(lines) + "\n")
    return root, a, b, data


def test_scope_end_to_end(setup, capsys):
    root, a, b, data = setup
    out = root / "out"
    rc = main(["scope", "--reference", a, "--targets", f"{b},{a}", "--capabilities", "typo",
               "--data", str(data), "--n", "12", "--trials", "2", "--out", str(out), "--quiet"])
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    assert len(rows) == 2 * 2  # 2 targets x 2 trials
    for key in ("reference", "target", "capability", "trial", "n", "gap_iid_acc", "iid_agreement",
                "ood_agreement", "hard_scope", "soft_scope"):
        assert key in rows[0]
    self_rows = [r for r in rows if r["target"] == a]
    assert all(r["hard_scope"] == 1.0 and r["soft_scope"] == 1.0 for r in self_rows)
    for name in ("summary.json", "perturbed_examples.csv", "examples_table.csv", "metrics.csv",
                 "results.sqlite", "correlations.json", "sample_complexity.json"):
        assert (out / name).is_file(), name
    assert list(out.glob("scope_*.png"))
    printed = capsys.readouterr().out
    assert "hard_scope" in printed and "outputs in" in printed
    # the same command again resumes from the store and gives the same rows
    assert main(["scope", "--reference", a, "--targets", f"{b},{a}", "--capabilities", "typo",
                 "--data", str(data), "--n", "12", "--trials", "2", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "results.json").read_text()) == rows


@pytest.mark.parametrize("args,needle", [
    (["--capabilities", "telepathy"], "unknown capability 'telepathy'"),
    (["--reference", "no-such-model"], "no-such-model"),
    (["--data", "missing.csv"], "missing.csv"),
])
def test_bad_input_gives_clear_error(setup, capsys, args, needle):
    root, a, b, data = setup
    base = {"--reference": a, "--targets": b, "--capabilities": "typo", "--data": str(data)}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = ["scope"] + [x for kv in base.items() for x in kv] + ["--n", "4", "--trials", "1",
                                                                  "--out", str(root / "bad"), "--quiet"]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err


def test_malformed_data_file(setup, capsys):
    root, a, b, _ = setup
    bad = root / "bad.jsonl"
    bad.write_text('{"text": "fine", "label": "pos"}\n{"text": broken\n')
    rc = main(["scope", "--reference", a, "--targets", b, "--data", str(bad), "--n", "4",
               "--out", str(root / "bad2"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "bad.jsonl" in err


def test_listing_commands(capsys):
    assert main(["capabilities"]) == 0
    out = capsys.readouterr().out
    assert "synonym" in out and "typo" in out and "fairness" in out
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "minilm-l6-int8" in out and "trainable models" in out and "textrnn" in out
