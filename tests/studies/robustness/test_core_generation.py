"""The generation study on the study core: content-keyed resume (unchanged inputs, edited data,
another model under the same name), the public function against the command, and bad input."""

from __future__ import annotations

import json

import pytest
from test_generation_robustness import DOCS, LeadCopier

import perturblab as pl
from perturblab.cli import main
from perturblab.errors import InputError

KW = dict(source_column="article", reference_column="summary", perturbations="drop_first,change_char", trials=2,
          metrics="rouge1,rougeL", n_boot=100, quiet=True)


def copier(name: str = "lm") -> LeadCopier:
    lm = LeadCopier()
    lm.name = name
    return lm


class Prefixer(LeadCopier):
    """Another 'model': the first sentence with a word of its own in front."""

    fingerprint = "lead-prefixer-v1"

    def generate(self, prompts, **kw):
        return [" summary" + g for g in super().generate(prompts, **kw)]


def write_pairs(path, docs):
    with path.open("w") as f:
        for d in docs:
            f.write(json.dumps({"article": " ".join(d), "summary": d[0]}) + "\n")
    return str(path)


def test_a_rerun_generates_only_what_changed(tmp_path):
    data = write_pairs(tmp_path / "pairs.jsonl", DOCS[:3])
    out = tmp_path / "out"
    lm = LeadCopier()
    lm.name = "lm"
    first = pl.generation([lm], data=data, out=out, **KW)
    settings = 1 + 1 + 2  # clean, drop_first (deterministic: one draw), change_char x 2 draws
    assert lm.prompts == settings * 3
    clean = [r for r in first.rows if r["metric"] == "rouge1"]
    assert all(r["clean"] == 1.0 for r in clean)  # the copier reproduces the reference on clean sources

    again = LeadCopier()
    again.name = "lm"
    second = pl.generation([again], data=data, out=out, **KW)
    assert again.prompts == 0 and second.rows == first.rows  # nothing generated again

    other = Prefixer()
    other.name = "lm"  # another model under the same name: generated afresh
    third = pl.generation([other], data=data, out=out, **KW)
    assert other.prompts == settings * 3 and third.rows != first.rows

    edited = [[d[0].replace("river", "canal"), *d[1:]] for d in DOCS[:3]]
    lm2 = LeadCopier()
    lm2.name = "lm"
    fourth = pl.generation([lm2], data=write_pairs(tmp_path / "pairs.jsonl", edited), out=out, **KW)
    assert lm2.prompts == settings * 3  # the data changed: every setting again
    assert fourth.rows == pl.generation([copier()], data=str(tmp_path / "pairs.jsonl"), **KW).rows


def test_save_writes_what_the_command_writes(tmp_path, capsys, monkeypatch):
    data = write_pairs(tmp_path / "pairs.jsonl", DOCS[:3])
    monkeypatch.setattr("perturblab.models.lm_presets.load_language_model", lambda name, **kw: LeadCopier())
    monkeypatch.setattr("perturblab.studies.args.check_model_spec", lambda spec, role: None)  # a made-up name
    argv = ["generation", "--models", "copier", "--data", data, "--source-column", "article", "--reference-column",
            "summary", "--perturbations", "drop_first,change_char", "--trials", "2", "--metrics", "rouge1,rougeL",
            "--n-boot", "100", "--out", str(tmp_path / "cli"), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "# Generation robustness" in printed and "computed on n = 3" in printed
    res = pl.generation("copier", data=data, **KW)
    res.save(tmp_path / "api")
    for name in ("results.json", "summary.json", "table.md", "examples.csv"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes(), name
    assert (tmp_path / "api" / "generation_heatmap_rougeL.png").stat().st_size > 0
    # the old option name still works and gives the same files
    assert main([a if a != "--trials" else "--seeds" for a in argv[:-3]] + ["--out", str(tmp_path / "old"),
                                                                           "--quiet"]) == 0
    assert (tmp_path / "old" / "results.json").read_bytes() == (tmp_path / "cli" / "results.json").read_bytes()


def test_bad_input_is_refused(tmp_path, capsys):
    data = write_pairs(tmp_path / "pairs.jsonl", DOCS[:3])
    common = ["--data", data, "--source-column", "article", "--reference-column", "summary", "--quiet"]
    assert main(["generation", "--models", "x", "--prompt", "no slot", *common, "--out", str(tmp_path / "a")]) == 2
    assert "{source}" in capsys.readouterr().err
    assert main(["generation", "--models", "x", "--metrics", "bleu", *common, "--out", str(tmp_path / "b")]) == 2
    assert "rouge1" in capsys.readouterr().err
    with pytest.raises(InputError, match="not a language model"):
        pl.generation([object()], data=data, source_column="article", reference_column="summary")


def test_a_model_object_that_cannot_generate_is_refused_naming_it(tmp_path):
    """An object with a fingerprint but no ``generate`` method is no language model: refused,
    naming --models and its place in the list, before anything is written."""

    class Encoder:
        name, fingerprint = "enc", "encoder-v1"

        def hidden_states(self, texts, pooling="mean"):  # pragma: no cover - never called
            raise AssertionError

    data = write_pairs(tmp_path / "pairs.jsonl", DOCS[:3])
    with pytest.raises(InputError, match=r"--models: item 1 \(Encoder\) is not a language model: .*generate\(\)"):
        pl.generation([copier(), Encoder()], data=data, out=tmp_path / "out", **KW)
    assert not (tmp_path / "out").exists()
