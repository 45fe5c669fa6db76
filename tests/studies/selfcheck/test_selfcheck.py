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
from perturblab.core.entry import run
from perturblab.studies.selfcheck.config import SelfCheckArgs
from perturblab.studies.selfcheck.result import SelfCheckResult
from perturblab.studies.selfcheck.study import SelfCheckStudy, profane_token_ids
from helpers.observe import count_cells
from helpers.tiny_lm import SENTENCES, tiny_lm

LOG = np.log


# ------------------------------------------------------------------ divergences
def test_jsd_hand_computed_and_against_scipy():
    """jsd sums float32 terms in float64: within 1e-6 of the float64 formula (a float32 term
    carries a relative error of 6e-8, and the terms of a JSD add up to at most ln 2 in size)."""
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    with np.errstate(divide="ignore"):
        assert jsd(LOG(p), LOG(q)) == pytest.approx(0.5 * math.log(2), abs=1e-7)
        assert jsd(LOG([1.0, 0.0]), LOG([0.0, 1.0])) == pytest.approx(math.log(2))
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(50), size=4), rng.dirichlet(np.ones(50), size=4)
    want = [jensenshannon(x, y) ** 2 for x, y in zip(a, b)]  # scipy: sqrt of JSD, natural log
    np.testing.assert_allclose(jsd(LOG(a), LOG(b)), want, rtol=0, atol=1e-6)
    assert jsd(LOG(a), LOG(a)) == pytest.approx(np.zeros(4), abs=1e-12)


def test_jsd_of_vocabulary_sized_float32_log_probs_matches_float64():
    """What the studies pass: float32 log-softmax rows over a 49,152-token vocabulary, peaked like
    a language model's, some nearly equal (JSD ~1e-5) and some far apart, -inf entries included."""
    from scipy.special import log_softmax, rel_entr

    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 49152)) * 3
    other = logits + rng.standard_normal(logits.shape) * np.array([0.01, 0.01, 0.3, 1.0, 3.0, 3.0])[:, None]
    a, b = log_softmax(logits, axis=1).astype(np.float32), log_softmax(other, axis=1).astype(np.float32)
    a[5, :100] = -np.inf  # tokens a model gives no mass
    p, q = np.exp(a.astype(np.float64)), np.exp(b.astype(np.float64))
    m = 0.5 * (p + q)
    want = 0.5 * rel_entr(p, m).sum(axis=1) + 0.5 * rel_entr(q, m).sum(axis=1)
    got = jsd(a, b)
    assert got.dtype == np.float64 and want[0] < 1e-4 and want[4] > 0.3
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


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


# ------------------------------------------------------------------ headline intervals
def _ex(metric: str, setting: str, values, extras=None) -> list[dict]:
    extras = extras or [{} for _ in values]
    return [{"model": "tiny", "metric": metric, "setting": setting, "example_id": i, "text": "t", "perturbed": "p",
             "value": v, "extra": e} for i, (v, e) in enumerate(zip(values, extras))]


def test_headline_t_interval_of_a_mean_at_small_n_hand_computed():
    """Five negation changes: mean 0.16, s.d. 0.2302 (by hand), s.e. 0.10296; t(0.975, 4) =
    2.7764 (1.96 would be 29 % too narrow at n = 5)."""
    from perturblab.studies.selfcheck.result import headline_interval

    delta = [0.1, 0.4, -0.2, 0.3, 0.2]
    est = negation_sensitivity([0.0] * 5, delta)
    assert est.stderr == pytest.approx(0.1029563, abs=1e-7)
    low, high, what = headline_interval({"metric": "negation_sensitivity", "value": est.value,
                                         "stderr": est.stderr, "n": 5})
    assert (low, high) == pytest.approx((0.16 - 2.7764451 * 0.1029563, 0.16 + 2.7764451 * 0.1029563), abs=1e-6)
    assert (low, high) == pytest.approx((-0.125853, 0.445853), abs=1e-6)
    assert what == "95 % t-interval over examples (n − 1 df)"  # unbounded score: never cut


