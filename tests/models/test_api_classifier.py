"""ApiClassifier against a real HTTP server on 127.0.0.1 that serves a local classifier as a
completions endpoint: log-prob answers reproduce the served model's probabilities, sampled answers
estimate them by mode frequency, and faults lose nothing."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

pytest.importorskip("httpx")

from helpers.completions import CompletionsServer  # noqa: E402

from perturblab.errors import InputError  # noqa: E402
from perturblab.models.api import ApiClassifier  # noqa: E402
from perturblab.models.api_client import ApiClient, ApiConfig, ApiError  # noqa: E402
from helpers.completions import serving  # noqa: E402

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
    from helpers.lexicon import make_splits, models

    from perturblab.core.entry import run
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    ref = models()["ref"]
    with CompletionsServer(respond=serving(ref)) as server:
        client = ApiClient(ApiConfig(base_url=server.url, model="ref", api_key_env=None, timeout=5.0), seed=0)
        api = ApiClassifier(client, ["negative", "positive"])
        cfg = ScopeArgs(reference="ref", targets="api,ref", capabilities="typo", n=30, trials=1, n_boot=50)
        study = ScopeStudy(cfg, models={"ref": ref, "api": api}, splits=make_splits(), progress=False)
        rows = run(study, tmp_path / "scope").rows
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


# -- api: specs on the command line -----------------------------------------------------------------

KEY = "sk-test-SECRET-cli-0123456789"


def lexicon_logprobs(body):
    """A completions endpoint answering like the lexicon model: p(positive) 0.8 when "good" is in the text."""
    pos = "good" in body["prompt"].split("\n")[0]
    top = {" positive": math.log(0.8 if pos else 0.2), " negative": math.log(0.2 if pos else 0.8)}
    return {"choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}]}


def test_api_spec_loads_a_classifier_with_its_options(monkeypatch):
    from perturblab.data.examples import Dataset, Example
    from perturblab.models.resolve import load_model
    from perturblab.models.spec import ModelSpec

    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    train = Dataset([Example("a good film", 1), Example("a bad film", 0)], ["neg", "pos"], "toy")
    with CompletionsServer(respond=lexicon_logprobs) as server:
        spec = (f"lex=api:lexicon@{server.url}[api_key_env=PERTURBLAB_TEST_KEY,label_words=neg:negative|pos:positive,"
                "timeout=2.5,max_retries=1,concurrency=2,mode=logprobs]")
        clf = load_model(spec, "classifier", train=train)
        got = clf.predict_proba(["a good film", "a bad film"])
    assert isinstance(clf, ApiClassifier) and clf.name == "lex" and clf.label_words == ["negative", "positive"]
    assert clf.labels == ["neg", "pos"] and clf.mode == "logprobs"
    cfg = clf.client.config
    assert (cfg.model, cfg.base_url, cfg.api_key_env, cfg.timeout, cfg.max_retries, cfg.concurrency) == (
        "lexicon", server.url, "PERTURBLAB_TEST_KEY", 2.5, 1, 2)
    np.testing.assert_allclose(got, [[0.2, 0.8], [0.8, 0.2]], rtol=1e-12)
    assert server.auth == {f"Bearer {KEY}"} and clf.client.name == "lex"
    assert dict(ModelSpec.parse(f"api:m@{server.url}[label_words=no|yes]").options) == {"label_words": ("no", "yes")}


@pytest.mark.parametrize("spec,needle", [
    ("api:m@http://127.0.0.1:1/v1[api_key=sk-live-123456]", "secrets are never taken"),
    ("api:m@http://127.0.0.1:1/v1[token=sk-live-123456]", "secrets are never taken"),
    ("api:m@http://127.0.0.1:1/v1[api_key_env=sk-live-123456]", "NAME of an environment variable"),
    ("api:m@https://user:sk-live-123456@h.example/v1", "carries credentials"),
    ("api:m@https://h.example/v1?key=sk-live-123456", "carries credentials"),
    ("tfidf-lr[mode=sample]", "setting of api: models"),
    ("api:m@http://127.0.0.1:1/v1[batch_size=4]", "api_key_env"),
])
def test_api_spec_refuses_secrets_without_echoing_them(spec, needle):
    from perturblab.models.resolve import load_model
    from perturblab.models.spec import ModelSpec

    with pytest.raises(InputError, match=needle) as err:
        load_model(spec, "classifier")  # parsed first: no training split needed to be refused
    assert "sk-live-123456" not in str(err.value)
    if "api_key" in spec or "token" in spec:
        with pytest.raises(InputError):
            ModelSpec.parse(spec)


def test_api_spec_needs_the_named_key_variable(monkeypatch):
    from perturblab.data.examples import Dataset, Example
    from perturblab.models.resolve import load_model

    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    train = Dataset([Example("a", 1), Example("b", 0)], ["neg", "pos"], "toy")
    with pytest.raises(InputError, match="NO_SUCH_KEY_VAR, which is not set"):
        load_model("api:m@http://127.0.0.1:1/v1[api_key_env=NO_SUCH_KEY_VAR]", "classifier", train=train)
    with pytest.raises(InputError, match="not a language model"):
        load_model("api:m@http://127.0.0.1:1/v1[mode=sample]", "language_model")
    with pytest.raises(InputError, match="not as a encoder"):
        load_model("api:m@http://127.0.0.1:1/v1", "encoder")


def _files_text(root):
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_cli_api_classifier_faults_are_written_and_the_key_is_written_nowhere(tmp_path, monkeypatch, capsys, caplog,
                                                                             marker_csv):
    """A robustness study from the command line on an api: spec behind a proxy that reflects the
    request headers: first a 503 (retried) for every prompt, then (second run) a 401. The faults
    reach faults.json and a console line; the key reaches no file, log record, message or exception."""
    import logging

    from perturblab.cli import main

    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    data = marker_csv(tmp_path / "data.csv", 40)
    out_ok, out_bad = tmp_path / "ok", tmp_path / "bad"

    def argv(url, out):
        return ["robustness", "--models", f"lex=api:lexicon@{url}[api_key_env=PERTURBLAB_TEST_KEY,"
                "label_words=negative|positive,backoff_base=0.01,backoff_max=0.02]", "--data", str(data),
                "--perturbations", "random_typo", "--trials", "1", "--n-eval", "10", "--n-train", "10",
                "--n-boot", "20", "--out", str(out), "--quiet"]

    with CompletionsServer({"*": ["echo-headers:503"]}, respond=lexicon_logprobs) as server:
        assert main(argv(server.url, out_ok)) == 0
    assert server.auth == {f"Bearer {KEY}"}
    ok = capsys.readouterr()
    faults = json.loads((out_ok / "faults.json").read_text())
    n = sum(server.counts.values()) // 2  # every prompt: a 503, then the answer
    assert faults["total_faults"] == n > 0 and faults["models"]["lex"]["fault_counts"] == {"status 503": n}
    assert faults["models"]["lex"]["usage"]["requests"] == n
    assert all("[REDACTED]" in f["detail"] for f in faults["models"]["lex"]["faults"])
    assert f"API faults: {n} failed attempts (lex: {n} status 503 in {n} answered requests)" in ok.err

    with CompletionsServer({"*": ["echo-headers:401"]}, respond=lexicon_logprobs) as server:
        assert main(argv(server.url, out_bad)) == 2
    bad = capsys.readouterr()
    assert "error: " in bad.err and "HTTP 401" in bad.err and "stopped the batch" in bad.err
    # the batch stopped at the first 401; requests already in flight may have got theirs too
    assert re.search(r"API faults: (\d+) failed attempts? \(lex: \1 status 401 in 0 answered requests\)", bad.err)
    assert "Exception occurred" not in bad.err
    assert json.loads((out_bad / "faults.json").read_text())["models"]["lex"]["faults"][0]["status"] == 401

    files = _files_text(tmp_path)
    assert out_ok / "results.json" in files and out_bad / "faults.json" in files
    leaks = [p for p, b in files.items() if KEY.encode() in b or KEY[:14].encode() in b]
    assert leaks == []
    for text in (ok.out, ok.err, bad.out, bad.err, caplog.text, *(r.getMessage() for r in caplog.records)):
        assert KEY not in text and KEY[:14] not in text


def test_config_run_records_a_redacted_error_in_run_json(tmp_path, monkeypatch, capsys, marker_csv):
    """The config runner writes a failed study's error into run.json: reflected headers arrive redacted."""
    from perturblab.cli import main

    monkeypatch.setenv("PERTURBLAB_TEST_KEY", KEY)
    data = marker_csv(tmp_path / "data.csv", 40)
    with CompletionsServer({"*": ["echo-headers:401"]}) as server:
        (tmp_path / "run.yaml").write_text(f"""
models:
  lex:
    api: {{base_url: "{server.url}", model: lexicon, api_key_env: PERTURBLAB_TEST_KEY,
          label_words: [negative, positive], max_retries: 0}}
studies:
  - name: rob
    kind: robustness
    models: [lex]
    data: {data}
    perturbations: [random_typo]
    trials: 1
    n_eval: 10
    n_train: 10
    n_boot: 20
""")
        rc = main(["run", str(tmp_path / "run.yaml"), "--out", str(tmp_path / "out"), "--quiet"])
    printed = capsys.readouterr()
    assert rc != 0 and server.auth == {f"Bearer {KEY}"}
    files = _files_text(tmp_path / "out")
    run_json = next(b for p, b in files.items() if p.name == "run.json").decode()
    assert "HTTP 401" in run_json and "[REDACTED]" in run_json
    assert any(p.name == "faults.json" for p in files)
    assert not any(KEY.encode() in b for b in files.values())
    assert KEY not in printed.out + printed.err
    # one line counts the study's faults (requests already in flight when the first 401 came may fail too)
    assert re.search(r"^rob: API faults: \d+ failed attempts? \(lex: \d+ status 401", printed.err, re.M)
