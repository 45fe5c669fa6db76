"""A comparison on a data file with columns of its own: ``--text-column``/``--text-fields`` and
``--label-column`` (and ``text-column``/``label-column`` in a study config, ``text_column=`` in
Python) reach every study of the plan, the plan's sizes and fairness count read the same columns,
and a corpus file's text column reaches the language models' studies."""

from __future__ import annotations

import json

import pytest
import yaml

import perturblab as pl
from perturblab.cli import main
from perturblab.studies.compare.plan import make_plan
from helpers.compare import args_of

WORDS = {"happy": ["great", "lovely", "sturdy", "excellent"], "sad": ["broke", "awful", "cracked", "useless"]}


@pytest.fixture
def reviews(tmp_path):
    """40 reviews in columns ``review`` and ``sentiment`` (labels happy/sad); 6 mention a woman."""
    rows = ["review,sentiment"]
    for i in range(40):
        label = ("happy", "sad")[i % 2]
        who = "my wife" if i < 6 else "the box"
        rows.append(f"{who} said the kettle was {WORDS[label][i % 4]} and {WORDS[label][(i + 1) % 4]} (item {i}),{label}")
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_plan_passes_the_columns_to_every_study_and_reads_the_data_with_them(reviews):
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", data=str(reviews), text_column="review",
                             label_column="sentiment"))
    assert [s.name for s in plan.studies] == ["invariances", "robustness", "layers"]
    for study in plan.studies:
        assert study.options["text_fields"] == ["review"], study.name
        assert study.options.get("label_column") == (None if study.name == "layers" else "sentiment"), study.name
    # sizes capped by the file's own rows: a test split of 10 of 40, all 40 for the layers
    sizes = {s.name: s.count for s in plan.studies}
    assert sizes == {"invariances": 10, "robustness": 10, "layers": 40}, sizes
    assert any("6 of 40 texts" in line for line in plan.left_out + plan.notes)  # read from the review column


def test_without_the_columns_the_refusal_names_the_options_compare_takes(reviews, tmp_path, capsys):
    code = main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--data", str(reviews),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "columns are: review, sentiment" in err
    assert "--text-fields" in err and not (tmp_path / "out").exists()
    code = main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--data", str(reviews),
                 "--text-column", "review", "--text-fields", "review", "--label-column", "sentiment",
                 "--out", str(tmp_path / "out")])
    assert code == 2 and "replaces --text-column" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_own_columns_from_the_command_line_a_config_and_python_give_the_same_results(reviews, tmp_path, capsys):
    common = ["--reference", "tfidf-lr", "--targets", "twin=tfidf-lr", "--data", str(reviews), "--studies",
              "invariances,robustness", "--label-column", "sentiment", "--quiet"]
    assert main(["compare", *common, "--text-column", "review", "--out", str(tmp_path / "cli")]) == 0
    cli = json.loads((tmp_path / "cli" / "compare.json").read_text())
    scope = json.loads((tmp_path / "cli" / "invariances" / "study.json").read_text())
    assert json.dumps(scope).count("sentiment") >= 1 and "review" in json.dumps(scope)
    # the twin agrees with the reference on every one of the 8 samples, read from the review column
    agreement = next(e for v in cli["verdicts"] for e in v["estimates"] if e["key"] == "agreement")
    assert agreement["value"] == 1.0 and agreement["n"] == 8

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"studies": [
        {"name": "own", "kind": "compare", "reference": "tfidf-lr", "targets": ["twin=tfidf-lr"], "data": str(reviews),
         "studies": ["invariances", "robustness"], "text-column": "review", "label-column": "sentiment"}]}))
    assert main(["run", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    saved = json.loads((tmp_path / "run" / "own" / "compare.json").read_text())

    res = pl.compare("tfidf-lr", ["twin=tfidf-lr"], data=str(reviews), studies="invariances,robustness",
                     text_column="review", label_column="sentiment", quiet=True)
    values = [[(e["key"], e["value"], e["n"]) for v in d["verdicts"] for e in v["estimates"]]
              for d in (cli, saved, json.loads(json.dumps(res.to_json(), default=str)))]
    assert values[0] == values[1] == values[2] and values[0]


def test_a_corpus_files_text_column_reaches_the_language_models_studies(tmp_path):
    corpus = tmp_path / "notes.csv"
    sentences = [f"The meeting on day {i} was moved to the small room upstairs." for i in range(30)]
    corpus.write_text("body\n" + "\n".join(sentences) + "\n")
    plan = make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8", corpus=str(corpus),
                             text_column="body", studies="lm-invariances,selfcheck", benign_corpus="none",
                             budget="1h"))
    assert {s.name: s.options["text_column"] for s in plan.studies} == {"lm-invariances": "body", "selfcheck": "body"}
    assert plan.studies[1].options["benign_corpus"] == "none"
    from perturblab.data.corpus import load_corpus
    from perturblab.studies.scope.lm import SENTENCE_WORDS

    read = load_corpus(str(corpus), text_column="body")
    assert len(read.sentences) == 30  # the body column, one sentence per row
    assert {s.name: s.count for s in plan.studies} == {
        "lm-invariances": len(read.filter(*SENTENCE_WORDS).sentences), "selfcheck": 30}