def test_headline_jsd_interval_below_zero_is_cut_and_says_so():
    """Tokenization JSDs of six texts: five 0 and one 0.06 → mean 0.01, s.e. 0.01; t(0.975, 5) =
    2.5706 reaches −0.0157, below what a JSD can be: cut at 0, and the text says so."""
    args = _args(metrics="tokenization", no_ablations=True)
    res = SelfCheckResult(args, [("tokenization", "stride=3", True)],
                          _ex("tokenization", "stride=3", [0.0] * 5 + [0.06]))
    (e,) = res.headline().estimates
    assert e.value == pytest.approx(0.01) and e.n == 6
    assert e.low == 0.0 and e.high == pytest.approx(0.01 + 2.5705818 * 0.01, abs=1e-7)
    assert e.interval == ("95 % t-interval over examples (n − 1 df), cut to [0, 0.693147]: "
                          "a JS divergence, never negative, at most ln 2")


def test_headline_intervals_of_the_other_kinds_hand_computed():
    from perturblab.studies.selfcheck.result import headline_interval, welch_df

    # percent of perplexity drops, a proportion: Wilson (19 of 20 → [76.4, 99.1] %)
    low, high, what = headline_interval({"metric": "negation_ppl_drops", "value": 95.0, "stderr": 5.0, "n": 20})
    assert (round(low, 1), round(high, 1), what) == (76.4, 99.1, "95 % Wilson interval over examples")
    # the normalised negation score: Welch–Satterthwaite df from the benign row of the same model
    args = _args(metrics="negation", no_ablations=True)
    not_rows = _ex("negation", "not", [0.5, 0.1, 0.3, 0.7],
                   [{"logppl_x": 0.0, "logppl_perturbed": v} for v in (0.5, 0.1, 0.3, 0.7)])
    benign = _ex("negation", "benign", [-0.2, 0.4, 0.0])
    res = SelfCheckResult(args, [("negation", "not", True), ("negation", "benign", False)], not_rows + benign)
    est = {e.key: e for e in res.headline().estimates}["negation_normalised"]
    # by hand: s.e.² 1/60 (Δ, n = 4) and 1/75 (|Δ_benign| = 0.2, 0.4, 0, n = 3); Welch df =
    # (1/60 + 1/75)² / ((1/60)²/3 + (1/75)²/2) = 243/49 ≈ 4.96, between min(n) − 1 = 2 and 5
    from scipy import stats

    se2 = 1 / 60 + 1 / 75
    assert welch_df(math.sqrt(se2), 4, math.sqrt(1 / 75), 3) == pytest.approx(243 / 49)
    half = stats.t.ppf(0.975, 243 / 49) * math.sqrt(se2)
    assert half == pytest.approx(0.4463, abs=1e-4)
    assert est.value == pytest.approx(0.2)
    assert (est.low, est.high) == pytest.approx((0.2 - half, 0.2 + half), abs=1e-9)
    assert est.interval == "95 % t-interval over examples (two corpora, Welch df)"
    # the word-order median: ± 1.96 bootstrap s.e., cut to [0, ln 2]
    low, high, what = headline_interval({"metric": "word_order", "value": 0.68, "stderr": 0.01, "n": 9})
    assert low == pytest.approx(0.68 - 1.959964 * 0.01) and high == pytest.approx(math.log(2))
    assert what.startswith("95 % normal interval over examples (bootstrap s.e. of the median), cut to [0, 0.693147]")
    assert headline_interval({"metric": "long_range", "value": 0.1, "stderr": float("nan"), "n": 1})[:2] == (None, None)


# ------------------------------------------------------------------ the study on a tiny model
def _corpus() -> Corpus:
    docs = [SENTENCES[0:4], SENTENCES[4:7], SENTENCES[7:10], SENTENCES[1:5]]
    sents = [s for d in docs for s in d]
    return Corpus(sents, [i for i, d in enumerate(docs) for _ in d], name="hand")


