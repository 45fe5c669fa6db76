"""The encoder-decoder backend (:class:`~perturblab.models.seq2seq.HFSeq2SeqLM`) on a tiny T5 built
from a config (no download): greedy generation against a hand-written decoding loop, batching,
seeded sampling, teacher-forced target scores against a manual forward pass and the model's own
loss, loading and routing by config, refused capabilities, and the generation-robustness study
end to end with resume."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch
from helpers.tiny_lm import SENTENCES, tiny_causal_model, tiny_tokenizer

from perturblab.errors import CapabilityError, InputError
from perturblab.models.lm import HFCausalLM, LanguageModel
from perturblab.models.lm_capabilities import check_metric_capabilities, require
from perturblab.models.lm_presets import language_model_capabilities, load_language_model
from perturblab.models.seq2seq import SEQ2SEQ_CAPABILITIES, HFSeq2SeqLM

PAD, EOS = 0, 1
PROMPTS = ["Paris is the capital of France.", "The cat slept.", SENTENCES[4], "Water boils at one hundred degrees.",
           SENTENCES[9], "April"]


def t5_tokenizer(vocab_size: int = 300):
    """A byte-level BPE tokenizer laid out like T5's: ``<pad>`` = 0, ``</s>`` = 1 (appended to every
    encoded text), ``<unk>`` = 2."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(SENTENCES * 3, trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", EOS)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


def tiny_t5(vocab_size: int, seed: int = 0):
    """A 2-layer T5 (d_model 32, 4 heads) with random weights drawn after ``torch.manual_seed(seed)``;
    ``initializer_factor=3`` makes its outputs vary with the input."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=vocab_size, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                   initializer_factor=3.0, pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD)
    return T5ForConditionalGeneration(cfg).eval()


@pytest.fixture(scope="module")
def tok():
    return t5_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_t5(len(tok))


@pytest.fixture(scope="module")
def lm(model, tok, torch_one_thread):
    return HFSeq2SeqLM(model, tok, name="tiny-t5")


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory, model, tok):
    d = tmp_path_factory.mktemp("t5")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def greedy_by_hand(model, tok, prompt: str, max_new_tokens: int) -> list[int]:
    """Greedy decoding written out: the full forward pass on the growing decoder input, argmax of
    the last position, stop at ``</s>``; returns the generated ids (no start token, no ``</s>``)."""
    enc = torch.tensor([tok(prompt)["input_ids"]])
    dec = [PAD]
    with torch.no_grad():
        for _ in range(max_new_tokens):
            nxt = int(model(input_ids=enc, decoder_input_ids=torch.tensor([dec])).logits[0, -1].argmax())
            if nxt == EOS:
                break
            dec.append(nxt)
    return dec[1:]


def test_greedy_generation_equals_a_hand_written_loop(lm, model, tok):
    assert tok("Hello")["input_ids"][-1] == EOS  # the encoder input ends with </s>, like T5's
    for n in (1, 4, 12):
        want = [tok.decode(greedy_by_hand(model, tok, p, n), skip_special_tokens=True) for p in PROMPTS]
        assert lm.generate(PROMPTS, max_new_tokens=n) == want
    ids = [greedy_by_hand(model, tok, p, 12) for p in PROMPTS]
    assert max(len(x) for x in ids) == 12  # the length limit binds for some prompts ...
    assert len({tuple(x) for x in ids}) >= 4  # ... and the outputs depend on the input


def test_bart_layout_decoder_starts_with_end_of_sequence_and_forced_end(tok, torch_one_thread):
    """BART starts decoding from ``</s>`` itself and forces ``</s>`` as the last token: the start
    token is not mistaken for the end of the output, and the forced end is kept."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    cfg = BartConfig(vocab_size=len(tok), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                     init_std=0.5, pad_token_id=PAD, bos_token_id=2, eos_token_id=EOS, decoder_start_token_id=EOS,
                     forced_eos_token_id=EOS)
    bart = BartForConditionalGeneration(cfg).eval()
    lm = HFSeq2SeqLM(bart, tok, batch_size=4)
    assert lm.max_length == 64 and HFSeq2SeqLM(bart, tok, max_length=1000).max_length == 64
    n = 6
    want = []
    with torch.no_grad():
        for p in PROMPTS:
            dec = [EOS]
            for step in range(n):
                logits = bart(input_ids=torch.tensor([tok(p)["input_ids"]]), decoder_input_ids=torch.tensor([dec])).logits
                nxt = EOS if step == n - 1 else int(logits[0, -1].argmax())  # the forced end
                if nxt == EOS:
                    break
                dec.append(nxt)
            want.append(tok.decode(dec[1:], skip_special_tokens=True))
    assert lm.generate(PROMPTS, max_new_tokens=n) == want
    assert sum(len(w) > 0 for w in want) >= 4 and len(set(want)) >= 3
    with pytest.raises(InputError, match="exceed the 64 decoder positions"):
        lm.generate(PROMPTS[:1], max_new_tokens=64)