def test_a_study_of_the_texts_alone_reads_a_file_whose_label_column_has_another_name(reviews):
    from perturblab.studies.inputs import study_inputs

    inputs = study_inputs(str(reviews), 12, seed=0, text_fields=["review"])
    assert len(inputs) == 12 and all("kettle was" in str(x) for x in inputs)


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_every_study_reads_the_users_columns_and_a_target_without_layers_leaves_only_its_own(reviews, tmp_path,
                                                                                             capsys):
    out = tmp_path / "gate"
    out.mkdir()
    (out / "report.html").write_text("<p>an earlier comparison</p>")
    (out / "compare.json").write_text("{}")
    code = main(["compare", "--reference", "minilm-l3", "--targets", "twin=minilm-l3,tfidf-lr", "--data", str(reviews),
                 "--text-column", "review", "--label-column", "sentiment", "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    saved = json.loads((out / "compare.json").read_text())
    ran = [p["name"] for p in saved["plan"]]
    assert ran == ["invariances", "robustness", "layers-twin"], ran
    assert [w for w in saved["left_out"] if w.startswith("layers")] == ["layers: tfidf-lr exposes no hidden states"]
    layers = next(v for v in saved["verdicts"] if v["study"] == "layers-twin")
    # the twin is the reference itself: every layer's linear CKA with its own copy is 1
    assert layers["estimates"] and all(abs(e["value"] - 1) < 1e-4 for e in layers["estimates"])
    assert "an earlier comparison" not in (out / "report.html").read_text()


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_failed_comparison_leaves_no_earlier_report_looking_current(reviews, tmp_path, monkeypatch, capsys):
    from perturblab.errors import InputError
    from perturblab.studies.compare import function

    out = tmp_path / "gate"
    out.mkdir()
    (out / "report.html").write_text("<p>an earlier comparison</p>")
    (out / "compare.json").write_text("{}")
    ran = []

    def failing(*args, **kwargs):  # the second study fails after the first ran
        ran.append(kwargs.get("what"))
        if len(ran) == 2:
            raise InputError("the data changed under the run")
        return real(*args, **kwargs)

    real = function.run_saved
    monkeypatch.setattr(function, "run_saved", failing)
    code = main(["compare", "--reference", "tfidf-lr", "--targets", "twin=tfidf-lr", "--data", str(reviews),
                 "--text-column", "review", "--label-column", "sentiment", "--out", str(out), "--quiet"])
    assert code == 2 and ran == ["study invariances", "study robustness"]
    assert not (out / "report.html").exists() and not (out / "compare.json").exists()
    assert (out / "invariances" / "results.sqlite").is_file()  # the work done is kept for a re-run


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_comparison_stopped_in_a_study_claims_nothing_of_it_on_the_next_run(reviews, tmp_path, monkeypatch):
    from perturblab.studies.compare import function

    out = tmp_path / "gate"
    common = dict(reference="tfidf-lr", targets="twin=tfidf-lr", data=str(reviews), text_column="review",
                  label_column="sentiment", studies="invariances,robustness")
    real = function.run_saved

    def stopped(*args, **kwargs):  # SIGTERM as Ctrl-C, in the second study's work
        if kwargs.get("what") == "study robustness":
            (kwargs["out"] / "results.sqlite").write_bytes(b"")  # its store made, no batch finished
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(function, "run_saved", stopped)
    with pytest.raises(KeyboardInterrupt):
        pl.compare(**common, out=str(out), quiet=True)
    assert json.loads((out / "invariances" / "study.json").read_text())["finished"] is True
    assert json.loads((out / "robustness" / "study.json").read_text())["finished"] is False
    plan = make_plan(args_of(**common))
    plan.note_stored(out)
    assert plan.stored == ["invariances: all 8 stored (read back)",
                           "robustness: an unfinished run left results in its store; what this run shares with them "
                           "is read back, the rest computed"]


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_dataframe_is_a_data_set_read_with_its_own_columns(reviews, tmp_path, monkeypatch):
    import pandas as pd

    from perturblab.errors import InputError
    from perturblab.paths import cache_dir
    from perturblab.studies.compare.function import data_file

    frame = pd.read_csv(reviews)
    path = data_file(frame)
    assert path == data_file(frame.copy()) and path.parent == cache_dir() / "frames"  # named by its content
    assert path != data_file(frame.iloc[::-1])
    res = pl.compare("tfidf-lr", ["twin=tfidf-lr"], data=frame, studies="invariances,robustness",
                     text_column="review", label_column="sentiment", quiet=True)
    by_file = pl.compare("tfidf-lr", ["twin=tfidf-lr"], data=str(reviews), studies="invariances,robustness",
                         text_column="review", label_column="sentiment", quiet=True)
    values = [[(r["key"], r["value"], r["n"]) for r in x.rows] for x in (res, by_file)]
    assert values[0] == values[1] and values[0]
    with pytest.raises(InputError, match="label column 'mood' not in"):
        pl.compare("tfidf-lr", ["twin=tfidf-lr"], data=frame, text_column="review", label_column="mood", quiet=True)
    with pytest.raises(InputError, match="a pandas DataFrame or a perturblab Dataset, not dict"):
        pl.compare("tfidf-lr", ["twin=tfidf-lr"], data={"text": ["a"]}, quiet=True)


def test_model_and_corpus_objects_are_refused_before_anything_runs(tmp_path):
    """compare loads every model and corpus in each of its studies itself: objects are refused,
    naming what to give instead, and nothing is written."""
    from perturblab.data.corpus import Corpus
    from perturblab.errors import InputError

    class Model:
        name, fingerprint = "mine", "test-mine-v1"

    out = tmp_path / "c"
    with pytest.raises(InputError, match=r"compare takes model specs \(names, directories, hub ids\), not objects: "
                                         r"give 'mine' as specs"):
        pl.compare("tfidf-lr", [Model()], out=str(out), quiet=True)
    with pytest.raises(InputError, match="--benign-corpus: give a corpus name or a file, not a Corpus object"):
        pl.compare("tfidf-lr", ["twin=tfidf-lr"], benign_corpus=Corpus(["a b c d."], [0], name="b"), out=str(out),
                   quiet=True)
    assert not out.exists()