#: smaller ablations than the paper's, for speed (each headline setting runs as well)
ABLATION_VALUES = {"toxicity": [0, 1, 2], "long_range": [1, 2], "word_order": [1, 2], "tokenization": [3, 5]}


def _args(**kw) -> SelfCheckArgs:
    base = dict(models="tiny", corpus="hand", n=5, seed=1, max_new_tokens=4, chunk=3)
    base.update(kw)
    return SelfCheckArgs(**base)


def _study(lm=None, **kw) -> SelfCheckStudy:
    corpus = _corpus()
    return SelfCheckStudy(_args(**kw), models={"tiny": lm or tiny_lm()}, corpus=corpus, benign=corpus,
                          progress=False, ablation_values=ABLATION_VALUES)


def _run(study: SelfCheckStudy, out):
    """Run the study in ``out`` and write its files there; returns the result."""
    result = run(study, out, quiet=True)
    result.save(out)
    return result


def _next_logp(lm, ids) -> np.ndarray:
    with torch.inference_mode():
        return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1).numpy()


def test_study_values_match_independent_computation(tmp_path):
    lm = tiny_lm()
    result = _run(_study(lm), tmp_path / "out")
    rows = result.rows
    ex = {(r["metric"], r["setting"], r["example_id"]): r for r in result.examples}
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
    first = _run(_study(metrics="negation,word_order,entropy"), tmp_path / "out").rows
    study = _study(metrics="negation,word_order,entropy")

    fingerprint = tiny_lm().fingerprint

    class Boom:
        """Only the fingerprint (what the stored results are keyed on) may be read on resume."""

        def __getattr__(self, name):
            if name == "fingerprint":
                return fingerprint
            raise AssertionError(f"the model was used on resume ({name})")

    study.models = {"tiny": Boom()}
    assert _run(study, tmp_path / "out").rows == first


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
        SelfCheckStudy(_args(), models={"tiny": tiny_lm()}, corpus=Corpus([], [], "empty"), benign=None,
                       progress=False)
    no_verbs = Corpus(["Cats sleep on warm mats all day.", "Dogs bark at the mail carrier."], [0, 0], "nv")
    with pytest.raises(InputError, match="negation"):
        _run(SelfCheckStudy(_args(metrics="negation", benign_corpus="none"), models={"tiny": tiny_lm()},
                            corpus=no_verbs, progress=False), tmp_path / "b")
    with pytest.raises(InputError, match="unknown metric"):
        _args(metrics="sarcasm").check()
    with pytest.raises(InputError, match="ablation values of word_order must be a non-empty list"):
        SelfCheckStudy(_args(), models={"tiny": tiny_lm()}, corpus=_corpus(), ablation_values={"word_order": [0]})


def test_texts_longer_than_the_context_window_are_skipped(tmp_path, caplog):
    from helpers.tiny_lm import tiny_causal_model, tiny_tokenizer
    from perturblab.models.lm import HFCausalLM

    short = HFCausalLM(tiny_causal_model(len(tiny_tokenizer()), max_positions=47), tiny_tokenizer(), name="short")
    caplog.set_level("WARNING", logger="perturblab")  # a level on perturblab's logger: its records reach logging
    rows = _run(_study(short, metrics="word_order", no_ablations=True), tmp_path / "out").rows
    assert 0 < rows[0]["n"] < 5  # the long sentences were left out ...
    assert "context window" in caplog.text  # ... and said so


def test_cli_selfcheck_on_a_local_model_and_text_file(tmp_path, capsys):
    from perturblab.cli import main
    from helpers.tiny_lm import tiny_causal_model, tiny_tokenizer

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


