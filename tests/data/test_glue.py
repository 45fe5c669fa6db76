"""GLUE tasks: the table, ``glue:<task>[:<split>]`` specs and errors, with a fake ``datasets``."""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd
import pytest

from perturblab.data import GLUE_TASKS, load_dataset, load_glue
from perturblab.errors import InputError, UnknownNameError
from perturblab.measures.task_metrics import TASK_METRICS

# the real column names of each Hugging Face ``glue`` config (besides ``label`` and ``idx``)
COLUMNS = {"cola": ["sentence"], "sst2": ["sentence"], "mrpc": ["sentence1", "sentence2"],
           "qqp": ["question1", "question2"], "stsb": ["sentence1", "sentence2"],
           "mnli": ["premise", "hypothesis"], "qnli": ["question", "sentence"],
           "rte": ["sentence1", "sentence2"], "wnli": ["sentence1", "sentence2"]}
CLASS_NAMES = {"cola": ["unacceptable", "acceptable"], "sst2": ["negative", "positive"],
               "mrpc": ["not_equivalent", "equivalent"], "qqp": ["not_duplicate", "duplicate"],
               "mnli": ["entailment", "neutral", "contradiction"],
               "qnli": ["entailment", "not_entailment"], "rte": ["entailment", "not_entailment"],
               "wnli": ["not_entailment", "entailment"]}


class FakeSplit:
    """What ``datasets.load_dataset`` returns for one split: features, select, len, to_pandas."""

    def __init__(self, config: str, rows: int = 4):
        self.config, self.rows = config, rows
        names = CLASS_NAMES.get(config)
        label = type("ClassLabel", (), {"names": names})() if names else object()
        self.features = {"label": label}

    def __len__(self) -> int:
        return self.rows

    def select(self, idx) -> FakeSplit:
        return FakeSplit(self.config, len(list(idx)))

    def to_pandas(self) -> pd.DataFrame:
        n = self.rows
        frame = {c: [f"{c} {i}" for i in range(n)] for c in COLUMNS[self.config]}
        if self.config == "stsb":
            frame["label"] = [0.0, 2.5, 4.75, 5.0][:n]
        else:
            frame["label"] = [i % len(CLASS_NAMES[self.config]) for i in range(n)]
        frame["idx"] = [100 + i for i in range(n)]
        return pd.DataFrame(frame)


@pytest.fixture
def hub(monkeypatch) -> list[tuple[Any, ...]]:
    """Install a fake ``datasets`` module; returns the recorded ``load_dataset`` calls."""
    calls: list[tuple[Any, ...]] = []

    def fake_load(name, config=None, *, split="train", **kw):
        calls.append((name, config, split, kw))
        return FakeSplit(config)

    fake = type(sys)("datasets")
    fake.load_dataset = fake_load
    monkeypatch.setitem(sys.modules, "datasets", fake)
    return calls


def test_table_matches_hf_glue():
    assert sorted(GLUE_TASKS) == sorted(COLUMNS)
    for name, spec in GLUE_TASKS.items():
        assert spec.name == name
        assert [c for c in (spec.text_column, spec.text_b_column) if c] == COLUMNS[name]
        assert list(spec.label_names) == CLASS_NAMES.get(name, [])
        assert spec.task == ("regression" if name == "stsb" else "classification")
        assert spec.perturb_field == "both"
        assert spec.eval_split in spec.splits and not spec.eval_split.startswith("test")
    assert {n: s.metric for n, s in GLUE_TASKS.items() if s.metric != "accuracy"} == {
        "cola": "mcc", "stsb": "pearson"}  # the paper's choice (Sec. 3.4)
    assert GLUE_TASKS["mnli"].eval_split == "validation_matched"
    assert GLUE_TASKS["rte"].eval_split == "validation"


@pytest.mark.parametrize("name", sorted(GLUE_TASKS))
def test_default_metric_fits_the_task(name):
    spec = GLUE_TASKS[name]
    metric = TASK_METRICS[spec.metric]
    assert metric.consumes == ("number" if spec.task == "regression" else "label")


