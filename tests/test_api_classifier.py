"""ApiClassifier against a real HTTP server on 127.0.0.1 that serves a local classifier as a
completions endpoint: log-prob answers reproduce the served model's probabilities, sampled answers
estimate them by mode frequency, and faults lose nothing."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

pytest.importorskip("httpx")

from conftest import CompletionsServer  # noqa: E402

from perturblab.errors import InputError  # noqa: E402
from perturblab.models.api import ApiClassifier  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig, ApiError  # noqa: E402

WORDS = {"negative": " Negative", "positive": " positive"}  # label -> answer token (case and space vary)


def serving(model, *, logprobs: bool = True, distractor: bool = True):
    """``respond`` for CompletionsServer: the first prompt line is the text; answers from ``model``."""

    def respond(body):
        text = body["prompt"].split("\n")[0]
        p = model.predict_proba([text])[0]
        usage = {"prompt_tokens": len(body["prompt"].split()), "completion_tokens": 1}
        if "logprobs" in body:
            if not logprobs:
                return {"choices": [{"text": WORDS[model.labels[int(p.argmax())]]}], "usage": usage}
            top = {WORDS[lab]: math.log(max(q, 1e-300)) for lab, q in zip(model.labels, p)}
            if distractor:
                top[" The"] = math.log(0.3)  # a token that names no label
            return {"choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}], "usage": usage}
        rng = np.random.default_rng(zlib.crc32(body["prompt"].encode()))
        draws = rng.choice(len(model.labels), size=body["n"], p=p)
        texts = [f"{WORDS[model.labels[k]]}." if i % 10 else " I am not sure" for i, k in enumerate(draws)]
        return {"choices": [{"text": t} for t in texts], "usage": usage}

    return respond


TEXTS = ["a good film", "a bad film", "great but awful", "movie", "awful awful great", "good good bad picture"]


def make(server, **kw):
    client = ApiClient(ApiConfig(base_url=server.url, model="lexicon", api_key_env=None, timeout=5.0,
                                 backoff_base=0.01, backoff_max=0.05, concurrency=3), seed=0)
    return ApiClassifier(client, ["negative", "positive"], **kw)


def test_logprobs_reproduce_the_served_probabilities_and_faults_lose_nothing(lexicon):
    first = TEXTS[0] + "\nQuestion: Is the sentiment of this text negative or positive?\nAnswer:"
    plan = {first: ["429", "malformed", "500"]}
    with CompletionsServer(plan=plan, respond=serving(lexicon)) as server:
        clf = make(server)
        got = clf.predict_proba(TEXTS)
    np.testing.assert_allclose(got, lexicon.predict_proba(TEXTS), rtol=1e-9, atol=1e-12)
    assert clf.mode == "auto" and clf.unmatched == 0
    assert clf.client.usage.requests == len(TEXTS) and clf.client.usage.retries == 3
    assert [f.kind for f in clf.client.faults] == ["status", "malformed", "status"]
    assert clf.prompt("x") == "x\nQuestion: Is the sentiment of this text negative or positive?\nAnswer:"


def test_sampling_estimates_probabilities_by_label_frequency(lexicon):
    with CompletionsServer(respond=serving(lexicon, logprobs=False)) as server:
        clf = make(server, n_samples=400)
        got = clf.predict_proba(TEXTS)  # auto: no log-probs in the first answers -> sampling
    assert clf.mode == "sample"
    want = lexicon.predict_proba(TEXTS)
    assert np.abs(got - want).max() < 0.1  # binomial s.e. <= 0.026 with 360 parsed answers
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    assert clf.unmatched == 40 * len(TEXTS)  # every 10th answer names no label
    sure = np.abs(want[:, 1] - 0.5) > 0.2
    assert (got.argmax(1) == want.argmax(1))[sure].all()


def test_logprobs_mode_without_logprobs_is_a_clear_error(lexicon):
    with CompletionsServer(respond=serving(lexicon, logprobs=False)) as server:
        clf = make(server, mode="logprobs")
        with pytest.raises(ApiError, match="no log-probabilities"):
            clf.predict_proba(TEXTS[:2])


def test_fingerprint_and_input_errors(lexicon):
    client = ApiClient(ApiConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env=None))
    a = ApiClassifier(client, ["neg", "pos"])
    b = ApiClassifier(client, ["neg", "pos"], template="Review: {text}\nSentiment:")
    assert a.fingerprint != b.fingerprint and a.predict_proba([]).shape == (0, 2)
    with pytest.raises(InputError, match="label word"):
        ApiClassifier(client, ["neg", "pos"], label_words=["bad"])
    with pytest.raises(InputError, match="differ"):
        ApiClassifier(client, ["neg", "pos"], label_words=["Bad", "bad"])
    with pytest.raises(InputError, match="text"):
        ApiClassifier(client, ["neg", "pos"], template="no slot")


def test_api_model_takes_part_in_a_scope_study_like_the_model_it_serves(tmp_path):
    """The SCoPE study with an API target that serves the reference itself: every metric equals the
    reference-against-itself values (Hard- and Soft-SCoPE 1, agreements 1)."""
    from test_study_scope import make_splits, models

    from perturblab.studies.scope import ScopeConfig, ScopeStudy

    ref = models()["ref"]
    with CompletionsServer(respond=serving(ref)) as server:
        client = ApiClient(ApiConfig(base_url=server.url, model="ref", api_key_env=None, timeout=5.0), seed=0)
        api = ApiClassifier(client, ["negative", "positive"])
        cfg = ScopeConfig(reference="ref", targets=["api", "ref"], capabilities=["typo"], n=30, trials=1, n_boot=50)
        rows = ScopeStudy(cfg, tmp_path / "scope", models={"ref": ref, "api": api}, splits=make_splits(),
                          progress=False).run()
    by_target = {r["target"]: r for r in rows}
    for metric in ("hard_scope", "soft_scope", "iid_agreement", "ood_agreement", "gap_iid_acc"):
        assert by_target["api"][metric] == pytest.approx(by_target["ref"][metric], abs=1e-9), metric
    assert by_target["api"]["hard_scope"] == pytest.approx(1.0) and by_target["api"]["soft_scope"] == pytest.approx(1.0)
    assert client.usage.requests > 0 and client.usage.failures == 0


def test_serving_a_packaged_model(tmp_path, monkeypatch):
    """The packaged Rotten-Tomatoes data and a TF-IDF model trained on it, served over HTTP."""
    from perturblab.errors import PerturblabError
    from perturblab.models.presets import load_classifier
    from perturblab.studies.inputs import labelled_split

    from perturblab.paths import assets_dir

    assets = assets_dir()  # the installed assets, before the data home moves to a temporary one
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "assets").symlink_to(assets, target_is_directory=True)
    try:
        train, test = labelled_split("rotten_tomatoes", 800, 60)
    except PerturblabError as e:  # assets not installed
        pytest.skip(f"packaged data unavailable: {e}")
    model = load_classifier("tfidf-lr", train)
    texts = [t.replace("\n", " ") for t in test.texts]
    with CompletionsServer(respond=serving(model)) as server:
        clf = make(server)
        got = clf.predict_proba(texts)
    np.testing.assert_allclose(got, model.predict_proba(texts), rtol=1e-9, atol=1e-12)