# ------------------------------------------------------------------ negation rules and the sentence-word limit
class WordLengthLM:
    """A log-prob-only model with hand-computable scores: each whitespace word is one token with
    log p = −(its length), so log ppl(x) is the mean word length of x."""

    capabilities = frozenset({"token_logprobs"})
    name, max_length, vocab_size = "wordlen", 10_000, 0

    def __init__(self, fingerprint: str = "word-length-v1"):
        self.fingerprint, self.calls = fingerprint, 0

    def token_logprobs(self, inputs):
        self.calls += len(inputs)
        return [-np.array([len(w) for w in t.split()], dtype=np.float64) for t in inputs]


def _mean_word_length(text: str) -> float:
    return sum(len(w) for w in text.split()) / len(text.split())


RULE_CORPUS = ["It was late and the shop is closed.",  # both rules, at different verbs
               "They are here today.",  # the released code only ('are')
               "He isn't sure it was red.",  # the released code only (other negations do not count)
               "April is the fourth month of the year.",  # both, the same text
               "Is Paris the capital city?",  # the paper only
               "Water boils at one hundred degrees."]  # neither
NEGATED = {"paper": {RULE_CORPUS[0]: "It was not late and the shop is closed.",
                     RULE_CORPUS[3]: "April is not the fourth month of the year.",
                     RULE_CORPUS[4]: "Is not Paris the capital city?"},
           "byod-code": {RULE_CORPUS[0]: "It was late and the shop is not closed.",
                         RULE_CORPUS[1]: "They are not here today.",
                         RULE_CORPUS[2]: "He isn't sure it was not red.",
                         RULE_CORPUS[3]: "April is not the fourth month of the year."}}


def _scored_cells(out) -> int:
    return count_cells(out, "selfcheck.score")


def test_negation_rule_picks_the_examples_and_the_negated_text_and_is_keyed(tmp_path):
    import perturblab as pl

    lm, corpus = WordLengthLM(), Corpus(RULE_CORPUS, list(range(len(RULE_CORPUS))), name="rules")
    kw = dict(corpus=corpus, metrics="negation", benign_corpus=None, n=10, quiet=True, out=tmp_path / "o")
    cells = 0
    for rule in ("paper", "byod-code"):
        res = pl.selfcheck([lm], negation_rule=rule, **kw)
        got = {r["text"]: (r["perturbed"], r["value"]) for r in res.examples}
        assert {t: p for t, (p, _) in got.items()} == NEGATED[rule]
        for text, (negated, value) in got.items():  # Δ = mean word length of x' − of x ("not": 3 letters)
            assert value == pytest.approx(_mean_word_length(negated) - _mean_word_length(text), abs=1e-12)
        cells += len(NEGATED[rule])
        assert _scored_cells(tmp_path / "o") == cells  # the rule is keyed: nothing shared between rules
    # hand-computed: "It was late and the shop is closed." has 8 words of 28 letters
    assert got[RULE_CORPUS[0]][1] == pytest.approx(31 / 9 - 28 / 8, abs=1e-12)
    calls = lm.calls
    again = pl.selfcheck([lm], **kw)  # the default rule's cells are found again: nothing scored
    assert lm.calls == calls and _scored_cells(tmp_path / "o") == cells
    assert {r["text"]: r["perturbed"] for r in again.examples} == NEGATED["paper"]


def _long_sentences() -> Corpus:
    """Sentences with 'is' of 2, 3, 64, 65 and 80 whitespace words."""
    sents = [" ".join(["It", "is"] + [f"w{k}x{j}" for j in range(k - 2)]) + "." for k in (2, 3, 64, 65, 80)]
    assert [len(s.split()) for s in sents] == [2, 3, 64, 65, 80]
    return Corpus(sents, [0, 1, 2, 3, 4], name="long")


