"""Self-supervised LM evaluation: divergences and score formulas against hand-computed
values, the study on a tiny model against independent computations, resume, bad input, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from perturblab.data.corpus import Corpus
from perturblab.errors import InputError
from perturblab.measures.divergence import cosine, entropy, jsd, kl
from perturblab.measures.selfcheck import (median_estimate, negation_normalised, negation_sensitivity,
                                         percent_ppl_drops, profane_mass_change, toxic_fraction)
from perturblab.perturb.selfcheck import Negate, chop_token_ids
from perturblab.studies.selfcheck.study import SelfCheckConfig, SelfCheckStudy, profane_token_ids
from tiny_lm import SENTENCES, tiny_lm

LOG = np.log


# ------------------------------------------------------------------ divergences
def test_jsd_hand_computed_and_against_scipy():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    with np.errstate(divide="ignore"):
        assert jsd(LOG(p), LOG(q)) == pytest.approx(0.5 * math.log(2), abs=1e-12)
        assert jsd(LOG([1.0, 0.0]), LOG([0.0, 1.0])) == pytest.approx(math.log(2))
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(50), size=4), rng.dirichlet(np.ones(50), size=4)
    want = [jensenshannon(x, y) ** 2 for x, y in zip(a, b)]  # scipy: sqrt of JSD, natural log
    np.testing.assert_allclose(jsd(LOG(a), LOG(b)), want, rtol=1e-10)
    assert jsd(LOG(a), LOG(a)) == pytest.approx(np.zeros(4), abs=1e-12)


def test_entropy_kl_cosine_hand_computed():
    assert entropy(LOG(np.full(4, 0.25))) == pytest.approx(math.log(4))
    assert kl(LOG([0.5, 0.5]), LOG([0.25, 0.75])) == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3))
    assert cosine(LOG([0.6, 0.8]), LOG([0.8, 0.6])) == pytest.approx(0.96)


# ------------------------------------------------------------------ score formulas
def test_score_formulas_hand_computed():
    s = negation_sensitivity([1.0, 2.0], [1.5, 2.1])
    assert s.value == pytest.approx(0.3) and s.stderr == pytest.approx(0.2) and s.n == 2
    z = negation_normalised([0.5, 0.1], [-0.2, 0.4, 0.0])
    assert z.value == pytest.approx(0.3 - 0.2)
    assert z.stderr == pytest.approx(math.sqrt(0.2 ** 2 + (np.std([0.2, 0.4, 0.0], ddof=1) / math.sqrt(3)) ** 2))
    assert percent_ppl_drops([0.5, -0.1, 0.2, -0.3]).value == pytest.approx(50.0)
    t = toxic_fraction([1, 1, 0, 1], [0, 1, 0, 0])
    assert t.value == pytest.approx(0.5)  # 3/4 toxic generations - 1/4 toxic prompts
    assert profane_mass_change([0.1, 0.2], [0.3, 0.1]).value == pytest.approx(0.05)
    m = median_estimate([5.0, 1.0, 3.0, 100.0, 2.0])
    assert m.value == 3.0 and m.stderr > 0
    with pytest.raises(InputError, match="no examples"):
        negation_sensitivity([], [])


# ------------------------------------------------------------------ the study on a tiny model
def _corpus() -> Corpus:
    docs = [SENTENCES[0:4], SENTENCES[4:7], SENTENCES[7:10], SENTENCES[1:5]]
    sents = [s for d in docs for s in d]
    return Corpus(sents, [i for i, d in enumerate(docs) for _ in d], name="hand")


def _config(**kw) -> SelfCheckConfig:
    base = dict(models=["tiny"], corpus="hand", n=5, seed=1, triggers=[0, 1, 2], context_swaps=[1, 2],
                word_swaps=[1, 2], strides=[3, 5], max_new_tokens=4, chunk=3)
    base.update(kw)
    return SelfCheckConfig(**base)


def _study(tmp_path, lm=None, **kw) -> SelfCheckStudy:
    corpus = _corpus()
    return SelfCheckStudy(_config(**kw), tmp_path / "out", models={"tiny": lm or tiny_lm()}, corpus=corpus,
                          benign=corpus, progress=False)


def _next_logp(lm, ids) -> np.ndarray:
    with torch.inference_mode():
        return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1).numpy()


def test_study_values_match_independent_computation(tmp_path):
    lm = tiny_lm()
    study = _study(tmp_path, lm)
    rows = study.run()
    ex = {(r["metric"], r["setting"], r["example_id"]): r for r in study.result.examples}
    # negation: Δ log ppl from an unbatched forward
    for (metric, setting, i), r in ex.items():
        if (metric, setting) == ("negation", "not"):
            assert r["perturbed"] == Negate()(r["text"])
            lps = []
            for t in (r["text"], r["perturbed"]):
                ids = lm.encode(t)
                with torch.inference_mode():
                    lp = torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
                lps.append(-lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean().item())
            assert r["value"] == pytest.approx(lps[1] - lps[0], abs=1e-4)
        if (metric, setting) == ("word_order", "swaps=2"):
            p, q = (np.exp(_next_logp(lm, lm.encode(t))) for t in (r["text"], r["perturbed"]))
            assert r["value"] == pytest.approx(jensenshannon(p, q) ** 2, abs=1e-5)
        if (metric, setting) == ("tokenization", "stride=3"):
            chopped = chop_token_ids(r["text"], lm.tokenizer, 3)
            p, q = (np.exp(_next_logp(lm, ids)) for ids in (lm.encode(r["text"]), chopped))
            assert r["value"] == pytest.approx(jensenshannon(p, q) ** 2, abs=1e-5)
        if (metric, setting) == ("long_range", "swapped=2"):
            assert r["text"].split(". ")[-1] == r["perturbed"].split(". ")[-1]  # last sentence kept
            assert r["text"] != r["perturbed"] and len(r["extra"]["jsd_positions"]) > 0
    # aggregates are the formulas applied to the per-example rows
    by = {(r["metric"], r["setting"]): r for r in rows}
    wo = [ex[k]["value"] for k in ex if k[:2] == ("word_order", "swaps=1")]
    assert by[("word_order", "swaps=1")]["value"] == pytest.approx(float(np.median(wo)))
    assert by[("word_order", "swaps=1")]["main"] is True and by[("word_order", "swaps=2")]["main"] is False
    neg = [ex[k]["value"] for k in ex if k[:2] == ("negation", "not")]
    assert by[("negation_sensitivity", "not")]["value"] == pytest.approx(np.mean(neg))
    assert by[("toxicity_generation", "k=0")]["n"] == 5
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {"model", "metric", "setting", "n", "value", "stderr"} <= set(saved[0])
    for name in ("spider.png", "ablations.png", "examples.csv", "most_sensitive.csv"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_study_resumes_without_calling_the_model(tmp_path):
    first = _study(tmp_path, metrics=["negation", "word_order", "entropy"]).run()
    study = _study(tmp_path, metrics=["negation", "word_order", "entropy"])

    fingerprint = tiny_lm().fingerprint

    class Boom:
        """Only the fingerprint (what the stored results are keyed on) may be read on resume."""

        def __getattr__(self, name):
            if name == "fingerprint":
                return fingerprint
            raise AssertionError(f"the model was used on resume ({name})")

    study.models = {"tiny": Boom()}
    assert study.run() == first


def test_profane_tokens_are_whole_words(monkeypatch):
    import perturblab.resources.profanity as prof

    lm = tiny_lm()
    monkeypatch.setattr(prof, "ldnoobw_words", lambda: ("the", "march", "two words"))
    ids = profane_token_ids(lm)
    assert set(ids.tolist()) == {i for w in ("the", " the", "The", " The", "THE", " THE", "march", " march",
                                             "March", " March", "MARCH", " MARCH")
                                 for i in [lm.encode(w)] if len(i) == 1 for i in i}
    assert len(ids) >= 1


def test_bad_input_is_reported_clearly(tmp_path):
    with pytest.raises(InputError, match="corpus 'empty'"):
        SelfCheckStudy(_config(), tmp_path / "a", models={"tiny": tiny_lm()}, corpus=Corpus([], [], "empty"),
                       benign=None, progress=False)
    no_verbs = Corpus(["Cats sleep on warm mats all day.", "Dogs bark at the mail carrier."], [0, 0], "nv")
    with pytest.raises(InputError, match="negation"):
        SelfCheckStudy(_config(metrics=["negation"], benign_corpus=None), tmp_path / "b",
                       models={"tiny": tiny_lm()}, corpus=no_verbs, progress=False).run()
    with pytest.raises(InputError, match="unknown metric"):
        _config(metrics=["sarcasm"]).validate()


def test_texts_longer_than_the_context_window_are_skipped(tmp_path, caplog):
    from tiny_lm import tiny_causal_model, tiny_tokenizer
    from perturblab.models.lm import HFCausalLM

    short = HFCausalLM(tiny_causal_model(len(tiny_tokenizer()), max_positions=47), tiny_tokenizer(), name="short")
    rows = _study(tmp_path, short, metrics=["word_order"], ablations=False).run()
    assert 0 < rows[0]["n"] < 5  # the long sentences were left out ...
    assert "context window" in caplog.text  # ... and said so


def test_cli_selfcheck_on_a_local_model_and_text_file(tmp_path, capsys):
    from perturblab.cli import main
    from tiny_lm import tiny_causal_model, tiny_tokenizer

    model_dir = tmp_path / "tiny"
    tiny_causal_model(len(tiny_tokenizer())).save_pretrained(model_dir)
    tiny_tokenizer().save_pretrained(model_dir)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(SENTENCES[:5]) + "\n\n" + " ".join(SENTENCES[5:]) + "\n")
    rc = main(["selfcheck", "--models", str(model_dir), "--corpus", str(corpus), "--n", "3", "--no-ablations",
               "--benign-corpus", "none", "--metrics", "negation,word_order,tokenization", "--quiet",
               "--out", str(tmp_path / "out")])
    assert rc == 0
    rows = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {r["metric"] for r in rows} == {"negation_sensitivity", "negation_ppl_drops", "word_order", "tokenization"}
    assert "word_order" in capsys.readouterr().out
    assert main(["selfcheck", "--models", "no-such-model", "--corpus", str(corpus), "--out",
                 str(tmp_path / "o2"), "--quiet"]) == 2
