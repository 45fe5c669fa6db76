"""SCoPE on a text-pair task from the command line: two text columns named with --text-fields,
the search perturbing only the field --perturb-field names, and clear errors for bad use."""

from __future__ import annotations

import csv
import json

import numpy as np

from perturblab.cli import main
from helpers.pair_data import pair_csv


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


def test_search_problem_over_both_texts_splits_every_candidate_back():
    from perturblab.perturb.capabilities import get_capability
    from perturblab.perturb.goals import InvarianceGoal
    from perturblab.perturb.search import FIELD_JOIN, SearchProblem

    cap = get_capability("typo")
    fields = ("The garden, in summer.", "A yellow basket!")
    p = SearchProblem(fields=fields, transformation=cap.transformation, constraints=cap.constraints,
                      goal=InvarianceGoal("l1"), rng=np.random.default_rng(0), field_index=None)
    assert p.words.words == ("The", "garden", "in", "summer", "A", "yellow", "basket")
    assert p.word_groups == [["The", "garden", "in", "summer"], ["A", "yellow", "basket"]]
    assert p.original_input == fields and FIELD_JOIN not in "".join(fields)
    assert p.model_input(p.words.replace(5, "yelow").text) == ("The garden, in summer.", "A yelow basket!")
    assert p.model_input(p.words.replace(3, "sumer").text) == ("The garden, in sumer.", "A yellow basket!")
    assert p.model_input(p.words.delete(3).text) == ("The garden, in .", "A yellow basket!")  # saliency deletions
    assert p.model_input(p.words.delete(4).text) == ("The garden, in summer.", " yellow basket!")
    one = SearchProblem(fields=("only one text",), transformation=cap.transformation, constraints=cap.constraints,
                        goal=InvarianceGoal("l1"), rng=np.random.default_rng(0), field_index=None)
    assert one.original_input == "only one text"


def test_scope_searches_the_words_of_both_texts(tmp_path, capsys):
    data = pair_csv(tmp_path / "pairs.csv")
    out = tmp_path / "both"
    assert main(["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo",
                 "--data", str(data), "--text-fields", "premise,hypothesis", "--label-column", "gold",
                 "--perturb-field", "both", "--n", "30", "--trials", "1", "--out", str(out), "--quiet"]) == 0
    pairs = perturbed_pairs(out)
    assert len(pairs) >= 25 and all(len(o) == 2 == len(p) for o, p in pairs)
    assert any(o[0] != p[0] for o, p in pairs) and any(o[1] != p[1] for o, p in pairs)  # changes land in either text
    assert all(sum(a != b for a, b in zip(o, p)) >= 1 for o, p in pairs)
    capsys.readouterr()
