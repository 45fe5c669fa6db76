"""The representation studies end to end on tiny BERTs registered as presets (no assets)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from perturblab.cli import main  # noqa: E402
from perturblab.measures.layerwise import PAIRWISE  # noqa: E402
from perturblab.models import presets  # noqa: E402
from perturblab.models.finetune import FinetuneConfig  # noqa: E402
from perturblab.models.hf import HFEncoder  # noqa: E402
from perturblab.models.states import layer_states  # noqa: E402
from helpers.tiny_bert import FILL, NEG, POS, tokenizer  # noqa: E402

def _encoder(seed: int, layers: int, name: str):
    def make():
        torch.manual_seed(seed)
        tok = tokenizer()
        cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=layers,
                                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
        return HFEncoder(transformers.BertModel(cfg).eval(), tok, batch_size=64, name=name)
    return make


@pytest.fixture(autouse=True)
def tiny_presets(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    for name, seed, layers in (("tiny-a", 0, 2), ("tiny-b", 1, 3)):
        presets.PRESETS.add(name, (lambda n=name, s=seed, l=layers: presets.ModelPreset(
            n, "encoder", "test", _encoder(s, l, n))), overwrite=True)
    presets._ENCODERS.clear()
    yield
    presets._ENCODERS.clear()


@pytest.fixture
def data_file(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "toy.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for i in range(240):
            y = i % 2
            words = list(rng.choice(POS if y else NEG, size=2)) + list(rng.choice(FILL, size=4))
            rng.shuffle(words)
            w.writerow([y, " ".join(words)])
    return str(path)


def test_similarity_cli_rows_values_and_reuse(data_file, tmp_path, monkeypatch):
    out = tmp_path / "sim"
    argv = ["similarity", "--a", "tiny-a", "--b", "tiny-b", "--data", data_file, "--n", "120",
            "--measures", "cka,pwcca,procrustes", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "results.json").read_text())
    assert len(rows) == 3 * 3 * 4
    assert {"a", "b", "layer_a", "layer_b", "measure", "value"} <= set(rows[0])
    assert {p.name for p in out.glob("heatmap_*.png")} == {f"heatmap_{m}.png" for m in
                                                           ("linear_cka", "pwcca_distance", "procrustes_distance")}
    # values equal the pairwise functions on the same states
    from perturblab.studies.inputs import study_inputs

    inputs = study_inputs(data_file, 120, 0)
    la = layer_states(presets.load_encoder("tiny-a"), inputs, progress=False)
    lb = layer_states(presets.load_encoder("tiny-b"), inputs, progress=False)
    for r in rows:
        want = PAIRWISE[r["measure"]](la[r["layer_a"]], lb[r["layer_b"]])
        assert r["value"] == pytest.approx(want, abs=1e-9)
    # a second run reads the store: nothing is recomputed
    import perturblab.studies.grounding.similarity as sim

    monkeypatch.setattr(sim, "similarity_matrix", lambda *a, **k: pytest.fail("recomputed"))
    assert main(argv) == 0
    assert json.loads((out / "results.json").read_text()) == rows


def test_layer_probes_drops_and_ranks(data_file, tmp_path):
    from perturblab import layer_probes
    from perturblab.studies.robustness.layer_probes import top_layers

    res = layer_probes("tiny-b", data=data_file, perturbations=["random_typo", "swap_words"], n_train=150, n_eval=60,
                       top=2, quiet=True)
    res.save(tmp_path / "probes")
    rows = res.rows
    get = lambda p, m: [r["value"] for r in rows if r["perturbation"] == p and r["metric"] == m]  # noqa: E731
    clean = np.array(get("clean", "clean_acc"))
    assert len(clean) == 4 and clean.max() > 0.6
    for p in ("random_typo", "swap_words"):
        drop, acc, rank, se = map(np.array, (get(p, "drop"), get(p, "perturbed_acc"), get(p, "rank"),
                                             get(p, "drop_se")))
        np.testing.assert_allclose(drop, clean - acc)
        assert sorted(rank) == [1, 2, 3, 4]
        # only drops that are positive and above two paired standard errors count
        assert top_layers(rows, 2)[p] == [int(i) for i in np.argsort(-drop, kind="stable")
                                          if drop[i] > 0 and drop[i] > 2 * se[i]][:2]
    assert (tmp_path / "probes" / "probe_drops.png").is_file()
    # the headline's largest drop of 4 layers: ± z(1 − 0.025/4) = 2.4977 paired s.e. (Bonferroni)
    for e in res.headline().estimates:
        p = e.key.split(":", 1)[1]
        drop, se = np.array(get(p, "drop")), np.array(get(p, "drop_se"))
        worst = int(np.argmax(drop))
        assert e.value == drop[worst] and "Bonferroni-adjusted for choosing the largest of 4 layers" in e.interval
        if ", cut to" not in e.interval:
            assert (e.low, e.high) == pytest.approx((drop[worst] - 2.4977055 * se[worst],
                                                     drop[worst] + 2.4977055 * se[worst]), abs=1e-6)
    assert (tmp_path / "probes" / "top_layers.csv").read_text().count("\n") == 3


def test_finetuning_study_rows(data_file, tmp_path, monkeypatch):
    from perturblab import finetuning

    res = finetuning("tiny-a", data=data_file, n_train=150, n_eval=60, k=5, text_stir=True, capability="typo",
                     epochs=1, lr=1e-3, out=tmp_path / "ft", quiet=True)
    res.save(tmp_path / "ft")
    rows = res.rows
    by = {(r["measure"], r["layer"]): r["value"] for r in rows}
    for m in ("cka", "stir_ft|pre", "stir_pre|ft", "stir_pre|pre", "stir_text_ft|pre", "stir_text_pre|pre", "probe_acc_pre",
              "probe_acc_ft"):
        assert [layer for (mm, layer) in by if mm == m] == [0, 1, 2]
    assert 0 < by[("text_counterparts", None)] <= 60 and 0 <= by[("classifier_acc_ft", None)] <= 1
    assert all(0 < by[("cka", i)] <= 1 for i in range(3))
    meta = json.loads((tmp_path / "ft" / "finetune.json").read_text())["finetune"]
    assert meta["steps"] == 5 == res.finetune["steps"]  # one epoch of 150 examples in batches of 32
    assert (tmp_path / "ft" / "finetuning.png").is_file()
    # STIR's headline interval at the last layer: t(0.975, 4) · s.d. of the k = 5 halves · √(1 + 1/5),
    # not s.d./√5 (the halves overlap)
    stds = {(r["measure"], r["layer"]): r["std"] for r in rows}
    heads = {e.key: e for e in res.headline().estimates}
    for m in ("stir_ft|pre", "stir_pre|ft", "stir_pre|pre"):
        e, sd = heads[m], stds[(m, 2)]
        assert e.value == by[(m, 2)] and sd > 0
        assert e.interval.startswith("95 % half-sampling t-interval over examples (s.e. = s.d. of 5 random halves "
                                     "· √(1 + 1/5), 4 df)")
        assert e.high == pytest.approx(min(e.value + 2.7764451 * sd * np.sqrt(1.2), 1.0), abs=1e-6)
        assert e.low == pytest.approx(max(e.value - 2.7764451 * sd * np.sqrt(1.2), 0.0), abs=1e-6)
    # the same comparison from an existing fine-tuned copy: nothing is trained, same values
    import perturblab.models.finetune as ft

    (saved,) = list((tmp_path / "home" / "finetuned").iterdir())
    monkeypatch.setattr(ft, "finetune_classifier", lambda *a, **k: pytest.fail("trained"))
    assert main(["finetuning", "--base", "tiny-a", "--finetuned", str(saved), "--data", data_file, "--n-train", "150",
                 "--n-eval", "60", "--k", "5", "--out", str(tmp_path / "ft2"), "--quiet"]) == 0
    again = {(r["measure"], r["layer"]): r["value"] for r in json.loads((tmp_path / "ft2" / "results.json").read_text())}
    for layer in range(3):
        assert again[("cka", layer)] == pytest.approx(by[("cka", layer)], abs=1e-9)
    assert again[("classifier_acc_ft", None)] == pytest.approx(by[("classifier_acc_ft", None)])


def test_grounding_study_matches_scipy_on_its_members(data_file, tmp_path):
    from perturblab.core.entry import run
    from perturblab.studies.grounding import GroundingArgs, GroundingStudy

    args = GroundingArgs(data=data_file, variants="tiny-a,ft:0,ft:1,tiny-b", base="tiny-a", n_train=150, n_eval=80,
                         pc_layers=[2], pc_fractions=[0.0, 0.25, 0.5, 0.75], measures="procrustes,cka", n_boot=200)
    study = GroundingStudy(args, finetune=FinetuneConfig(max_steps=3, lr=1e-3, batch_size=16), progress=False)
    result = run(study, tmp_path / "g", quiet=True)
    result.save(tmp_path / "g")
    rows = result.rows
    members = list(csv.DictReader((tmp_path / "g" / "members.csv").open()))
    for r in (r for r in rows if r["benchmark"] in ("layer_depth", "pc_deletion")):
        sub = [m for m in members if (m["benchmark"], m["subset"]) == (r["benchmark"], r["subset"])
               and m["reference"] == "False"]
        f_ref = next(float(m["probe_accuracy"]) for m in members if (m["benchmark"], m["subset"]) ==
                     (r["benchmark"], r["subset"]) and m["reference"] == "True")
        diffs = [abs(float(m["probe_accuracy"]) - f_ref) for m in sub]
        d = [float(m[f"d_{r['measure']}"]) for m in sub]
        assert r["n"] == len(sub)
        assert r["spearman"] == pytest.approx(spearmanr(diffs, d).statistic, nan_ok=True)
        assert r["kendall"] == pytest.approx(kendalltau(diffs, d).statistic, nan_ok=True)
    depth = [m for m in members if m["benchmark"] == "layer_depth"]
    assert len(depth) == 2 + 2 + 2 + 3  # layers 1..L of each variant
    assert any(r["benchmark"] == "warmup_specificity" for r in rows)
    assert any(r["benchmark"] == "warmup_detection" for r in rows)
    assert (tmp_path / "g" / "table.md").read_text().startswith("| benchmark")
    assert (tmp_path / "g" / "warmup_layers.png").is_file()
