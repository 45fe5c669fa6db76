"""Every refusal happens before any work starts: no model loaded, nothing written in --out.

Each command here is refused by its options' check (one line, exit 2, the input and the fix
named) and leaves no output directory behind: a reference among its own targets, a llama.cpp
backend that cannot run (llama-cpp-python missing, a model directory instead of a GGUF file), two
models a study would report under one name, API label words that do not match the data's labels.
Encoders take the placement options (``[device=...,dtype=...]``), so compare keeps its layer
comparison for a bfloat16 copy of the reference's directory, and the encoder is really cast."""

from __future__ import annotations

import importlib.machinery
import importlib.util

import pytest

import perturblab as pl
from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.models.resolve import load_model
from perturblab.models.spec_check import check_spec
from perturblab.studies.compare.config import CompareArgs
from perturblab.studies.compare.plan import make_plan
from helpers.tiny_bert import save_bert, write_csv
from helpers.tiny_classifier import tiny_model_dir

pytestmark = pytest.mark.usefixtures("home")

API = "api:m@http://127.0.0.1:9/v1"  # never reached: the command is refused before any request


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two tiny classifier directories, an (empty) .gguf file and a labelled CSV whose labels are
    negative and positive."""
    root = tmp_path_factory.mktemp("refusals")
    a, b = tiny_model_dir(root / "a", 0), tiny_model_dir(root / "b", 1)
    gguf = root / "tiny.gguf"
    gguf.write_bytes(b"")
    rows = ["label,text"] + [f"{'positive' if i % 2 else 'negative'},the {'good' if i % 2 else 'bad'} film {i}"
                             for i in range(40)]
    data = root / "data.csv"
    data.write_text("\n".join(rows) + "\n")
    return {"a": a, "b": b, "gguf": str(gguf), "data": str(data)}


def llama_cpp(monkeypatch, installed: bool) -> None:
    """llama-cpp-python installed or not, as the check looks it up (nothing is imported)."""
    find_spec = importlib.util.find_spec

    def fake(name, *a, **kw):
        if name == "llama_cpp":
            return importlib.machinery.ModuleSpec("llama_cpp", None) if installed else None
        return find_spec(name, *a, **kw)

    monkeypatch.setattr(importlib.util, "find_spec", fake)


def refused(capsys, tmp_path, argv: list[str], *needles: str) -> str:
    """Run the command with ``--out tmp_path/out``: exit 2, one line naming ``needles``, no
    traceback, and no output directory made."""
    out = tmp_path / "out"
    rc = main([*argv, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))
    return err


# -- 1. the reference among its targets ---------------------------------------------------
def test_compare_refuses_the_reference_among_its_targets(models, capsys, tmp_path):
    a, b = models["a"], models["b"]
    err = refused(capsys, tmp_path, ["compare", "--reference", a, "--targets", f"{a},{b}", "--data", models["data"]],
                  "--targets", f"names the reference {a!r}", "drop it from --targets", f"copy={a}")
    assert err.startswith("error: ")
    refused(capsys, tmp_path, ["compare", "--reference", f"ref={a}", "--targets", f"ref={a}"],
            "names the reference 'ref=", f"--targets copy={a}")


def test_a_named_copy_of_the_reference_is_a_target_like_any_other(models):
    a = models["a"]
    CompareArgs(reference=a, targets=f"copy={a},{models['b']}", out=None).check()
    assert CompareArgs(reference=a, targets=f"copy={a}", out=None).target_labels() == ["copy"]


# -- 2. [backend=llamacpp] that cannot run ------------------------------------------------
def test_llamacpp_without_llama_cpp_python_is_refused_before_work(models, monkeypatch, capsys, tmp_path):
    llama_cpp(monkeypatch, installed=False)
    spec = f"q4={models['gguf']}[backend=llamacpp]"
    for argv in (["compare", "--reference", f"lm={models['a']}", "--targets", spec],
                 ["selfcheck", "--models", spec],
                 ["scope-lm", "--reference", models["a"], "--targets", spec]):
        refused(capsys, tmp_path, argv, "--targets" if "--targets" in argv else "--models",
                f"{models['gguf']}[backend=llamacpp]", "needs llama-cpp-python", "pip install 'perturblab[llamacpp]'",
                "drop backend=llamacpp")
    with pytest.raises(InputError, match="needs llama-cpp-python"):
        check_spec(spec, "language_model")
    llama_cpp(monkeypatch, installed=True)
    check_spec(spec, "language_model")  # the same spec passes where llama-cpp-python is installed


def test_llamacpp_on_a_model_directory_is_refused_before_work(models, monkeypatch, capsys, tmp_path):
    llama_cpp(monkeypatch, installed=True)  # not the reason: a directory is no GGUF file
    a = models["a"]
    for argv in (["compare", "--reference", f"ref={a}", "--targets", f"{a}[backend=llamacpp]"],
                 ["scope-lm", "--reference", f"ref={a}", "--targets", f"{a}[backend=llamacpp]"]):
        refused(capsys, tmp_path, argv, "--targets", f"{a}[backend=llamacpp]", "llama.cpp runs .gguf files",
                "is a model directory: drop backend=llamacpp")
    with pytest.raises(InputError, match="quantised weights on the CPU; drop dtype=bfloat16$"):
        check_spec(f"{models['gguf']}[backend=llamacpp,dtype=bf16]", "language_model")
    with pytest.raises(InputError, match="runs .gguf files and the GGUF presets"):
        check_spec("smollm2-135m-int8[backend=llamacpp]", "language_model")


# -- 3. two models under one name ---------------------------------------------------------
def test_two_models_under_one_name_are_refused_naming_both(models, monkeypatch, capsys, tmp_path):
    llama_cpp(monkeypatch, installed=True)
    a, gguf = models["a"], models["gguf"]
    native = f"{gguf}[backend=llamacpp]"
    for argv, first, second in (
        (["compare", "--reference", f"m={a}", "--targets", f"m={native}"], f"m={a}", f"m={native}"),
        (["compare", "--reference", gguf, "--targets", native], gguf, native),  # no names: both the source
        (["scope-lm", "--reference", gguf, "--targets", native], gguf, native),
        (["scope", "--reference", a, "--targets", f"{a}[batch_size=4]", "--data", models["data"]], a,
         f"{a}[batch_size=4]"),
    ):
        refused(capsys, tmp_path, argv, "--targets", f"{first!r} and {second!r} would both be reported as",
                "give one of them another name with NAME=SOURCE")
    refused(capsys, tmp_path, ["robustness", "--models", f"{a},{a}[batch_size=4]", "--data", models["data"]],
            "--models", "would both be reported as", f"a-2={a}[batch_size=4]")


def test_similarity_refuses_two_encoders_under_one_name(models, capsys, tmp_path):
    a = models["a"]
    refused(capsys, tmp_path, ["similarity", "--a", a, "--b", f"{a}[dtype=bfloat16]", "--data", models["data"]],
            "--b", "would both be reported as", f"a-2={a}[dtype=bfloat16]")
    with pytest.raises(InputError, match="would both be reported as"):
        pl.similarity(a, f"{a}[dtype=bfloat16]", data=models["data"], n=8, quiet=True)


# -- 4. label words that do not match the data's labels -----------------------------------
@pytest.mark.parametrize("words,needles", [
    ("neg:no|pos:yes", ["label_words has no word for the data's labels ['negative', 'positive']",
                        "label_words=negative:negative|positive:positive"]),
    ("no|maybe|yes", ["3 label_words for 2 labels ['negative', 'positive']", "label_words=negative:"]),
    ("negative:yes|positive:YES", ["label words must differ", "label_words=negative:"]),
])
def test_label_words_are_checked_against_the_datas_labels_before_work(models, capsys, tmp_path, words, needles):
    spec = f"{API}[label_words={words}]"
    refused(capsys, tmp_path, ["scope", "--reference", spec, "--targets", models["a"], "--data", models["data"]],
            "--reference", *needles)
    refused(capsys, tmp_path, ["compare", "--reference", models["a"], "--targets", spec, "--data", models["data"]],
            "--targets", *needles)
    refused(capsys, tmp_path, ["robustness", "--models", f"{models['a']},{spec}", "--data", models["data"]],
            "--models", *needles)


def test_label_words_that_match_pass_the_check(models):
    CompareArgs(reference=models["a"], targets=f"{API}[label_words=negative:no|positive:yes]",
                data=models["data"], out=None).check()
    CompareArgs(reference=models["a"], targets=f"{API}[label_words=no|yes]", data=models["data"], out=None).check()


# -- 5. encoders take device and dtype ----------------------------------------------------
def test_compare_keeps_the_layers_of_a_bfloat16_copy_of_the_reference(models):
    a = models["a"]
    plan = make_plan(CompareArgs(reference=f"x={a}", targets=f"y={a}[dtype=bfloat16]", data=models["data"],
                                 budget="2m", out=None))
    assert "layers" in [p.name for p in plan.studies], plan.left_out
    layers = next(p for p in plan.studies if p.name == "layers")
    assert (layers.options["a"], layers.options["b"]) == (f"x={a}", f"y={a}[dtype=bfloat16]")
    assert not any("hidden states" in why for why in plan.left_out)


def test_encoders_take_placement_options_and_refuse_the_others(models):
    a = models["a"]
    for spec in (f"{a}[dtype=bfloat16]", f"{a}[device=cpu,dtype=bf16,batch_size=4]", f"e={a}[max_length=16]"):
        check_spec(spec, "encoder")
    with pytest.raises(InputError, match=r"backend= means nothing for an encoder .*; drop it \(an encoder takes "
                                         r"batch_size, batch_tokens, max_length, device, dtype\)"):
        check_spec(f"{a}[backend=torch]", "encoder")
    with pytest.raises(InputError, match="not by presets in this version"):
        check_spec("minilm-l6[dtype=bfloat16]", "encoder")
    with pytest.raises(InputError, match="label_words set an API language model|an API model serves as a classifier"):
        check_spec(f"{API}[label_words=no|yes]", "encoder")


def test_an_encoder_given_a_dtype_is_cast_and_the_similarity_study_runs_on_it(tmp_path, torch_one_thread):
    import torch

    bert = save_bert(tmp_path / "bert", seed=0)
    data = write_csv(tmp_path / "d.csv", 24)
    plain = load_model(str(bert), "encoder")
    half = load_model(f"{bert}[dtype=bfloat16,batch_size=4]", "encoder")
    assert {p.dtype for p in half.model.parameters() if p.is_floating_point()} == {torch.bfloat16}
    assert {p.dtype for p in plain.model.parameters() if p.is_floating_point()} == {torch.float32}
    assert half.batch_size == 4 and half.fingerprint != plain.fingerprint
    res = pl.similarity(f"f32={bert}", f"bf16={bert}[dtype=bfloat16]", data=data, n=16, measures="cka",
                        out=tmp_path / "o", quiet=True)
    same_layer = [r for r in res.rows if r["layer_a"] == r["layer_b"]]
    assert same_layer and all(r["value"] > 0.95 for r in same_layer), same_layer


def test_a_data_option_too_long_for_a_file_name_is_refused_in_one_short_line(capsys, tmp_path):
    """A text given where a data set belongs (longer than any file name) is refused as neither a
    file nor a registered data set, in one line that shows its start and its length, not the
    operating system's "File name too long"."""
    text = "a very long review of a film " * 20  # 580 characters: more than a file name may hold
    line = refused(capsys, tmp_path, ["scope", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--data", text],
                   "is neither an existing file nor a registered data set or corpus", "(579 characters)")
    assert len(line) < 400
    refused(capsys, tmp_path, ["scope", "--reference", "tfidf-lr", "--targets", "x" * 600],
            "--targets: unknown model preset 'xxx")  # a model name no file system holds: not a directory


#: a name longer than a file name may be
LONG = "m" * 300


@pytest.mark.parametrize("role", ["classifier", "encoder", "language_model", "regressor"])
@pytest.mark.parametrize("spec", [f"{LONG}.gguf", f"x={LONG}", f"./{LONG}", f"/tmp/{LONG}", f"~/{LONG}",
                                  f"x=./{LONG}", f"{LONG}[batch_size=4]", f"{LONG}[backend=llamacpp]"])
def test_a_model_path_longer_than_a_file_name_is_refused_as_no_such_model(spec, role):
    """A path, ``.gguf`` file or name no file system can hold is refused like one that is not
    there (:class:`InputError`), when checked and when loaded: not the operating system's
    "File name too long" as a traceback."""
    for attempt in (lambda: check_spec(spec, role), lambda: load_model(spec, role)):
        with pytest.raises(InputError) as refusal:
            attempt()
        assert "File name too long" not in str(refusal.value)


def test_a_hub_id_that_cannot_be_fetched_is_refused_in_one_line_before_any_directory(models, capsys, tmp_path):
    """A hub id the hub cannot give (here one longer than any it holds, refused without a
    request) is refused when the plan times it, naming the model, the hub and what to do; no
    output directory is made; a language model and a classifier loaded by name alike."""
    hub = "org/" + "m" * 100  # the hub's ids have at most 96 characters
    data = ["--data", models["data"]]
    for argv, role in ((["compare", "--reference", models["a"], "--targets", hub, "--budget", "1m", *data], "encoder"),
                       (["similarity", "--a", models["a"], "--b", hub, *data], "encoder")):
        refused(capsys, tmp_path, argv, f"error: {role} '{hub}': could not be loaded from the Hugging Face hub (",
                "or give a local model directory")
    from perturblab.data import Dataset, Example
    from perturblab.models.resolve import HubLoadError

    with pytest.raises(HubLoadError, match="language model 'org/m+': could not be loaded from the Hugging Face hub"):
        load_model(hub, "language_model")
    with pytest.raises(HubLoadError, match="classifier 'org/m+': could not be loaded from the Hugging Face hub"):
        load_model(hub, "classifier", train=Dataset([Example("a good film", 1), Example("bad", 0)],
                                                  ["neg", "pos"]))