def test_batched_generation_equals_one_at_a_time(model, tok, torch_one_thread):
    batched = HFSeq2SeqLM(model, tok, batch_size=4)
    single = HFSeq2SeqLM(model, tok, batch_size=1)
    widths = {len(tok(p)["input_ids"]) for p in PROMPTS}
    assert len(widths) == len(PROMPTS)  # every batch pads
    assert batched.generate(PROMPTS, max_new_tokens=10) == single.generate(PROMPTS, max_new_tokens=10)
    # batch_tokens also splits batches, without changing results
    small = HFSeq2SeqLM(model, tok, batch_tokens=30)
    assert small.generate(PROMPTS, max_new_tokens=10) == single.generate(PROMPTS, max_new_tokens=10)


def test_seeded_sampling_is_reproducible_and_leaves_the_global_rng_alone(lm):
    state = torch.get_rng_state()
    a = lm.generate(PROMPTS, max_new_tokens=8, sample=True, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    assert lm.generate(PROMPTS, max_new_tokens=8, sample=True, seed=3) == a
    assert lm.generate(PROMPTS, max_new_tokens=8, sample=True, seed=4) != a
    assert a != lm.generate(PROMPTS, max_new_tokens=8)  # sampling is not greedy decoding
    hot = lm.generate(PROMPTS, max_new_tokens=8, sample=True, seed=3, temperature=5.0)
    assert hot != a


def test_generation_settings_of_a_checkpoint_do_not_change_greedy_decoding(model, tok, torch_one_thread):
    import copy

    plain = HFSeq2SeqLM(model, tok).generate(PROMPTS, max_new_tokens=6)
    beamy = copy.deepcopy(model)
    beamy.generation_config.num_beams = 4
    beamy.generation_config.no_repeat_ngram_size = 2
    beamy.generation_config.min_length = 5
    assert HFSeq2SeqLM(beamy, tok).generate(PROMPTS, max_new_tokens=6) == plain


def test_generation_errors(lm):
    with pytest.raises(InputError, match="max_new_tokens"):
        lm.generate(["a"], max_new_tokens=0)
    with pytest.raises(InputError, match="temperature"):
        lm.generate(["a"], sample=True, temperature=0)
    with pytest.raises(InputError, match="single string"):
        lm.generate("a text")
    short = HFSeq2SeqLM(lm.model, lm.tokenizer, max_length=5)
    with pytest.raises(InputError, match=r"prompts\[0\] has \d+ tokens, longer than the encoder input limit"):
        short.generate([SENTENCES[0]])


def test_target_logprobs_equal_a_manual_forward_pass_and_the_model_loss(lm, model, tok):
    sources = [SENTENCES[2], "The cat slept.", SENTENCES[6]]
    targets = ["Paris is in France.", "A cat", "Water boils."]
    got = lm.target_logprobs(sources, targets)
    single = HFSeq2SeqLM(model, tok, batch_size=1).target_logprobs(sources, targets)
    for s, t, lp, lp1 in zip(sources, targets, got, single):
        y = tok(t, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([tok(s)["input_ids"]]),
                           decoder_input_ids=torch.tensor([[PAD] + y[:-1]])).logits[0]
        want = torch.log_softmax(logits.double(), -1)[torch.arange(len(y)), torch.tensor(y)].numpy()
        assert lp.dtype == np.float64 and lp.shape == (len(y),)
        # float32 forward passes: the error of a log-probability grows with its magnitude (about 1e-6
        # relative across batchings and padding, seen up to 1.3e-6 at -17.4), so tolerances are relative
        np.testing.assert_allclose(lp, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lp1, lp, rtol=1e-5, atol=1e-6)  # batching does not change the scores
        # the model's own teacher-forced loss (it shifts the labels itself) ends with </s>
        full = lm.target_logprobs([s], [t], with_eos=True)[0]
        with torch.no_grad():
            loss = model(input_ids=torch.tensor([tok(s)["input_ids"]]), labels=torch.tensor([y + [EOS]])).loss
        assert full.shape == (len(y) + 1,)
        np.testing.assert_allclose(full[:-1], lp, rtol=1e-5, atol=1e-6)
        assert -full.mean() == pytest.approx(float(loss), rel=1e-5, abs=1e-6)
    ids = tok("A cat", add_special_tokens=False)["input_ids"]
    np.testing.assert_allclose(lm.target_logprobs(["The cat slept."], [ids])[0], got[1], atol=1e-4)
    with pytest.raises(InputError, match="one target per source"):
        lm.target_logprobs(sources, targets[:2])
    with pytest.raises(InputError, match="no tokens"):
        lm.target_logprobs(["a"], [""])


def test_unsupported_methods_raise_capability_error(lm):
    assert lm.capabilities == SEQ2SEQ_CAPABILITIES == frozenset({"encode", "decode", "tokenizer", "generate"})
    assert isinstance(lm, LanguageModel)
    for call in (lambda: lm.token_logprobs(["a text"]), lambda: lm.next_token_logprobs(["a text"]),
                 lambda: lm.span_logprobs(["a text"], [0])):
        with pytest.raises(CapabilityError, match="tiny-t5 cannot give .*seq2seq models serve generation studies only"):
            call()
    with pytest.raises(CapabilityError, match="tiny-t5 cannot be used for perplexity"):
        require(lm, {"token_logprobs"}, purpose="perplexity")
    require(lm, {"generate", "encode"}, purpose="generation")  # no error
    ids = lm.encode("The cat slept.")
    assert lm.decode(ids) == "The cat slept." and EOS not in ids


def test_fingerprint_follows_weights_and_tokenizer(lm, model, tok):
    assert HFSeq2SeqLM(model, tok).fingerprint == lm.fingerprint
    assert HFSeq2SeqLM(tiny_t5(len(tok), seed=1), tok).fingerprint != lm.fingerprint
    other_tok = t5_tokenizer(vocab_size=290)
    assert HFSeq2SeqLM(tiny_t5(len(tok)), other_tok).fingerprint != lm.fingerprint
    assert len(lm.fingerprint) >= 8 and lm.vocab_size == len(tok) and lm.max_length == 512
    assert HFSeq2SeqLM(model, tok, max_length=1024).max_length == 1024  # relative positions: no cap


def test_loading_routes_encoder_decoder_directories(t5_dir, lm, tmp_path, torch_one_thread):
    loaded = load_language_model(str(t5_dir), batch_size=2)
    assert type(loaded) is HFSeq2SeqLM and loaded.batch_size == 2 and loaded.name == str(t5_dir)
    assert loaded.generate(PROMPTS[:3], max_new_tokens=6) == lm.generate(PROMPTS[:3], max_new_tokens=6)
    assert language_model_capabilities(str(t5_dir)) == SEQ2SEQ_CAPABILITIES
    causal_dir = tmp_path / "causal"
    tiny_causal_model(len(tiny_tokenizer())).save_pretrained(causal_dir)
    tiny_tokenizer().save_pretrained(causal_dir)
    causal = load_language_model(str(causal_dir))
    assert type(causal) is HFCausalLM
    assert language_model_capabilities(str(causal_dir)) == causal.capabilities
    with pytest.raises(InputError, match="not an encoder-decoder"):
        HFSeq2SeqLM(str(causal_dir))


def test_hub_ids_are_routed_by_their_config(t5_dir, monkeypatch, torch_one_thread):
    """A hub id whose config is an encoder-decoder gives an HFSeq2SeqLM (the hub is simulated by
    redirecting the from_pretrained calls of that id to the local copy)."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    hub_id = "tiny-org/tiny-t5"
    for cls in (AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer):
        original = cls.from_pretrained.__func__

        def redirected(klass, name, *args, _original=original, **kw):
            return _original(klass, str(t5_dir) if name == hub_id else name, *args, **kw)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(redirected))
    loaded = load_language_model(hub_id)
    assert type(loaded) is HFSeq2SeqLM and loaded.name == hub_id


def test_studies_of_scores_refuse_a_seq2seq_model_before_any_work(t5_dir):
    from perturblab.studies.selfcheck.study import METRIC_NEEDS

    with pytest.raises(CapabilityError, match=r"selfcheck cannot run as configured:\n  t5 cannot compute"):
        check_metric_capabilities({"t5": language_model_capabilities(str(t5_dir))}, METRIC_NEEDS,
                                  list(METRIC_NEEDS), study="selfcheck")


class CountingLM:
    """Passes ``fingerprint`` and ``generate`` through to a model and counts the prompts generated."""

    def __init__(self, lm: HFSeq2SeqLM) -> None:
        self.lm, self.prompts, self.calls = lm, 0, 0
        self.fingerprint = lm.fingerprint

    def generate(self, prompts, **kw):
        self.calls += 1
        self.prompts += len(prompts)
        return self.lm.generate(prompts, **kw)


def test_generation_study_end_to_end_with_resume(lm, tmp_path):
    from perturblab.core.entry import run
    from perturblab.studies.robustness.config import GenerationArgs
    from perturblab.studies.robustness.generation import GenerationStudy

    def run_generation_robustness(args, out, models):
        result = run(GenerationStudy(args, models=models, progress=False), out, quiet=True)
        result.save(out)
        return result.rows

    data = tmp_path / "pairs.csv"
    with data.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "reference"])
        for s in SENTENCES[:4]:
            w.writerow([s + " " + SENTENCES[-1], s])
    counting = CountingLM(lm)
    cfg = GenerationArgs(models="t5", data=str(data), perturbations="drop_first,change_char", trials=2,
                         n=4, max_new_tokens=6, n_boot=50, prompt="summarize: {source}")
    rows = run_generation_robustness(cfg, tmp_path / "out", models={"t5": counting})
    assert len(rows) == (1 + 2) * 3  # drop_first once, change_char twice, three ROUGE metrics
    assert all(0 <= r["clean"] <= 1 and 0 <= r["perturbed"] <= 1 and r["model"] == "t5" for r in rows)
    assert counting.prompts == 4 * (1 + 1 + 2)  # clean, drop_first, two change_char draws
    # the stored clean generations are the model's own, cut at the first line break
    examples = list(csv.DictReader((tmp_path / "out" / "examples.csv").open()))
    clean = [e["generation"] for e in examples if e["setting"] == "clean"]
    direct = lm.generate([f"summarize: {e['source']}" for e in examples if e["setting"] == "clean"], max_new_tokens=6)
    assert clean == [g.strip().split("\n", 1)[0].strip() for g in direct]
    for name in ("results.json", "summary.json", "table.md", "generation_heatmap_rouge1.png"):
        assert (tmp_path / "out" / name).is_file()
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == rows
    made = (counting.calls, counting.prompts)
    again = run_generation_robustness(cfg, tmp_path / "out", models={"t5": counting})
    assert again == rows and (counting.calls, counting.prompts) == made  # resumed: nothing generated again
