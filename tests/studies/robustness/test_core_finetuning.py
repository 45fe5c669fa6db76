"""The fine-tuning study on the study core: content-keyed resume (an edited training example
recomputes only the probes; another fine-tuned model under the same name recomputes what reads
it), fine-tuning here keyed on the base's weights. That its function's keywords are the command's
options and its docstring example runs is checked for every study (contract/test_study_schema.py,
contract/test_python_api.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import tiny_bert  # noqa: E402
from helpers.observe import record_calls  # noqa: E402
from perturblab.cli import main  # noqa: E402
from perturblab.measures.similarity import linear_cka  # noqa: E402
from perturblab.models.states import layer_states  # noqa: E402
from perturblab import finetuning  # noqa: E402
from perturblab.studies.robustness.finetuning import FinetuningStudy  # noqa: E402
from perturblab.studies.robustness.finetuning.result import FILES  # noqa: E402

ALL = ["cka", "stir_ft|pre", "stir_pre|ft", "stir_pre|pre", "probe_acc_pre", "probe_acc_ft"]


pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def computed(monkeypatch):
    """The measures the study computes, in order."""
    return record_calls(monkeypatch, FinetuningStudy, "compute")


def run(pre, ft, data, out):
    return finetuning(pre, finetuned=ft, data=data, k=4, out=out, quiet=True)


def test_a_an_edited_training_example_recomputes_only_the_probes(tmp_path, computed):
    pre, ft = tiny_bert.encoder(0, name="pre"), tiny_bert.encoder(1, name="ft")
    train, test = tiny_bert.splits()
    first = run(pre, ft, (train, test), tmp_path / "out")
    assert computed == ALL
    want = [linear_cka(a, b) for a, b in zip(layer_states(pre, test.texts, progress=False),
                                             layer_states(ft, test.texts, progress=False))]
    assert first.series("cka") == pytest.approx(want, abs=1e-12)
    assert [r["layer"] for r in first.rows if r["measure"] == "stir_pre|ft"] == [0, 1, 2]
    computed.clear()
    assert run(pre, ft, (train, test), tmp_path / "out").rows == first.rows
    assert computed == []
    edited = train.subset(range(len(train)))
    for i in range(0, 40, 2):  # flip some training labels: the probes change, the comparison on eval does not
        edited.examples[i] = replace(edited.examples[i], label=1 - edited.examples[i].label)
    again = run(pre, ft, (edited, test), tmp_path / "out")
    assert computed == ["probe_acc_pre", "probe_acc_ft"]
    assert again.rows == run(pre, ft, (edited, test), tmp_path / "fresh").rows
    assert again.series("cka") == first.series("cka") and again.series("probe_acc_pre") != first.series("probe_acc_pre")


def test_b_another_fine_tuned_model_under_the_same_name_is_not_served_stale_cells(tmp_path, computed):
    pre, data = tiny_bert.encoder(0, name="pre"), tiny_bert.splits()
    first = run(pre, tiny_bert.encoder(1, name="ft"), data, tmp_path / "out")
    computed.clear()
    other = run(pre, tiny_bert.encoder(2, name="ft"), data, tmp_path / "out")
    assert computed == ["cka", "stir_ft|pre", "stir_pre|ft", "probe_acc_ft"]  # not what reads `pre` alone
    assert other.series("cka") != first.series("cka")
    assert other.series("stir_pre|pre") == first.series("stir_pre|pre")
    assert other.rows == run(pre, tiny_bert.encoder(2, name="ft"), data, tmp_path / "fresh").rows


def test_c_the_functions_save_writes_what_the_command_writes(tmp_path, capsys):
    base, ft = (str(tiny_bert.save_bert(tmp_path / n, s)) for n, s in (("base", 0), ("ft", 1)))
    data = tiny_bert.write_csv(tmp_path / "toy.csv", 200)
    assert main(["finetuning", "--base", base, "--finetuned", ft, "--data", data, "--n-train", "100", "--n-eval", "40",
                 "--k", "4", "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    res = finetuning(base, finetuned=ft, data=data, n_train=100, n_eval=40, k=4, quiet=True)
    assert sorted(p.name for p in res.save(tmp_path / "api")) == sorted(FILES)
    for name in ("results.json", "finetune.json"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    acc = [r["value"] for r in rows if r["measure"] == "classifier_acc_ft"]
    assert len(acc) == 1 and 0 <= acc[0] <= 1  # the copy's own 2-class head
    assert res.table() in printed
    meta = json.loads((tmp_path / "cli" / "finetune.json").read_text())
    assert meta["finetune"]["steps"] == "given" and meta["study"]["k"] == 4
    assert len(res.summary) == 4 and res.summary[-1]["layer"] is None


def test_fine_tuning_here_is_keyed_on_the_base_weights(tmp_path, monkeypatch):
    data = tiny_bert.splits()
    kw = dict(data=data, k=3, max_seconds=None, quiet=True)
    import perturblab.models.finetune as ft

    trained = []
    original = ft.finetune_classifier
    monkeypatch.setattr(ft, "finetune_classifier", lambda *a, **k: trained.append(1) or original(*a, **k))
    a = finetuning(tiny_bert.encoder(0, name="base"), epochs=1, out=tmp_path / "out", **kw)
    assert trained == [1] and a.finetune["steps"] == 4  # one epoch of 120 examples in batches of 32
    finetuning(tiny_bert.encoder(0, name="base"), epochs=1, out=tmp_path / "out", **kw)
    assert trained == [1]  # the same weights: the saved fine-tune is reused
    b = finetuning(tiny_bert.encoder(5, name="base"), epochs=1, out=tmp_path / "out", **kw)
    assert trained == [1, 1] and b.series("cka") != a.series("cka")
