"""ApiLanguageModel against a real HTTP server on 127.0.0.1 that serves a real (tiny) causal LM as an
OpenAI-compatible completions endpoint: echo/logprobs answers carry the served model's own token
log-probs (tokens, text_offset, a null first log-prob), completions its greedy or seeded generation.
The API model must reproduce the local model's numbers and generations through faults, a study on
it must score like the local model, unsupported metrics must be refused before any request, and
the API key must never be written anywhere."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter

import numpy as np
import pytest
import torch

pytest.importorskip("httpx")
torch = pytest.importorskip("torch")

from helpers.completions import CompletionsServer  # noqa: E402
from helpers.tiny_lm import SENTENCES, tiny_lm  # noqa: E402

from perturblab.data.corpus import Corpus  # noqa: E402
from perturblab.errors import CapabilityError, InputError  # noqa: E402
from perturblab.models.api_client import (ApiClient, ApiConfig, default_api_key_env,  # noqa: E402
                                          parse_api_spec)
from perturblab.models.api_lm import ApiLanguageModel  # noqa: E402
from perturblab.models.lm import CAPABILITIES, HFCausalLM, require  # noqa: E402
from perturblab.models.lm_presets import language_model_capabilities, load_language_model  # noqa: E402
from perturblab.core.entry import run  # noqa: E402
from perturblab.studies.selfcheck.config import SelfCheckArgs  # noqa: E402
from perturblab.studies.selfcheck.study import METRIC_NEEDS, METRICS, SelfCheckStudy  # noqa: E402

KEY = "sk-test-SECRET-api-lm-0123456789"
TEXTS = SENTENCES[:6] + ["Hi there.", "A longer sentence, with commas; and a semicolon, that goes on for a while."]
PROMPTS = ["The old bridge was", "Children were playing", "Water boils at", "She said the"]


#: tiny models run fastest on one thread (and far faster when the CPUs are shared)
pytestmark = pytest.mark.usefixtures("torch_one_thread")


def serving(lm: HFCausalLM, *, echo: bool = True, seen: list | None = None, shifted: bool = False):
    """``respond`` for CompletionsServer answering from ``lm`` like an OpenAI legacy completions API
    (per token its log-prob and the top-1 alternative); ``shifted`` reports beside every echoed
    token the distribution after it, as llama-cpp-python's server does."""
    lock = threading.Lock()

    def respond(body):
        prompt, n_new = body["prompt"], int(body["max_tokens"])
        with lock:  # one forward at a time
            if seen is not None:
                seen.append(body)
            if body.get("echo") and "logprobs" in body:
                if not echo:  # an endpoint that ignores echo: only the completion's tokens
                    nxt = lm.next_token_logprobs([prompt])[0]
                    tok = int(nxt.argmax())
                    return {"choices": [{"text": lm.decode([tok]), "logprobs": {
                        "tokens": [lm.decode([tok])], "token_logprobs": [float(nxt[tok])],
                        "text_offset": [len(prompt)]}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
                ids = lm.encode(prompt)
                pieces = [lm.decode([t]) for t in ids]
                assert "".join(pieces) == prompt  # byte-level BPE on ASCII text: offsets are exact
                tokens = [lm.decode([t]) for t in lm.prefix] + pieces
                offsets = [0] * len(lm.prefix) + list(np.cumsum([0] + [len(p) for p in pieces[:-1]]).tolist())
                gen: list[int] = []
                for _ in range(n_new):  # the generated token(s) follow the prompt, greedily
                    gen.append(int(lm.next_token_logprobs([ids + gen])[0].argmax()))
                seq = lm.prefix + ids + gen
                tokens += [lm.decode([t]) for t in gen]
                offsets += [len(prompt)] * len(gen)
                with torch.no_grad():  # row r: the distribution after seq[r]
                    rows = torch.log_softmax(lm.model(torch.tensor([seq])).logits[0].double(), -1).numpy()
                at = [rows[r if shifted else r - 1] for r in range(1, len(seq))]
                values = [None] + [float(d[t]) for d, t in zip(at, seq[1:])]  # the first has no context
                if not shifted:  # the prompt's as the model scores a text
                    values[1: len(seq) - len(gen)] = lm.token_logprobs([prompt])[0].tolist()
                tops = [None] + [{lm.decode([int(d.argmax())]): float(d.max()), tok: v}
                                 for d, tok, v in zip(at, tokens[1:], values[1:])]
                return {"choices": [{"text": prompt, "logprobs": {"tokens": tokens, "token_logprobs": values,
                                                                 "text_offset": offsets, "top_logprobs": tops}}],
                        "usage": {"prompt_tokens": len(lm.prefix) + len(ids), "completion_tokens": n_new}}
            sample = float(body.get("temperature", 1.0)) > 0
            kw = dict(sample=True, seed=int(body["seed"]), temperature=float(body["temperature"])) if sample else {}
            text = lm.generate([prompt], max_new_tokens=n_new, **kw)[0]
            return {"choices": [{"text": text, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": len(lm.encode(prompt)), "completion_tokens": n_new}}

    return respond


def api_model(server, *, key_env=None, timeout=1.0, **kw) -> ApiLanguageModel:
    client = ApiClient(ApiConfig(base_url=server.url, model="tiny", api_key_env=key_env, timeout=timeout,
                                 max_retries=4, backoff_base=0.01, backoff_max=0.05, concurrency=3), seed=0)
    return ApiLanguageModel(client, **kw)


@pytest.fixture(scope="module")
def local():
    return tiny_lm()


def _corpus() -> Corpus:
    docs = [SENTENCES[0:4], SENTENCES[4:7], SENTENCES[7:10], SENTENCES[1:5]]
    return Corpus([s for d in docs for s in d], [i for i, d in enumerate(docs) for _ in d], name="hand")


BENIGN = Corpus(["The sky was grey over the little town.", "My brother is a teacher in the city.",
                 "The soup was far too hot to eat.", "Those shoes were on sale last week."], [0, 0, 1, 1], "benign")


# ------------------------------------------------------------------ numbers and generations
@pytest.mark.parametrize("bos", [False, True])
def test_token_logprobs_and_generations_equal_the_local_model_through_faults(bos):
    local = tiny_lm(bos=bos)
    plan = {TEXTS[1]: ["429"], TEXTS[2]: ["500", "malformed"], TEXTS[3]: ["timeout"],
            PROMPTS[0]: ["malformed"], PROMPTS[1]: ["503", "429"]}
    with CompletionsServer(plan=plan, respond=serving(local), hang=2.0) as server:
        api = api_model(server)
        got = api.token_logprobs(TEXTS)
        gens = api.generate(PROMPTS, max_new_tokens=6)
        sampled = api.generate(PROMPTS[:2], max_new_tokens=5, sample=True, seed=7, temperature=0.8)
    want = local.token_logprobs(TEXTS)  # batched, as a study computes them
    for g, w, text in zip(got, want, TEXTS):
        assert g.dtype == np.float64 and g.shape == w.shape  # the same scored tokens (first rule included)
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(g, local.token_logprobs([text])[0])  # what was served, bit for bit
    assert [len(g) for g in got] == [len(local.encode(t)) - (0 if bos else 1) for t in TEXTS]
    assert gens == local.generate(PROMPTS, max_new_tokens=6) and all(gens)
    assert sampled == [local.generate([p], max_new_tokens=5, sample=True, seed=7, temperature=0.8)[0]
                       for p in PROMPTS[:2]]
    kinds = Counter(f.kind for f in api.faults)
    assert kinds == Counter({"status": 4, "malformed": 2, "timeout": 1})
    assert sorted(f.status for f in api.faults if f.kind == "status") == [429, 429, 500, 503]
    probe = 1  # the alignment probe before the first scoring request, four greedy tokens
    assert api.usage.requests == probe + len(TEXTS) + len(PROMPTS) + 2 and api.usage.retries == 7
    assert api.usage.failures == 0 and api.usage.completion_tokens == 4 * probe + 6 * len(PROMPTS) + 5 * 2


@pytest.mark.parametrize("bos", [False, True])
def test_a_server_reporting_each_tokens_log_prob_after_it_is_refused(bos):
    """llama-cpp-python's server (0.3.x) reports beside each echoed token the distribution after it:
    the alignment probe's greedy tokens are then not the best of their reported distributions."""
    local = tiny_lm(bos=bos)
    for score_max_tokens in (0, 1):
        seen: list = []
        with CompletionsServer(respond=serving(local, shifted=True, seen=seen)) as server:
            with pytest.raises(CapabilityError, match=r"misaligned: after '1, 2, 3, 4, 5,' it generated .* greedily"):
                api_model(server, score_max_tokens=score_max_tokens).token_logprobs(TEXTS[:2])
        assert [b["prompt"] for b in seen] == [ApiLanguageModel.PROBE]  # nothing scored
    with CompletionsServer(respond=serving(local, seen=seen)) as server:  # aligned: the same probe passes
        api = api_model(server, score_max_tokens=1)
        for g, w in zip(api.token_logprobs(TEXTS[:2]), local.token_logprobs(TEXTS[:2])):
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-6)
        api.token_logprobs(TEXTS[2:3])
    prompts = [b["prompt"] for b in seen[1:]]
    assert prompts[0] == ApiLanguageModel.PROBE and sorted(prompts[1:]) == sorted(TEXTS[:3])  # probed once


def test_score_max_tokens_1_drops_the_generated_token(local):
    seen: list = []
    with CompletionsServer(respond=serving(local, seen=seen)) as server:
        got = api_model(server, score_max_tokens=1).token_logprobs(TEXTS[:3] + TEXTS[:1])
    assert seen[0]["prompt"] == ApiLanguageModel.PROBE and seen[0]["max_tokens"] == 4  # the alignment probe
    seen = seen[1:]
    assert all(b["echo"] is True and b["max_tokens"] == 1 and b["temperature"] == 0 for b in seen)
    assert len(seen) == 3  # a repeated text is scored once
    for g, w in zip(got, local.token_logprobs(TEXTS[:3] + TEXTS[:1])):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-6)


def test_what_an_api_cannot_give_raises_a_capability_error(local):
    with CompletionsServer(respond=serving(local)) as server:
        api = api_model(server, name="api:tiny")
        for call in (lambda: api.next_token_logprobs(TEXTS[:1]), lambda: api.span_logprobs(TEXTS[:1], [0]),
                     lambda: api.encode("x"), lambda: api.decode([1]), lambda: api.token_logprobs([[5, 6, 7]])):
            with pytest.raises(CapabilityError, match="api:tiny cannot give .*use a local model"):
                call()
        with pytest.raises(CapabilityError, match="full next-token distributions over the vocabulary"):
            require(api, {"next_token_logprobs"}, purpose="the long-range context metric")
        require(local, {"next_token_logprobs", "span_logprobs", "tokenizer"}, purpose="everything")
        with pytest.raises(InputError, match="single string"):
            api.token_logprobs("a text")
        assert sum(server.counts.values()) == 0  # refused locally, nothing sent
    assert api.capabilities == {"token_logprobs", "generate"} and HFCausalLM.capabilities == set(CAPABILITIES)


def test_endpoints_without_prompt_logprobs_give_a_clear_error(local):
    def no_logprobs(body):
        return {"choices": [{"text": " yes", "logprobs": None}], "usage": {}}

    with CompletionsServer(respond=no_logprobs) as server:
        with pytest.raises(CapabilityError, match="no per-token log-probabilities of a prompt"):
            api_model(server).token_logprobs(TEXTS[:2])
    with CompletionsServer(respond=serving(local, echo=False)) as server:  # echo ignored
        with pytest.raises(CapabilityError, match="without any prompt token"):
            api_model(server).token_logprobs(TEXTS[:2])
    with CompletionsServer(plan={TEXTS[0]: ["400"]}, respond=serving(local)) as server:  # echo refused
        with pytest.raises(CapabilityError, match="refused a prompt-scoring request.*HTTP 400"):
            api_model(server).token_logprobs(TEXTS[:1])


# ------------------------------------------------------------------ studies
def test_selfcheck_negation_scores_like_the_local_model(tmp_path, local):
    opts = dict(corpus="hand", n=20, seed=1, metrics="negation", chunk=4)
    corpus = _corpus()
    runs = {}
    with CompletionsServer(plan={SENTENCES[0]: ["429", "500"]}, respond=serving(local)) as server:
        api = api_model(server)
        for name, lm in (("local", local), ("api", api)):
            study = SelfCheckStudy(SelfCheckArgs(models=name, **opts), models={name: lm}, corpus=corpus,
                                   benign=BENIGN, progress=False)
            result = run(study, tmp_path / name, quiet=True)
            runs[name] = (result.rows, result.examples)
    (rows_l, ex_l), (rows_a, ex_a) = runs["local"], runs["api"]
    assert len(rows_l) == len(rows_a) == 4 and ex_l and len(ex_l) == len(ex_a)  # 3 scores of "not", 1 benign
    for a, b in zip(rows_l, rows_a):
        assert (a["metric"], a["setting"], a["n"]) == (b["metric"], b["setting"], b["n"])
        assert b["value"] == pytest.approx(a["value"], abs=1e-6) and b["stderr"] == pytest.approx(a["stderr"], abs=1e-6)
    for a, b in zip(ex_l, ex_a):
        assert (a["text"], a["perturbed"]) == (b["text"], b["perturbed"])
        assert b["value"] == pytest.approx(a["value"], abs=1e-6)
    assert [f.status for f in api.faults] == [429, 500]


def test_unsupported_metrics_are_refused_before_any_request(tmp_path, local):
    with CompletionsServer(respond=serving(local)) as server:
        api = api_model(server, name="api:tiny")
        with pytest.raises(CapabilityError) as err:
            SelfCheckStudy(SelfCheckArgs(models="api:tiny,local", metrics="negation,word_order,entropy"),
                           models={"api:tiny": api, "local": local}, corpus=_corpus(), benign=_corpus())
        msg = str(err.value)
        assert "api:tiny cannot compute 'word_order' (needs full next-token distributions over the vocabulary)" in msg
        assert "'entropy' (needs full next-token distributions" in msg and "metrics it supports: negation" in msg
        assert not any(line.strip().startswith("local ") for line in msg.splitlines())  # the local model can
        spec = f"api:tiny@{server.url}"  # named by spec: refused without loading it
        with pytest.raises(CapabilityError, match="cannot compute 'long_range'"):
            SelfCheckStudy(SelfCheckArgs(models=spec, metrics="long_range"), corpus=_corpus())
        from perturblab.studies.scope.config import LMScopeArgs
        from perturblab.studies.scope.lm import LMScopeStudy

        with pytest.raises(CapabilityError, match=r"(?s)LM SCoPE.*api:tiny cannot compute 'gap_iid_acc'.*"
                                                  r"metrics it supports: none.*ApiClassifier"):
            LMScopeStudy(LMScopeArgs(reference="local", targets="api:tiny"), models={"local": local, "api:tiny": api},
                         sentences=TEXTS)
        assert sum(server.counts.values()) == 0
    assert not any(tmp_path.iterdir())  # nothing written either


def test_metric_needs_are_exactly_what_scoring_calls(tmp_path, local):
    """Each metric runs on a model that exposes only the capabilities METRIC_NEEDS declares (so they
    suffice) and calls every one of them (so none is declared needlessly)."""

    class Only:
        def __init__(self, inner, caps):
            self.inner, self.capabilities, self.used = inner, frozenset(caps), set()
            self.name, self.fingerprint = inner.name, inner.fingerprint
            self.vocab_size, self.max_length = inner.vocab_size, inner.max_length

        def __getattr__(self, name):
            # one pass that answers both questions (lm.generate_with_next) uses both capabilities
            for need in ({"generate", "next_token_logprobs"} if name == "generate_with_next" else {name}):
                if need in CAPABILITIES:
                    assert need in self.capabilities, f"{need} is called but not declared"
                    self.used.add(need)
            return getattr(self.inner, name)

    for metric in METRICS:
        model = Only(local, METRIC_NEEDS[metric])
        study = SelfCheckStudy(SelfCheckArgs(models="m", corpus="hand", n=3, metrics=metric, no_ablations=True,
                                             max_new_tokens=3), models={"m": model},
                               corpus=_corpus(), benign=BENIGN, progress=False)
        assert run(study, tmp_path / metric, quiet=True).rows, metric
        assert model.used == METRIC_NEEDS[metric], metric


# ------------------------------------------------------------------ specs and the key
def test_spec_strings(monkeypatch):
    assert parse_api_spec("api:gpt-3.5-turbo-instruct@https://api.openai.com/v1") == \
        ("gpt-3.5-turbo-instruct", "https://api.openai.com/v1")
    assert parse_api_spec("api:org/model:ft@2@http://127.0.0.1:8000/v1/") == \
        ("org/model:ft@2", "http://127.0.0.1:8000/v1")
    for bad in ("api:gpt", "api:@http://x", "gpt@https://x", "api:gpt@ftp://x"):
        with pytest.raises(InputError, match="api:MODEL@BASE_URL"):
            parse_api_spec(bad)
    with pytest.raises(InputError, match="api:MODEL@BASE_URL"):
        language_model_capabilities("api:no-url")
    monkeypatch.delenv("PERTURBLAB_API_KEY_ENV", raising=False)
    assert default_api_key_env() == "OPENAI_API_KEY"
    monkeypatch.setenv("PERTURBLAB_API_KEY_ENV", "MY_LLM_KEY")
    assert default_api_key_env() == "MY_LLM_KEY"
    assert language_model_capabilities("api:m@http://h/v1") == ApiLanguageModel.capabilities
    assert language_model_capabilities("smollm2-135m") == HFCausalLM.capabilities


def test_key_from_env_is_sent_and_never_written(tmp_path, monkeypatch, caplog, local):
    monkeypatch.setenv("PERTURBLAB_API_KEY_ENV", "MY_LLM_KEY")
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "not-this-one")
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="perturblab")  # configured: its records reach the capture
    plan = {SENTENCES[0]: ["429"], SENTENCES[2]: ["500", "malformed"]}
    with CompletionsServer(plan=plan, respond=serving(local)) as server:
        spec = f"api:tiny@{server.url}"
        api = load_language_model(spec, max_retries=3, backoff_base=0.01, max_length=512)
        assert isinstance(api, ApiLanguageModel) and api.name == spec and api.client.config.max_retries == 3
        assert api.max_length == 512 and api.usage.requests == 0  # nothing sent on loading
        study = SelfCheckStudy(SelfCheckArgs(models=spec, corpus="hand", n=20, metrics="negation"),
                               corpus=_corpus(), benign=BENIGN, progress=False)
        result = run(study, tmp_path / "out", quiet=True)  # loads the model from its spec
        result.save(tmp_path / "out")
        rows = result.rows
    assert server.auth == {f"Bearer {KEY}"} and rows and all(np.isfinite(r["value"]) for r in rows)
    assert "failed" in caplog.text  # the faults were logged ...
    written = [p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and spec.encode() in b"".join(written)
    texts = [caplog.text, repr(api), repr(api.client), repr(api.faults), json.dumps(rows)]
    assert not any(KEY in t for t in texts) and not any(KEY.encode() in b for b in written)  # ... the key nowhere


def test_an_api_model_defined_in_a_study_config_is_loaded_and_checked_by_name(tmp_path, monkeypatch, local):
    named = pytest.importorskip("perturblab.models.named")
    monkeypatch.setattr(named, "_DEFINED", {})
    monkeypatch.setenv("PERTURBLAB_API_KEY_ENV", "MY_LLM_KEY")
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    with CompletionsServer(respond=serving(local)) as server:
        named.define("gpt", named.check_definition("gpt", {"api": {"base_url": server.url, "model": "tiny"}}))
        assert language_model_capabilities("gpt") == ApiLanguageModel.capabilities
        with pytest.raises(CapabilityError, match="gpt cannot compute 'word_order'"):
            SelfCheckStudy(SelfCheckArgs(models="gpt", metrics="word_order"), corpus=_corpus())
        assert sum(server.counts.values()) == 0
        api = load_language_model("gpt")
        assert isinstance(api, ApiLanguageModel) and api.name == "gpt"
        np.testing.assert_array_equal(api.token_logprobs(TEXTS[:1])[0], local.token_logprobs(TEXTS[:1])[0])
    assert server.auth == {f"Bearer {KEY}"}


@pytest.mark.assets
def test_packaged_smollm2_served_over_http_scores_like_itself_through_faults():
    """The packaged SmolLM2 behind the local completions server: the API model's per-token
    log-probs and greedy generations are the served model's own, 429/500/503/malformed answers
    included, and every fault is recorded."""
    local = load_language_model("smollm2-135m")
    texts, prompts = TEXTS[:4], PROMPTS[:2]
    plan = {texts[0]: ["429"], texts[1]: ["500", "malformed"], texts[2]: ["503", "429"], prompts[0]: ["503"]}
    with CompletionsServer(plan=plan, respond=serving(local)) as server:
        api = api_model(server, timeout=60.0)  # timeouts are the tiny model's test: a loaded CPU is slow here
        got = api.token_logprobs(texts)
        gens = api.generate(prompts, max_new_tokens=5)
    for g, text in zip(got, texts):
        np.testing.assert_array_equal(g, local.token_logprobs([text])[0])
        assert len(g) == len(local.encode(text)) - 1  # SmolLM2 adds no start token: the first is unscored
    assert gens == [local.generate([p], max_new_tokens=5)[0] for p in prompts] and all(gens)
    assert Counter(f.kind for f in api.faults) == Counter({"status": 5, "malformed": 1})
    assert api.usage.failures == 0 and api.usage.requests == 1 + len(texts) + len(prompts)  # 1: the probe
