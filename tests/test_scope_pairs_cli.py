"""SCoPE on a text-pair task from the command line: two text columns named with --text-fields,
the search perturbing only the field --perturb-field names, and clear errors for bad use."""

from __future__ import annotations

import csv
import json

import numpy as np

from perturblab.cli import main

WORDS = ["window", "garden", "kitchen", "yellow", "morning", "river", "basket", "pencil", "summer", "forest"]


def pair_csv(path, n=160):
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["premise", "hypothesis", "gold"])
        for i in range(n):
            w.writerow([" ".join(rng.choice(WORDS, 6)),
                        " ".join([*rng.choice(WORDS, 4), "wonderful" if i % 2 else "terrible"]), i % 2])
    return path


def perturbed_pairs(out):
    with (out / "perturbed_examples.csv").open() as f:
        return [(json.loads(r["original"]), json.loads(r["perturbed"])) for r in csv.DictReader(f)
                if r["status"] == "perturbed"]


def test_scope_perturbs_only_the_named_field_of_a_pair(tmp_path, capsys):
    data = pair_csv(tmp_path / "pairs.csv")
    for field, kept, changed in (("b", 0, 1), ("a", 1, 0)):
        out = tmp_path / f"out-{field}"
        assert main(["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo",
                     "--data", str(data), "--text-fields", "premise,hypothesis", "--label-column", "gold",
                     "--perturb-field", field, "--n", "20", "--trials", "1", "--out", str(out), "--quiet"]) == 0
        pairs = perturbed_pairs(out)
        assert len(pairs) >= 15
        assert all(len(o) == 2 and o[kept] == p[kept] and o[changed] != p[changed] for o, p in pairs)
        summary = json.loads((out / "summary.json").read_text())
        assert summary[0]["hard_scope"] == 1.0  # the reference against itself
    capsys.readouterr()


def test_pair_options_errors(tmp_path, capsys, marker_csv):
    single = marker_csv(tmp_path / "single.csv", 80)
    base = ["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo", "--n", "5",
            "--trials", "1", "--quiet"]
    assert main(base + ["--data", str(single), "--perturb-field", "b", "--out", str(tmp_path / "o1")]) == 2
    assert "--text-fields A,B" in capsys.readouterr().err
    assert main(base + ["--data", str(single), "--text-fields", "a,b,c", "--out", str(tmp_path / "o2")]) == 2
    assert "one or two column names" in capsys.readouterr().err