def test_the_sentence_word_limit_is_an_option():
    from perturblab.studies.selfcheck.study import Examples

    corpus = _long_sentences()
    for top, lengths in ((64, [3, 64]), (65, [3, 64, 65]), (None, [3, 64, 65, 80]), (3, [3])):
        args = SelfCheckArgs(models="m", n=10, max_sentence_words=top)
        ex = Examples(args, corpus, benign=corpus)
        for unit in (("negation", "not"), ("word_order", "swaps=1"), ("entropy", "-")):
            assert sorted(len(s.split()) for s in ex.get(*unit)) == lengths, (top, unit)
        assert sorted(len(s.split()) for s in ex.benign.sentences) == lengths
    assert SelfCheckArgs(models="m").max_sentence_words == 64  # the default stays
    for bad in (2, 0, -1, 6.5, True):
        with pytest.raises(InputError, match="max-sentence-words"):  # as the Python function reads it
            SelfCheckArgs.from_python({"models": "m", "max_sentence_words": bad}).check()
        with pytest.raises(InputError, match="max-sentence-words"):  # given directly
            SelfCheckArgs(models="m", max_sentence_words=bad).check()


def test_the_sentence_word_limit_reaches_the_results_keys(tmp_path):
    import perturblab as pl

    lm, corpus = WordLengthLM(), _long_sentences()
    kw = dict(corpus=corpus, metrics="negation", benign_corpus=None, n=10, quiet=True, out=tmp_path / "o")
    first = pl.selfcheck([lm], **kw)
    assert sorted(len(r["text"].split()) for r in first.examples) == [3, 64]
    assert _scored_cells(tmp_path / "o") == 2
    at65 = pl.selfcheck([lm], max_sentence_words=65, **kw)
    at79 = pl.selfcheck([lm], max_sentence_words=79, **kw)  # the same sentences as 65: no 66..79-word one
    assert at79.examples == at65.examples and at79.rows == at65.rows
    assert _scored_cells(tmp_path / "o") == 2 + 3 + 3  # keyed on the limit, even where the examples agree
    wide = pl.selfcheck([lm], max_sentence_words=None, **kw)
    assert sorted(len(r["text"].split()) for r in wide.examples) == [3, 64, 65, 80]
    assert _scored_cells(tmp_path / "o") == 2 + 3 + 3 + 4
    by_text = {r["text"]: r["value"] for r in wide.examples}
    for r in first.examples:  # the same sentence has the same value under either limit
        assert by_text[r["text"]] == pytest.approx(r["value"], abs=1e-12)
    calls = lm.calls
    assert pl.selfcheck([lm], max_sentence_words=64, **kw).rows == first.rows
    assert lm.calls == calls  # the default limit's cells are found again


def test_the_new_options_on_the_command_line_and_in_configs():
    from perturblab.cli import parse_args
    from perturblab.studies.selfcheck.config import SelfCheckArgs

    ns = parse_args(["selfcheck", "--models", "m", "--out", "o"])
    assert (ns.max_sentence_words, ns.negation_rule) == (64, "paper")
    ns = parse_args(["selfcheck", "--models", "m", "--out", "o", "--max-sentence-words", "all",
                     "--negation-rule", "byod-code"])
    assert (ns.max_sentence_words, ns.negation_rule) == (None, "byod-code")
    kw = SelfCheckArgs.from_config({"models": "m", "max-sentence-words": 80, "negation_rule": "byod-code"}).kwargs()
    assert (kw["max_sentence_words"], kw["negation_rule"]) == (80, "byod-code")
    assert SelfCheckArgs.from_config({"models": "m", "max_sentence_words": "all"}).max_sentence_words is None
    with pytest.raises(InputError, match="paper, byod-code"):
        SelfCheckArgs.from_config({"models": "m", "negation-rule": "code"})
    ns = parse_args(["selfcheck", "--models", "m", "--out", "o", "--max-sentence-words", "0"])
    assert ("max_sentence_words", "must be at least 3, got 0") in SelfCheckArgs.from_cli(ns).problems()


def _two(metric, setting, ref_values, tgt_values, ref_extras=None, tgt_extras=None):
    rows = []
    for model, values, extras in (("ref", ref_values, ref_extras), ("tgt", tgt_values, tgt_extras)):
        rows += [{**r, "model": model} for r in _ex(metric, setting, values, extras)]
    return rows


