"""Generation robustness (robustness paper Table 4): ROUGE of generated summaries on clean and
perturbed sources, with known answers from a model that copies the source's first sentence,
resume without generating again, the lead-sentence data set, pair files, and a real (tiny) causal
LM through the same API and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perturblab.data.corpus import Corpus
from perturblab.data.summaries import GenerationExample, lead_summaries, load_generation_data, read_pairs
from perturblab.errors import InputError
from perturblab.measures.task_metrics import rouge_f
from perturblab.core.entry import run
from perturblab.studies.robustness.config import GenerationArgs
from perturblab.studies.robustness.generation import GenerationStudy


def run_generation_robustness(args, out, models=None):
    """Run (or resume) the study into ``out`` and write its files there, as the command does; the rows."""
    result = run(GenerationStudy(args, models=models, progress=False), out, quiet=True)
    result.save(out)
    return result.rows

DOCS = [["The river flows north through the old valley town.", "Fishermen work on it every morning.",
         "Tourists come in the summer months."],
        ["A small library opened near the station last year.", "It lends books and music to everyone.",
         "The mayor spoke at its opening day."],
        ["Winter storms closed the mountain pass for two weeks.", "Trucks waited at the border for days.",
         "The road reopened after heavy snow clearing."],
        ["Short.", "Too short to qualify here.", "Another one."]]


class LeadCopier:
    """A 'language model' whose summary is the first sentence of the source in the prompt."""

    fingerprint = "lead-copier-v1"

    def __init__(self):
        self.prompts = 0

    def generate(self, prompts, *, max_new_tokens=32, sample=False, seed=0, temperature=1.0):
        self.prompts += len(prompts)
        out = []
        for p in prompts:
            source = p.split("Text: ", 1)[1].split("\n\nOne-sentence summary:", 1)[0]
            out.append(" " + source.split(". ", 1)[0].rstrip(".") + ".\nmore text")
        return out


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    with path.open("w") as f:
        for d in DOCS[:3]:
            f.write(json.dumps({"article": " ".join(d), "summary": d[0]}) + "\n")
    return path


def test_lead_summaries_from_a_corpus(monkeypatch):
    corpus = Corpus([s for d in DOCS for s in d], [i for i, d in enumerate(DOCS) for _ in d], name="hand")
    monkeypatch.setattr("perturblab.data.corpus.load_corpus", lambda spec: corpus)
    data = lead_summaries("hand")
    assert [ex.reference for ex in data] == [d[0] for d in DOCS[:3]]  # the 4th has short sentences
    assert data[1].source == " ".join(DOCS[1]) and data[0].uid == "hand:0"
    with pytest.raises(InputError, match="k must be"):
        lead_summaries("hand", k=1)


def test_pair_files_and_errors(tmp_path, pairs_file):
    data = read_pairs(pairs_file, source_column="article", reference_column="summary")
    assert len(data) == 3 and data[2].reference == DOCS[2][0]
    with pytest.raises(InputError, match="no column 'source'.*--source-column"):
        read_pairs(pairs_file)
    sub = load_generation_data(str(pairs_file), n=2, seed=1, source_column="article", reference_column="summary")
    assert len(sub) == 2 and all(ex in data for ex in sub)
    with pytest.raises(InputError, match="does not exist"):
        read_pairs(tmp_path / "missing.csv")


def test_known_answers_resume_and_outputs(tmp_path, pairs_file):
    lm = LeadCopier()
    cfg = GenerationArgs(models="copier", data=str(pairs_file), source_column="article", reference_column="summary",
                         perturbations="drop_first,drop_last", trials=2, n=3, n_boot=200)
    rows = run_generation_robustness(cfg, tmp_path / "out", models={"copier": lm})
    by = {(r["perturbation"], r["metric"]): r for r in rows}
    assert len(rows) == 2 * 3  # deterministic perturbations: one draw each, three metrics
    # the copier reproduces the reference exactly on clean sources; the generation is cut at the line break
    assert all(r["clean"] == pytest.approx(1.0) for r in rows)
    # drop_last removes the source's last word: the first sentence (the summary) is unchanged
    assert by[("drop_last", "rouge1")]["relative_robustness"] == pytest.approx(1.0)
    # drop_first removes the first word: the summary loses it; ROUGE by hand against rouge_f
    refs = [d[0] for d in DOCS[:3]]
    cut = [" ".join(r.split()[1:]) for r in refs]
    assert by[("drop_first", "rouge1")]["perturbed"] == pytest.approx(rouge_f(refs, cut, "rouge1"))
    # unigram F of a sentence missing one of its n words: 2(n-1)/(2n-1)
    want = np.mean([2 * (len(r.split()) - 1) / (2 * len(r.split()) - 1) for r in refs])
    assert by[("drop_first", "rouge1")]["perturbed"] == pytest.approx(want)
    assert by[("drop_first", "rouge1")]["change_rate"] == 1.0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    cell = next(c for c in summary["cells"] if (c["perturbation"], c["metric"]) == ("drop_first", "rouge1"))
    assert cell["ci"][0] <= cell["mean"] <= cell["ci"][1] < 1
    assert next(c for c in summary["cells"] if (c["perturbation"], c["metric"]) == ("drop_last", "rougeL"))["ci"] == [1, 1]
    made = lm.prompts
    assert made == 3 * 3  # clean + two perturbations, three examples each
    again = run_generation_robustness(cfg, tmp_path / "out", models={"copier": lm})
    assert again == rows and lm.prompts == made  # resumed from the store: nothing generated twice
    out = tmp_path / "out"
    assert "## Relative robustness, rouge2" in (out / "table.md").read_text()
    assert (out / "generation_heatmap_rougeL.png").is_file() and (out / "examples.csv").read_text().count("copier") == 9


def test_config_errors(tmp_path):
    for kw, field, msg in [({"models": ""}, "models", "at least one"),
                           ({"models": "smollm2-135m", "metrics": "accuracy"}, "metrics", "rouge1"),
                           ({"models": "smollm2-135m", "prompt": "no slot"}, "prompt", "{source}")]:
        args = GenerationArgs(**kw)
        assert [f for f, _ in args.problems()] == [field]
        with pytest.raises(InputError, match=msg):
            args.check()
    with pytest.raises(InputError, match="at least one"):
        import perturblab as pl
        pl.generation([], out=tmp_path / "x", quiet=True)
    assert not (tmp_path / "x").exists()


def test_tiny_causal_lm_through_the_same_api(tmp_path, pairs_file, torch_one_thread):
    from helpers.tiny_lm import tiny_lm

    lm = tiny_lm()
    cfg = GenerationArgs(models="tiny", data=str(pairs_file), source_column="article", reference_column="summary",
                         perturbations="change_char", trials=2, n=3, max_new_tokens=8, n_boot=100)
    rows = run_generation_robustness(cfg, tmp_path / "out", models={"tiny": lm})
    assert len(rows) == 2 * 3 and all(0 <= r["clean"] <= 1 and 0 <= r["perturbed"] <= 1 for r in rows)
    gens = [row for row in (tmp_path / "out" / "examples.csv").read_text().splitlines()[1:]]
    assert len(gens) == 3 * 3  # clean + 2 draws, 3 examples


def test_cli_generation_end_to_end(tmp_path, pairs_file, capsys, monkeypatch):
    from helpers.tiny_lm import tiny_lm

    from perturblab.cli import main

    monkeypatch.setattr("perturblab.models.lm_presets.load_language_model", lambda name, **kw: tiny_lm())
    monkeypatch.setattr("perturblab.studies.args.check_model_spec", lambda spec, role: None)  # a made-up name
    assert main(["generation", "--models", "tiny", "--data", str(pairs_file), "--source-column", "article",
                 "--reference-column", "summary", "--perturbations", "drop_first", "--n", "3",
                 "--max-new-tokens", "4", "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    assert "# Generation robustness" in capsys.readouterr().out
    assert json.loads((tmp_path / "cli" / "results.json").read_text())[0]["model"] == "tiny"
    assert main(["generation", "--models", "tiny", "--data", str(tmp_path / "none.csv"), "--out",
                 str(tmp_path / "e"), "--quiet"]) == 2


def test_examples_are_frozen_records():
    ex = GenerationExample("a b.", "a b.", "0")
    with pytest.raises(Exception):
        ex.source = "c"  # type: ignore[misc]
