"""Checkpoint dynamics (SCoPE App. D, Figs. 9-10): checkpoints saved during fine-tuning and the
SCoPE study over them, on tiny BERTs built from a config (no downloads)."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.observe import count_cells  # noqa: E402
from perturblab.cli import main  # noqa: E402
from perturblab.data.examples import Dataset, Example  # noqa: E402
from perturblab.errors import InputError  # noqa: E402
from perturblab.models import finetune as ft  # noqa: E402
from perturblab.models.base import CountingClassifier  # noqa: E402
from perturblab.models.checkpoints import list_checkpoints, percent_label, read_checkpoint_meta  # noqa: E402
from perturblab.models.finetune import FinetuneConfig, finetune_classifier, read_finetune_meta  # noqa: E402
from perturblab.models.hf import HFSequenceClassifier  # noqa: E402
from perturblab.studies.scope.checkpoints import (Checkpoint, CheckpointStudy,  # noqa: E402
                                            checkpoints_from_dirs)
from perturblab.core.entry import run  # noqa: E402
from perturblab.studies.scope import ScopeArgs, ScopeStudy, summarise  # noqa: E402
from perturblab.studies.scope.config import CheckpointsArgs  # noqa: E402

FILLER = "the a cat dog sat on mat movie film was is very and it plot actors park river old new".split()
MARKER = "zebra"
FAST = FinetuneConfig(epochs=4, lr=1e-2, batch_size=16, max_length=32, max_seconds=None)  # 4 x 6 = 24 steps
FRACTIONS = (0.0, 0.25, 0.5, 1.0)
METRICS = ("gap_iid_acc", "iid_agreement", "ood_agreement", "hard_scope", "soft_scope")


def tokenizer():
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *FILLER, MARKER])}
    return transformers.BertTokenizer(vocab=vocab)


def marker_data(n: int, seed: int = 0, name: str = "marker") -> Dataset:
    rng = np.random.default_rng(seed)
    ex = []
    for i in range(n):
        words = list(rng.choice(FILLER, size=int(rng.integers(4, 9))))
        if i % 2:
            words.insert(int(rng.integers(0, len(words) + 1)), MARKER)
        ex.append(Example(" ".join(words), i % 2, uid=str(i)))
    return Dataset(ex, ["absent", "present"], name)


def state(path):
    return transformers.AutoModelForSequenceClassification.from_pretrained(path).state_dict()


def same_state(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    tok = tokenizer()
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    path = tmp_path_factory.mktemp("base") / "tiny-bert"
    transformers.BertModel(cfg).eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def run_dir(base_dir, tmp_path_factory):
    """A fine-tune of 24 steps with checkpoints at 0, 25, 50 and 100 %."""
    out = tmp_path_factory.mktemp("ft") / "with-checkpoints"
    return finetune_classifier(base_dir, marker_data(96), seed=0, out_dir=out, config=FAST, progress=False,
                               checkpoints=FRACTIONS)


@pytest.fixture(scope="module")
def splits():
    return marker_data(96), marker_data(60, seed=1, name="marker-test")


# ---------------------------------------------------------------- saving checkpoints
def test_fractions_become_loadable_directories_with_provenance(run_dir):
    names = [p.name for p in list_checkpoints(run_dir)]
    assert names == ["checkpoint-000", "checkpoint-025", "checkpoint-050", "checkpoint-100"]
    meta = read_finetune_meta(run_dir)
    assert meta["checkpoint_fractions"] == list(FRACTIONS) and meta["steps"] == 24
    assert [(c["name"], c["step"]) for c in meta["checkpoints"]] == list(zip(names, [0, 6, 12, 24]))
    for name, step, frac in zip(names, (0, 6, 12, 24), FRACTIONS):
        info = read_checkpoint_meta(run_dir / name)
        got = (info["step"], info["fraction"], info["requested_fraction"], info["total_steps"])
        assert got == (step, frac, frac, 24)
        assert info["seed"] == 0 and info["label_names"] == ["absent", "present"]
        clf = HFSequenceClassifier(run_dir / name)
        assert clf.labels == ["absent", "present"] and clf.predict_proba(["the cat"]).shape == (1, 2)
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".")]  # no staging directories left
    assert [p.name for p in run_dir.parent.iterdir()] == ["with-checkpoints"]
    assert not same_state(state(run_dir / "checkpoint-050"), state(run_dir / "checkpoint-100"))


def test_zero_checkpoint_is_the_initial_model(run_dir, base_dir, tmp_path):
    untrained = finetune_classifier(base_dir, marker_data(96), seed=0, out_dir=tmp_path / "u",
                                    config=replace(FAST, max_steps=0), progress=False)
    zero = state(run_dir / "checkpoint-000")
    assert same_state(zero, state(untrained))
    encoder = transformers.BertModel.from_pretrained(base_dir).state_dict()
    assert all(torch.equal(encoder[k], zero["bert." + k]) for k in encoder)  # pretrained weights, untouched
    # the head is the freshly initialised one: its predictions ignore the marker
    acc = lambda p: float(np.mean(HFSequenceClassifier(p).predict_proba(marker_data(96).texts).argmax(1)  # noqa: E731
                                  == marker_data(96).labels))
    assert acc(run_dir / "checkpoint-000") < 0.75 <= acc(run_dir / "checkpoint-100")


def test_saving_checkpoints_does_not_change_training(run_dir, base_dir, tmp_path):
    plain = finetune_classifier(base_dir, marker_data(96), seed=0, out_dir=tmp_path / "plain", config=FAST,
                                progress=False)
    final = state(plain)
    assert same_state(final, state(run_dir)) and same_state(final, state(run_dir / "checkpoint-100"))
    a, b = read_finetune_meta(plain), read_finetune_meta(run_dir)
    for k in ("wall_seconds", "checkpoints", "checkpoint_fractions"):
        a.pop(k, None), b.pop(k, None)
    assert a == b and not list_checkpoints(plain)


def test_time_limit_saves_the_state_it_stopped_at(base_dir, tmp_path):
    out = finetune_classifier(base_dir, marker_data(96), seed=0, out_dir=tmp_path / "t", progress=False,
                              config=replace(FAST, max_seconds=0.0), checkpoints=(0.0, 0.5, 1.0))
    assert read_finetune_meta(out)["steps"] == 1
    assert [p.name for p in list_checkpoints(out)] == ["checkpoint-000", "checkpoint-004.2"]
    info = read_checkpoint_meta(out / "checkpoint-004.2")
    assert info["step"] == 1 and info["stopped_early"] and info["requested_fraction"] is None
    assert same_state(state(out), state(out / "checkpoint-004.2"))


def test_failed_training_leaves_no_checkpoints_behind(base_dir, tmp_path, monkeypatch):
    from perturblab.models.checkpoints import CheckpointWriter

    real, calls = CheckpointWriter.save, []

    def failing(self, step, *a, **k):
        calls.append(step)
        if len(calls) > 1:
            raise RuntimeError("disk full")
        return real(self, step, *a, **k)

    monkeypatch.setattr(CheckpointWriter, "save", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        finetune_classifier(base_dir, marker_data(96), seed=0, out_dir=tmp_path / "f", config=FAST, progress=False,
                            checkpoints=FRACTIONS)
    assert calls == [0, 6] and list(tmp_path.iterdir()) == []  # checkpoint-000 was staged, then removed


def test_bad_fractions_are_input_errors(base_dir, tmp_path):
    for bad, match in (((0.0, 1.5), r"\[0, 1\]"), ((), "at least one"), ((0.1, 0.1), "same directory"),
                       (("x",), "numbers")):
        with pytest.raises(InputError, match=match):
            finetune_classifier(base_dir, marker_data(16), seed=0, out_dir=tmp_path / "b", config=FAST,
                                progress=False, checkpoints=bad)
    assert not (tmp_path / "b").exists()
    assert percent_label(12.5) == "checkpoint-012.5" and percent_label(100) == "checkpoint-100"


def test_load_or_finetune_keeps_checkpoint_runs_apart(base_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    data, cfg = marker_data(32), replace(FAST, max_steps=2)
    plain = ft.load_or_finetune("tiny", base_dir, data, seed=0, config=cfg, progress=False)
    with_ck = ft.load_or_finetune("tiny", base_dir, data, seed=0, config=cfg, progress=False, checkpoints=(0, 1))
    assert plain != with_ck and plain == ft.finetuned_dir("tiny", data, 0, cfg)
    assert [p.name for p in list_checkpoints(with_ck)] == ["checkpoint-000", "checkpoint-100"]
    monkeypatch.setattr(ft, "finetune_classifier", lambda *a, **k: pytest.fail("trained again"))
    assert ft.load_or_finetune("tiny", base_dir, data, seed=0, config=cfg, progress=False,
                               checkpoints=[1.0, 0.0]) == with_ck


# ---------------------------------------------------------------- the study
def study_config(**kw) -> CheckpointsArgs:
    return CheckpointsArgs(**{**dict(capabilities="typo", n=16, trials=2), **kw})


def run_checkpoints(args, out, checkpoints, **kw):
    """The checkpoint study of ``args`` run into ``out``; its result."""
    return run(CheckpointStudy(args, checkpoints, **kw), out)


@pytest.fixture(scope="module")
def study_run(run_dir, splits, tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    study = CheckpointStudy(study_config(), [run_dir], splits=splits, progress=False)
    result = run(study, out)
    result.save(out)
    return study, result.rows, out


def test_study_rows_and_self_comparison(study_run):
    study, rows, out = study_run
    names = ["checkpoint-000", "checkpoint-025", "checkpoint-050", "checkpoint-100"]
    assert study.names == names and study.final == "checkpoint-100"
    final = [r for r in rows if r["comparison"] == "vs_final"]
    prev = [r for r in rows if r["comparison"] == "vs_previous"]
    assert [r["checkpoint"] for r in final] == names and [r["percent"] for r in final] == [0, 25, 50, 100]
    assert all(r["reference"] == "checkpoint-100" for r in final)
    assert [(r["reference"], r["checkpoint"]) for r in prev] == list(zip(names, names[1:]))
    assert all(r["reference_position"] == r["position"] - 1 for r in prev)
    me = final[-1]  # the final checkpoint against itself
    assert me["hard_scope"] == me["soft_scope"] == me["iid_agreement"] == me["ood_agreement"] == 1.0
    assert me["gap_iid_acc"] == 0.0 and me["trials"] == 2 and me["n_perturbed"] > 0
    for r in rows:
        assert 0 <= r["soft_scope"] <= r["hard_scope"] <= 1, r
        assert all(k in r and k + "_se" in r for k in METRICS)
        assert len(r["hard_scope_ci_trials"]) == len(r["soft_scope_ci_trials"]) == 2
    assert min(r["soft_scope"] for r in final[:-1]) < 1.0  # the earlier checkpoints differ from the final
    saved = json.loads((out / "results.json").read_text())
    assert len(saved) == len(rows) == 4 + 3 and saved[0]["comparison"] == "vs_final"
    assert len(json.loads((out / "trials.json").read_text())) == (4 + 3) * 2
    table = (out / "table.md").read_text()
    assert "previous checkpoint" in table and table.count("| checkpoint-050 | 50 |") == 2
    for png in ("checkpoints_vs_final_typo.png", "checkpoints_soft_scope.png"):
        assert (out / png).stat().st_size > 5000
    manifest = json.loads((out / "checkpoints.json").read_text())
    assert [c["name"] for c in manifest["checkpoints"]] == names


def test_vs_previous_equals_a_direct_scope_run(run_dir, splits, tmp_path):
    cfg = study_config(comparisons="vs_previous")
    rows = run_checkpoints(cfg, tmp_path / "study", [run_dir], splits=splits, progress=False, cache=False).rows
    assert {r["comparison"] for r in rows} == {"vs_previous"} and len(rows) == 3
    got = next(r for r in rows if r["checkpoint"] == "checkpoint-050")
    models = {n: HFSequenceClassifier(run_dir / n, name=n) for n in ("checkpoint-025", "checkpoint-050")}
    direct_cfg = ScopeArgs(reference="checkpoint-025", targets="checkpoint-050", capabilities="typo", n=16, trials=2)
    direct = run(ScopeStudy(direct_cfg, models=models, splits=splits, progress=False), tmp_path / "direct").rows
    (want,) = summarise(direct)
    assert got["reference"] == "checkpoint-025"
    for m in METRICS:
        assert got[m] == want[m] and got[m + "_se"] == want[m + "_se"] or (np.isnan(got[m]) and np.isnan(want[m]))
    assert got["soft_scope_ci_trials"] == [r["soft_scope_ci"] for r in direct]


def searches_stored(out) -> int:
    return count_cells(out, "scope.search")


def test_rerun_resumes_without_searching(study_run, run_dir, splits):
    study, rows, out = study_run
    before = searches_stored(out)
    counting = {p.name: CountingClassifier(HFSequenceClassifier(p, name=p.name)) for p in list_checkpoints(run_dir)}
    cks = [Checkpoint(n, m, c.percent) for (n, m), c in zip(counting.items(), study.checkpoints)]
    again = run_checkpoints(study_config(), out, cks, splits=splits, progress=False).rows
    assert json.dumps(again, sort_keys=True) == json.dumps(rows, sort_keys=True)
    assert all(m.calls == 0 for m in counting.values())  # searches from the store, outputs from the cache
    # without the output cache, the models are only asked for the outputs that are scored, never searched with
    run_checkpoints(study_config(), out, cks, splits=splits, progress=False, cache=False)
    studies_with = {"checkpoint-000": 2, "checkpoint-025": 3, "checkpoint-050": 3, "checkpoint-100": 2}
    for name, m in counting.items():  # three calls (x, x for x', x') per study, capability and trial
        assert 0 < m.calls <= 3 * studies_with[name] * 2, (name, m.calls)
    assert searches_stored(out) == before


# ---------------------------------------------------------------- errors
class Fixed:
    """A classifier with fixed labels and constant output."""

    def __init__(self, labels, fingerprint="fixed"):
        self.labels, self.fingerprint = labels, fingerprint

    def predict_proba(self, inputs):
        return np.full((len(list(inputs)), len(self.labels)), 1.0 / len(self.labels))


def test_clear_input_errors(run_dir, splits, tmp_path):
    with pytest.raises(InputError, match="at least 2"):
        CheckpointStudy(study_config(), [run_dir / "checkpoint-000"], splits=splits)
    with pytest.raises(InputError, match="not a directory"):
        checkpoints_from_dirs([run_dir / "checkpoint-000", tmp_path / "missing"])
    with pytest.raises(InputError, match="label set"):
        run_checkpoints(study_config(), tmp_path / "l", [Checkpoint("a", Fixed(["absent", "present"])),
                                                         Checkpoint("b", Fixed(["x", "y"]))], splits=splits)
    with pytest.raises(InputError, match="unique"):
        CheckpointStudy(study_config(), [Checkpoint("a", Fixed(["x", "y"])), Checkpoint("a", Fixed(["x", "y"]))],
                        splits=splits)
    with pytest.raises(InputError, match="--comparisons: takes one or more of vs_final, vs_previous"):
        study_config(comparisons="vs_best").check()
    with pytest.raises(InputError, match="classes"):
        three = (splits[0], Dataset(splits[1].examples, ["a", "b", "c"], "three"))
        run_checkpoints(study_config(), tmp_path / "c", [run_dir], splits=three)


def test_other_weights_under_the_same_names_are_scored_afresh(run_dir, splits, tmp_path):
    """The same out dir with other weights under the same names: nothing stale is served, the rows
    equal those of a fresh directory."""
    names = ["checkpoint-000", "checkpoint-050", "checkpoint-100"]
    dirs = [Checkpoint(n, run_dir / n) for n in names]
    cfg = study_config(n=6, trials=1)
    first = run_checkpoints(cfg, tmp_path / "m", dirs, splits=splits, progress=False).rows
    swapped = [Checkpoint(n, run_dir / m) for n, m in zip(names, ["checkpoint-025", "checkpoint-050", "checkpoint-000"])]
    again = run_checkpoints(cfg, tmp_path / "m", swapped, splits=splits, progress=False).rows
    fresh = run_checkpoints(cfg, tmp_path / "fresh", swapped, splits=splits, progress=False).rows
    assert json.dumps(again, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    assert json.dumps(again, sort_keys=True) != json.dumps(first, sort_keys=True)


# ---------------------------------------------------------------- CLI
def write_csv(path, data: Dataset):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for e in data.examples:
            w.writerow([e.label, e.text])
    return str(path)


def test_cli_with_directories_and_errors(run_dir, tmp_path, capsys):
    data = write_csv(tmp_path / "d.csv", marker_data(80, seed=2))
    dirs = ",".join(str(run_dir / n) for n in ("checkpoint-000", "checkpoint-050", "checkpoint-100"))
    out = tmp_path / "cli"
    argv = ["checkpoints", "--checkpoints", dirs, "--data", data, "--capabilities", "typo", "--n", "10",
            "--trials", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "results.json").read_text())
    assert [r["percent"] for r in rows if r["comparison"] == "vs_final"] == [0, 50, 100]
    assert len(rows) == 3 + 2 and "vs_previous" in capsys.readouterr().out
    assert main(["checkpoints", "--checkpoints", f"{run_dir / 'checkpoint-000'},{tmp_path / 'nope'}", "--data", data,
                 "--out", str(tmp_path / "x")]) == 2
    assert main(["checkpoints", "--checkpoints", str(run_dir / "checkpoint-000"), "--data", data,
                 "--out", str(tmp_path / "x")]) == 2
    assert "at least 2 checkpoints" in capsys.readouterr().err


def test_cli_finetunes_a_preset_with_checkpoints(tmp_path, monkeypatch):
    from perturblab.models import presets
    from perturblab.models.hf import HFEncoder

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))

    def make():
        tok = tokenizer()
        torch.manual_seed(3)
        cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
        return HFEncoder(transformers.BertModel(cfg).eval(), tok, name="tiny-ck")

    monkeypatch.setattr(presets.PRESETS, "_items", {**presets.PRESETS._items})  # the preset is gone after the test
    monkeypatch.setattr(presets.PRESETS, "_docs", {**presets.PRESETS._docs})
    presets.PRESETS.add("tiny-ck", lambda: presets.ModelPreset("tiny-ck", "encoder", "test", make), overwrite=True)
    monkeypatch.setattr(presets, "_ENCODERS", {})
    data = write_csv(tmp_path / "d.csv", marker_data(120, seed=3))
    argv = ["checkpoints", "--finetune", "tiny-ck", "--fractions", "0,0.5,1", "--epochs", "1", "--lr", "3e-3",
            "--data", data, "--capabilities", "typo", "--n", "8", "--trials", "1", "--out", str(tmp_path / "o"),
            "--quiet"]
    assert main(argv) == 0
    (run,) = list((tmp_path / "home" / "finetuned").iterdir())
    assert [p.name for p in list_checkpoints(run)] == ["checkpoint-000", "checkpoint-050", "checkpoint-100"]
    rows = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [r["checkpoint"] for r in rows if r["comparison"] == "vs_final"] == [
        "tiny-ck-checkpoint-000", "tiny-ck-checkpoint-050", "tiny-ck-checkpoint-100"]
    monkeypatch.setattr(ft, "finetune_classifier", lambda *a, **k: pytest.fail("trained again"))
    assert main(argv) == 0  # the fine-tune and the searches are reused


# ---------------------------------------------------------------- the packaged MiniLM-L3
@pytest.mark.slow
def test_minilm_l3_checkpoints_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(ft, "data_home", lambda: tmp_path / "home")  # keep the fine-tunes out of the user's cache
    out = tmp_path / "out"
    argv = ["checkpoints", "--finetune", "minilm-l3", "--n-train", "256", "--fractions", "0,0.5,1", "--epochs", "1",
            "--capabilities", "typo", "--n", "15", "--trials", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "results.json").read_text())
    final = [r for r in rows if r["comparison"] == "vs_final"]
    assert [r["percent"] for r in final] == [0, 50, 100]
    assert final[-1]["hard_scope"] == final[-1]["soft_scope"] == 1.0
    assert all(0 <= r["soft_scope"] <= r["hard_scope"] <= 1 for r in rows if r["hard_scope"] is not None)
    assert (out / "checkpoints_soft_scope.png").is_file()


def test_cli_on_text_pairs_searches_the_named_field(run_dir, tmp_path, capsys):
    data = marker_data(80, seed=3)
    path = tmp_path / "pairs.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gold", "first", "second"])
        for e in data.examples:
            w.writerow([e.label, "the report was finished", e.text])
    dirs = ",".join(str(run_dir / n) for n in ("checkpoint-000", "checkpoint-100"))
    out = tmp_path / "pairs"
    assert main(["checkpoints", "--checkpoints", dirs, "--data", str(path), "--text-fields", "first,second",
                 "--label-column", "gold", "--perturb-field", "b", "--capabilities", "typo", "--n", "8",
                 "--trials", "1", "--comparisons", "vs_final", "--out", str(out), "--quiet"]) == 0
    rows = json.loads((out / "results.json").read_text())
    final = next(r for r in rows if r["percent"] == 100)
    assert final["hard_scope"] == 1.0  # the final checkpoint against itself
    import sqlite3

    originals = [json.loads(json.loads(r)["original"]) for db in out.rglob("results.sqlite")
                 for (r,) in sqlite3.connect(db).execute("select result from cells where study='scope.search'")]
    assert originals and all(o[0] == "the report was finished" for o in originals)
    capsys.readouterr()