def test_paired_gaps_are_means_of_per_text_differences_with_a_t_interval():
    """Two models' tokenization JSDs on the same six texts: the texts vary much more than the
    models differ, so the paired interval is far narrower than the two scores' own."""
    ref = [0.10, 0.30, 0.05, 0.40, 0.20, 0.15]
    tgt = [v + d for v, d in zip(ref, (0.02, 0.03, 0.01, 0.02, 0.025, 0.015))]
    args = _args(models="ref,tgt", metrics="tokenization", no_ablations=True)
    res = SelfCheckResult(args, [("tokenization", "stride=3", True)], _two("tokenization", "stride=3", ref, tgt))
    got = {(e.subject, e.key): e for e in res.headline().estimates}
    assert ("ref", "tokenization_gap") not in got
    gap = got[("tgt", "tokenization_gap")]
    d = np.array(tgt) - np.array(ref)
    from scipy import stats

    half = stats.t.ppf(0.975, 5) * d.std(ddof=1) / math.sqrt(6)
    assert gap.value == pytest.approx(d.mean()) and gap.n == 6
    assert (gap.low, gap.high) == pytest.approx((d.mean() - half, d.mean() + half), abs=1e-12)
    assert gap.interval == "95 % paired t-interval over texts (n − 1 df)"
    own = got[("tgt", "tokenization")], got[("ref", "tokenization")]
    assert gap.low > 0 and own[0].low < own[1].high  # the own intervals overlap; the paired gap excludes 0


def test_paired_gaps_of_the_median_and_of_the_normalised_negation_score():
    from perturblab.studies.selfcheck.paired import median_difference, paired_differences

    ref, tgt = [0.1, 0.2, 0.3, 0.4, 0.5], [0.2, 0.3, 0.4, 0.5, 0.6]
    value, low, high, n = median_difference(np.array(tgt), np.array(ref))
    assert value == pytest.approx(0.1) and n == 5 and low <= 0.1 <= high
    assert (low, high) == pytest.approx((0.1, 0.1))  # every resample moves both medians by 0.1
    extras = (lambda vals: [{"logppl_x": 0.0, "logppl_perturbed": v} for v in vals])
    rows = (_two("negation", "not", [0.5, 0.1, 0.3, 0.7], [0.6, 0.3, 0.3, 0.9], extras([0.5, 0.1, 0.3, 0.7]),
                 extras([0.6, 0.3, 0.3, 0.9]))
            + _two("negation", "benign", [-0.2, 0.4, 0.0], [-0.1, 0.4, 0.1]))
    from perturblab.studies.selfcheck.result import _scores

    def scores(metric, setting, rows, benign):
        return [name for name, _ in _scores(metric, setting, rows, benign, 0)]

    diffs = {d["metric"]: d for d in paired_differences(rows, ["ref", "tgt"], [("negation", "not", True),
                                                                             ("negation", "benign", False)], scores)}
    # Δ differences 0.1, 0.2, 0, 0.2 (mean 0.125); |Δ_benign| differences −0.1, 0, 0.1 (mean 0)
    assert diffs["negation_sensitivity"]["value"] == pytest.approx(0.125)
    assert diffs["negation_normalised"]["value"] == pytest.approx(0.125)
    se1, se2 = np.std([0.1, 0.2, 0, 0.2], ddof=1) / 2, np.std([-0.1, 0, 0.1], ddof=1) / math.sqrt(3)
    df = (se1 ** 2 + se2 ** 2) ** 2 / (se1 ** 4 / 3 + se2 ** 4 / 2)
    from scipy import stats

    half = stats.t.ppf(0.975, df) * math.hypot(se1, se2)
    assert (diffs["negation_normalised"]["low"], diffs["negation_normalised"]["high"]) == pytest.approx(
        (0.125 - half, 0.125 + half), abs=1e-12)
    assert diffs["negation_ppl_drops"]["value"] == 0.0 and "negation_benign_abs" not in diffs  # not a main unit