def test_mrpc_pairs(hub):
    ds = load_dataset("glue:mrpc")
    assert [c[:3] for c in hub] == [("nyu-mll/glue", "mrpc", "train")]
    assert ds.name == "glue:mrpc" and ds.is_pair
    assert ds[1].text == "sentence1 1" and ds[1].text_b == "sentence2 1"
    assert ds.label_names == ["not_equivalent", "equivalent"]
    assert ds.labels.tolist() == [0, 1, 0, 1]
    assert [e.uid for e in ds] == ["100", "101", "102", "103"]


def test_stsb_regression_with_split(hub):
    ds = load_dataset("GLUE:STSB:validation")
    assert [c[:3] for c in hub] == [("nyu-mll/glue", "stsb", "validation")]
    assert ds.label_names == [] and ds.labels.dtype == float
    assert ds.labels.tolist() == [0.0, 2.5, 4.75, 5.0]
    assert ds.name == "glue:stsb" and ds[0].fields == ("sentence1 0", "sentence2 0")


def test_single_sentence_limit_and_overrides(hub):
    ds = load_glue("sst-2", limit=2, cache_dir="/tmp/x")
    assert hub[-1] == ("nyu-mll/glue", "sst2", "train", {"cache_dir": "/tmp/x"})
    assert len(ds) == 2 and not ds.is_pair and ds.label_names == ["negative", "positive"]
    swapped = load_dataset("glue:qnli", text_column="sentence", text_b_column="question")
    assert swapped[0].fields == ("sentence 0", "question 0")
    single = load_dataset("glue:rte", text_column="sentence2")
    assert not single.is_pair and single[0].fields == ("sentence2 0",)
    mnli = load_dataset("glue:mnli", split=GLUE_TASKS["mnli"].eval_split)
    assert hub[-1][2] == "validation_matched" and mnli.label_names[1] == "neutral"


def test_bad_splits_and_specs(hub):
    with pytest.raises(InputError, match=r"unlabelled.*glue:mnli:validation_matched"):
        load_dataset("glue:mnli:test_matched")
    with pytest.raises(InputError, match=r"unlabelled.*glue:rte:validation"):
        load_dataset("glue:rte:test")
    with pytest.raises(InputError, match=r"no split 'validation'.*validation_mismatched"):
        load_dataset("glue:mnli:validation")
    with pytest.raises(InputError, match="empty split name"):
        load_glue("cola", split=" ")
    with pytest.raises(InputError, match=r"glue:<task>\[:<split>\]"):
        load_dataset("glue:")
    with pytest.raises(InputError, match="give one"):
        load_dataset("glue:cola:train", split="validation")
    assert hub == []  # refused before the hub is asked


def test_unknown_task_lists_known(hub):
    with pytest.raises(UnknownNameError) as err:
        load_dataset("glue:mnrpc")
    msg = str(err.value)
    assert "'mnrpc'" in msg and all(name in msg for name in GLUE_TASKS)


def test_without_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(InputError) as err:
        load_dataset("glue:mrpc")
    msg = str(err.value)
    assert "'mrpc'" in msg and r"pip install perturblab[hf]" in msg and "network" in msg
    assert "--text-fields sentence1,sentence2" in msg and "CSV/JSONL" in msg


def test_hub_failure_says_what_to_do(monkeypatch):
    def offline(name, config=None, *, split="train", **kw):
        raise ConnectionError("Couldn't reach 'glue' on the Hub")

    fake = type(sys)("datasets")
    fake.load_dataset = offline
    monkeypatch.setitem(sys.modules, "datasets", fake)
    with pytest.raises(InputError, match=r"'cola'.*Couldn't reach.*perturblab\[hf\].*"
                                         r"--text-fields sentence") as err:
        load_dataset("glue:cola")
    assert isinstance(err.value.__cause__, ConnectionError)


def test_row_errors_are_not_reworded(hub, monkeypatch):
    monkeypatch.setattr(FakeSplit, "to_pandas", lambda self: pd.DataFrame(
        {"sentence": ["ok", " "], "label": [0, 1], "idx": [0, 1]}))
    with pytest.raises(InputError, match="empty 'sentence'") as err:
        load_glue("cola")
    assert "perturblab[hf]" not in str(err.value)
