"""Shared-invariance study: store writes, resume after a crash, reference-vs-itself, and the study
core under it: content-keyed resume (edited data, another model under the same name, a model
directory retrained in place), the directory lock, a corrupt or newer store, the Python API."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.lexicon import LexiconClassifier
from helpers.observe import count_cells
from perturblab.data import Dataset, Example
import perturblab as pl
from perturblab.errors import InputError
from perturblab.core.store import ResultStore
from perturblab.core.entry import run
from perturblab.studies.scope import ScopeArgs, ScopeStudy, summarise
from helpers.lexicon import make_splits, models


class Crashing:
    """Delegates to a classifier, raising after ``after`` calls (a simulated crash)."""

    def __init__(self, inner, after):
        self.inner, self.after, self.calls = inner, after, 0
        self.labels, self.fingerprint = inner.labels, inner.fingerprint

    def predict_proba(self, inputs):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("simulated crash")
        return self.inner.predict_proba(inputs)


def cfg(**kw):
    base = dict(reference="ref", targets="tgt,ref", capabilities="typo", n=30, trials=2, n_boot=200)
    base.update(kw)
    return ScopeArgs(**base)


def run_scope(args, out, **kw):
    """The SCoPE study of ``args`` run into ``out``; its result."""
    return run(ScopeStudy(args, **kw), out)


def test_reference_against_itself_scores_one(tmp_path):
    rows = run_scope(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False).rows
    self_rows = [r for r in rows if r["target"] == "ref"]
    assert self_rows and all(r["hard_scope"] == 1.0 and r["soft_scope"] == 1.0 for r in self_rows)
    assert all(r["iid_agreement"] == 1.0 and r["ood_agreement"] == 1.0 for r in self_rows)
    other = [r for r in rows if r["target"] == "tgt"]
    assert all(0 <= r["soft_scope"] <= r["hard_scope"] <= 1 for r in other)
    for key in ("reference", "target", "capability", "trial", "n", "gap_iid_acc",
                "iid_agreement", "ood_agreement", "hard_scope", "soft_scope"):
        assert key in rows[0]
    s = summarise(rows)
    assert {r["target"] for r in s} == {"ref", "tgt"} and all(r["trials"] == 2 for r in s)


def test_metrics_match_recomputation_from_store(tmp_path):
    from perturblab.measures import hard_scope, soft_scope

    st = run_scope(cfg(trials=1), tmp_path, models=models(), splits=make_splits(), progress=False)
    rows = st.rows
    row = next(r for r in rows if r["target"] == "tgt")
    pert = [r for r in st.perturbations if r["status"] == "perturbed"]
    m = models()
    x = [r["original"] for r in pert]
    xp = [r["perturbed"] for r in pert]
    P = [m["ref"].predict_proba(x), m["ref"].predict_proba(xp), m["tgt"].predict_proba(x),
         m["tgt"].predict_proba(xp)]
    assert row["hard_scope"] == pytest.approx(hard_scope(*P))
    assert row["soft_scope"] == pytest.approx(soft_scope(*P))
    assert row["n_perturbed"] == len(pert)


def test_resume_after_crash_gives_identical_rows(tmp_path):
    full = run_scope(cfg(), tmp_path / "full", models=models(), splits=make_splits(),
                      progress=False, chunk_size=8).rows
    ms = models()
    crashing = {"ref": Crashing(ms["ref"], after=12), "tgt": ms["tgt"]}
    with pytest.raises(RuntimeError):
        run_scope(cfg(), tmp_path / "resumed", models=crashing, splits=make_splits(),
                   progress=False, chunk_size=8).rows
    assert 0 < searches_stored(tmp_path / "resumed") < 60  # some chunks were written before the crash
    counting = models()
    resumed = run_scope(cfg(), tmp_path / "resumed", models=counting, splits=make_splits(),
                         progress=False, chunk_size=8).rows
    assert json.dumps(resumed, sort_keys=True, default=str) == json.dumps(full, sort_keys=True, default=str)
    assert searches_stored(tmp_path / "resumed") == 60  # 2 trials x 30 samples, no duplicates, none lost
    keys = [(r["capability"], r["trial"], r["sample_id"]) for r in resumed_study_records(tmp_path / "resumed")]
    assert len(keys) == len(set(keys)) == 60


def test_rerun_is_served_from_store(tmp_path):
    st1 = run_scope(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False)
    rows1 = st1.rows
    ms = models()
    rows2 = run_scope(cfg(), tmp_path, models=ms, splits=make_splits(), progress=False).rows
    assert rows1 == rows2 or json.dumps(rows1, default=str) == json.dumps(rows2, default=str)
    # no search happened: the reference was only asked for the base/perturbed outputs
    assert ms["ref"].inputs_scored <= 2 * 2 * 30 * 2


def searches_stored(out) -> int:
    return count_cells(out, "scope.search")


def resumed_study_records(out):
    st = run_scope(cfg(), out, models=models(), splits=make_splits(), progress=False)
    return st.perturbations


def test_a_run_id_is_never_reused_with_another_configuration(tmp_path):
    st = run_scope(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False)
    with ResultStore(tmp_path / "results.sqlite") as store:
        with pytest.raises(InputError):
            store.start_run(st.run_id, "scope", {"something": "else"})


def edited(splits, which):
    """The splits with ``EDITED `` before the test texts whose index is in ``which``."""
    from dataclasses import replace

    train, test = splits
    return train, Dataset([replace(e, text="EDITED " + e.text) if i in which else e
                           for i, e in enumerate(test.examples)], test.label_names)


def test_edited_data_recomputes_exactly_the_edited_samples(tmp_path):
    splits = make_splits()
    first = run_scope(cfg(), tmp_path / "d", models=models(), splits=splits, progress=False)
    before = searches_stored(tmp_path / "d")
    used = {r["sample_id"] for r in first.perturbations}
    which = set(sorted(used)[::3])  # a third of the samples the study used
    new_splits = edited(splits, which)
    again = run_scope(cfg(), tmp_path / "d", models=models(), splits=new_splits, progress=False)
    rows = again.rows
    # every perturbation of an edited sample is of the new text; the others are the old ones
    for r in again.perturbations:
        assert r["original"].startswith("EDITED ") == (r["sample_id"] in which)
    # exactly the edited samples were searched again (2 trials draw overlapping samples)
    n_edited = sum(1 for r in first.perturbations if r["sample_id"] in which)
    assert searches_stored(tmp_path / "d") == before + n_edited
    fresh = run_scope(cfg(), tmp_path / "fresh", models=models(), splits=new_splits, progress=False).rows
    assert json.dumps(rows, sort_keys=True) == json.dumps(fresh, sort_keys=True)


def test_another_model_under_the_same_name_is_not_served_stale_results(tmp_path):
    ms = models()
    run_scope(cfg(), tmp_path / "d", models=ms, splits=make_splits(), progress=False)
    other = {"ref": LexiconClassifier({"good": 3, "great": 0.5, "bad": -3, "awful": -0.5, "plot": 0.4},
                                      name="ref"), "tgt": ms["tgt"]}
    assert other["ref"].fingerprint != ms["ref"].fingerprint
    rows = run_scope(cfg(), tmp_path / "d", models=other, splits=make_splits(), progress=False).rows
    fresh = run_scope(cfg(), tmp_path / "fresh", models=other, splits=make_splits(), progress=False).rows
    assert json.dumps(rows, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    old = run_scope(cfg(), tmp_path / "old", models=ms, splits=make_splits(), progress=False).rows
    assert [r["ref_loss_mean"] for r in rows] != [r["ref_loss_mean"] for r in old]


def test_a_model_directory_retrained_in_place_is_recomputed(tmp_path):
    from helpers.tiny_classifier import WORDS as CLI_WORDS
    from helpers.tiny_classifier import tiny_model_dir

    rng = np.random.default_rng(0)
    examples = [Example(" ".join(["the", *rng.choice(CLI_WORDS[:15], size=6), "."]), i % 2) for i in range(60)]
    data = (Dataset(examples[:20], ["negative", "positive"]), Dataset(examples[20:], ["negative", "positive"]))
    model = tiny_model_dir(tmp_path / "model", seed=0)
    kw = dict(capabilities="typo", data=data, n=10, trials=1, quiet=True, n_boot=50)
    first = pl.scope(model, [model], out=tmp_path / "d", **kw)
    tiny_model_dir(tmp_path / "model", seed=1)  # "retrained": other weights in the same directory
    again = pl.scope(model, [model], out=tmp_path / "d", **kw)
    fresh = pl.scope(model, [model], out=tmp_path / "fresh", **kw)
    assert again.run_id != first.run_id
    assert json.dumps(again.rows, sort_keys=True) == json.dumps(fresh.rows, sort_keys=True)
    assert [r["ref_loss_mean"] for r in again.rows] != [r["ref_loss_mean"] for r in first.rows]


def test_a_second_process_on_the_same_directory_is_refused(tmp_path):
    import subprocess
    import sys

    from perturblab.core.lock import LockedError, output_lock

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from perturblab.core.lock import output_lock\n"
        f"with output_lock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError, match=f"pid {holder.pid}"):
            with output_lock(tmp_path):
                pass
        with pytest.raises(LockedError):
            run_scope(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False)
        assert not (tmp_path / "results.sqlite").exists()  # refused before anything was written
    finally:
        holder.kill()
        holder.wait()
    with output_lock(tmp_path):  # free again once the holder is gone (even killed)
        with output_lock(tmp_path):  # and the same process may take it again
            pass


def test_a_corrupt_or_newer_store_is_one_clear_error(tmp_path):
    import sqlite3

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="is not a readable results store.*move it away"):
        run_scope(cfg(), tmp_path / "bad", models=models(), splits=make_splits(), progress=False)
    run_scope(cfg(trials=1), tmp_path / "new", models=models(), splits=make_splits(), progress=False)
    con = sqlite3.connect(tmp_path / "new" / "results.sqlite")
    with con:
        con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.close()
    with pytest.raises(InputError, match="newer perturblab.*schema 99"):
        ResultStore(tmp_path / "new" / "results.sqlite")


def test_python_api_save_writes_what_the_cli_writes(tmp_path):
    """pl.scope(...).save(dir) and `perturblab scope` give the same files, byte for byte (but the
    metrics table's run id column and the figures' bytes, which hold no numbers of their own)."""
    from helpers.tiny_classifier import WORDS as CLI_WORDS
    from helpers.tiny_classifier import tiny_model_dir

    from perturblab.cli import main

    a, b = tiny_model_dir(tmp_path / "a", 0), tiny_model_dir(tmp_path / "b", 1)
    rng = np.random.default_rng(0)
    lines = ["text,label"] + [f"the {' '.join(rng.choice(CLI_WORDS[:15], size=7))} .,{'pos' if i % 2 else 'neg'}"
                              for i in range(60)]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    argv = ["--reference", a, "--targets", b, "--capabilities", "typo,synonym", "--data", str(tmp_path / "data.csv"),
            "--n", "8", "--trials", "2"]
    assert main(["scope", *argv, "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    res = pl.scope(a, b, capabilities="typo,synonym", data=str(tmp_path / "data.csv"), n=8, trials=2, quiet=True)
    written = res.save(tmp_path / "api")
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir() if not p.name.endswith((".sqlite", ".lock"))
                       and not p.name.startswith(".") and "sqlite" not in p.name)
    assert sorted(p.name for p in written) == cli_files
    for name in cli_files:
        if name.endswith(".png"):
            continue
        left, right = (tmp_path / "cli" / name).read_text(), (tmp_path / "api" / name).read_text()
        if name == "metrics.csv":  # the first column is the run id: the API ran in a temporary directory
            left, right = [[line.split(",", 1)[1] for line in t.splitlines()] for t in (left, right)]
        assert left == right, name
    assert len(res.to_pandas()) == len(res.rows) == 4 and res.summary[0]["n"] == 8


def test_store_holds_the_rows_of_each_run(tmp_path):
    st = run_scope(cfg(trials=1), tmp_path, models=models(), splits=make_splits(), progress=False)
    rows = st.rows
    with ResultStore(tmp_path / "results.sqlite") as store:
        assert store.schema_version == 2
        assert json.dumps(store.rows(st.run_id), sort_keys=True) == json.dumps(
            [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in rows], sort_keys=True)


def test_outputs_get_the_usual_file_mode_and_another_thread_is_refused(tmp_path):
    import os
    import threading

    from perturblab.core.files import write_json
    from perturblab.core.lock import LockedError, output_lock

    old = os.umask(0o022)
    try:
        path = write_json(tmp_path / "r.json", {"x": float("nan")})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644 and json.loads(path.read_text()) == {"x": None}
    errors = []
    with output_lock(tmp_path):
        def other():
            try:
                with output_lock(tmp_path):
                    errors.append(None)
            except LockedError as e:
                errors.append(e)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert isinstance(errors[0], LockedError) and "another thread" in str(errors[0])
    with output_lock(tmp_path):  # free again afterwards
        pass


def test_allow_non_alphabetic_reaches_the_search_and_its_key(tmp_path):
    """Numbers are the only words of four letters or more here, so the alphabetic-only constraint
    (our addition, default on) leaves nothing to change; dropping it lets the typo search swap
    their middle digits, and the searches are keyed anew (none served from the default run)."""
    names = ["negative", "positive"]
    data = [Example(text=f"the {1234 + 111 * i} and {5678 + 7 * i} .", label=i % 2, uid=str(i))
            for i in range(30)]
    splits = (Dataset(data[:10], names), Dataset(data[10:], names))
    on = run_scope(cfg(targets="ref", n=8, trials=1), tmp_path, models=models(), splits=splits, progress=False)
    assert searches_stored(tmp_path) == 8
    assert not any(r["status"] == "perturbed" for r in on.perturbations)
    off_cfg = cfg(targets="ref", n=8, trials=1, allow_non_alphabetic=True)
    default_opts = cfg(targets="ref", n=8, trials=1).search_settings().key("typo")
    assert "alphabetic_only" not in default_opts  # the default keeps earlier results' keys
    assert off_cfg.search_settings().key("typo") == {**default_opts, "alphabetic_only": False}
    off = run_scope(off_cfg, tmp_path, models=models(), splits=splits, progress=False)
    assert searches_stored(tmp_path) == 16  # 8 new searches, the default run's 8 kept
    pert = [r for r in off.perturbations if r["status"] == "perturbed"]
    assert len(pert) == 8
    for r in pert:  # only number tokens change, by a swap of two neighbouring middle digits
        changed = [(a, b) for a, b in zip(r["original"].split(), r["perturbed"].split()) if a != b]
        assert changed and all(a.isdigit() and a[0] == b[0] and a[-1] == b[-1] and sorted(a) == sorted(b)
                               for a, b in changed)


def test_allow_non_alphabetic_on_the_command_line_and_in_a_config():
    from perturblab.cli import parse_args
    from perturblab.studies.scope.config import CheckpointsArgs, LMScopeArgs, ScopeArgs

    base = ["--reference", "a", "--targets", "b", "--out", "o"]
    assert parse_args(["scope", *base]).allow_non_alphabetic is False
    assert parse_args(["scope", *base, "--allow-non-alphabetic"]).allow_non_alphabetic is True
    assert parse_args(["scope-lm", *base, "--allow-non-alphabetic"]).allow_non_alphabetic is True
    ck = parse_args(["checkpoints", "--checkpoints", "a,b", "--out", "o", "--allow-non-alphabetic"])
    assert ck.allow_non_alphabetic is True
    for args in (ScopeArgs, LMScopeArgs):
        entry = args.from_config({"reference": "a", "targets": "b", "allow-non-alphabetic": True})
        assert entry.kwargs()["allow_non_alphabetic"] is True
    assert CheckpointsArgs.from_config({"checkpoints": "a,b"}).kwargs()["allow_non_alphabetic"] is False


def test_agreement_accuracy_gap_and_the_invariances_not_shared_follow_the_predictions(tmp_path):
    """The agreement and the signed accuracy gap recomputed from the models on the base samples;
    the examples of invariances not shared are exactly those Hard-SCoPE counts, with the
    predictions the models give; the headline and the CSV carry them."""
    st = run_scope(cfg(trials=1, capabilities="synonym"), tmp_path, models=models(), splits=make_splits(),
                   progress=False)
    row = next(r for r in st.rows if r["target"] == "tgt")
    m, (_, test) = models(), make_splits()
    label = {ex.text: ex.label for ex in test}
    base = [r["original"] for r in st.perturbations]
    assert len(base) == row["n"] == 30
    ref = m["ref"].predict_proba(base).argmax(1)
    tgt = m["tgt"].predict_proba(base).argmax(1)
    y = np.array([label[t] for t in base])
    assert row["iid_agreement"] == pytest.approx(np.mean(ref == tgt))
    assert row["acc_diff"] == pytest.approx(np.mean(tgt == y) - np.mean(ref == y))
    assert row["gap_iid_acc"] == pytest.approx(abs(row["acc_diff"]))
    for key in ("iid_agreement", "acc_diff"):
        low, high = row[key + "_ci"]
        assert low <= row[key] <= high
    self_row = next(r for r in st.rows if r["target"] == "ref")
    assert self_row["iid_agreement_ci"] == [1.0, 1.0] and self_row["acc_diff_ci"] == [0.0, 0.0]  # exact: itself

    names = ["negative", "positive"]
    for r in (r for r in st.perturbations if r["status"] == "perturbed"):
        for who in ("ref", "tgt"):
            probs = m[who].predict_proba([r["original"], r["perturbed"]])
            assert r["predictions"][who] == [names[k] for k in probs.argmax(1)]
    broken = st.broken("tgt", "synonym", k=10_000)
    assert len(broken) == round(row["n_ref_invariant"] * (1 - row["hard_scope"])) > 0, row
    assert all(b["target"][0] != b["target"][1] for b in broken)
    assert st.broken("tgt", "synonym", k=1) == broken[:1] and st.broken("ref", "synonym") == []

    estimates = {(e.subject, e.key): e for e in st.headline().estimates}
    agree, gap = estimates[("tgt", "agreement")], estimates[("tgt", "accuracy_gap")]
    assert (agree.value, [agree.low, agree.high], agree.n) == (row["iid_agreement"], row["iid_agreement_ci"], 30)
    assert (gap.value, [gap.low, gap.high]) == (row["acc_diff"], row["acc_diff_ci"])

    st.save(tmp_path / "saved")
    import csv
    lines = list(csv.DictReader(open(tmp_path / "saved" / "perturbed_examples.csv", encoding="utf-8")))
    shown = next(line for line in lines if line["status"] == "perturbed")
    first = next(r for r in st.perturbations if r["status"] == "perturbed")
    assert shown["predictions"] == "; ".join(f"{w}: {a} → {b}" for w, (a, b) in first["predictions"].items())


def test_the_accuracy_gap_is_a_paired_ratio_of_counts():
    """Language models: accuracy is Σ correct / Σ scored tokens, and a resample keeps each text's
    pair of counts together: with two texts every replicate is 1 − 6/8, 1 − 4/6 or 1 − 2/4."""
    from perturblab.studies.scope.analysis import agreement_and_accuracy

    agree_ci, diff, diff_ci = agreement_and_accuracy([1, 0], [3, 1], [4, 2], [4, 2], [4, 2], n_boot=300, seed=0)
    assert diff == pytest.approx(1 - 4 / 6)
    assert 0.25 - 1e-12 <= diff_ci[0] < diff_ci[1] <= 0.5 + 1e-12
    # the agreement's Wilson interval of 1 of 2: 0.5 ± 1.96·√(0.25/2 + 1.96²/16) / (1 + 1.96²/2)
    z = 1.959963984540054
    half = z * (0.25 / 2 + z * z / 16) ** 0.5 / (1 + z * z / 2)
    assert agree_ci == pytest.approx([0.5 - half, 0.5 + half], abs=1e-12)
    none = agreement_and_accuracy([1, 1, 0], None, None, None, None, n_boot=50, seed=0)
    assert np.isnan(none[1]) and np.isnan(none[2]).all() and 0 <= none[0][0] <= none[0][1] <= 1


def test_search_order_reaches_the_search_and_its_key(tmp_path):
    """``search_order="saliency"`` is keyed apart from the default (whose key is unchanged) and
    reaches the search: one leave-one-out deletion per word instead of every typo candidate first
    scores fewer texts, and the CLI and a config file read the option."""
    from perturblab.cli import parse_args

    class Counting:
        def __init__(self, inner):
            self.inner, self.labels, self.fingerprint, self.texts = inner, inner.labels, inner.fingerprint, 0

        def predict_proba(self, inputs):
            self.texts += len(inputs)
            return self.inner.predict_proba(inputs)

    default = cfg(targets="ref", n=20, trials=1).search_settings().key("typo")
    assert "order" not in default  # the default keeps earlier results' keys
    assert cfg(targets="ref", search_order="saliency").search_settings().key("typo") == {**default, "order": "saliency"}
    scored, rows = {}, {}
    for order in ("best-swap", "saliency"):
        ref = Counting(models()["ref"])
        res = run_scope(cfg(targets="ref", n=20, trials=1, search_order=order), tmp_path / order, models={"ref": ref},
                        splits=make_splits(), progress=False)
        scored[order], rows[order] = ref.texts, res.perturbations
        assert searches_stored(tmp_path / order) == 20
    assert scored["saliency"] < 0.8 * scored["best-swap"]
    assert sum(r["status"] == "perturbed" for r in rows["saliency"]) > 0
    base = ["--reference", "a", "--targets", "b", "--out", "o"]
    assert parse_args(["scope", *base]).search_order == "best-swap"
    assert parse_args(["scope-lm", *base, "--search-order", "saliency"]).search_order == "saliency"
    entry = ScopeArgs.from_config({"reference": "a", "targets": "b", "search-order": "saliency"})
    assert entry.kwargs()["search_order"] == "saliency"


def test_a_larger_n_computes_only_the_new_samples(tmp_path):
    """The base samples of n = 10 are among those of n = 20 (nested draws), so the second run finds
    the first run's searches in the store and adds exactly as many again (one search per sample)."""
    run_scope(cfg(n=10, trials=2), tmp_path, models=models(), splits=make_splits(), progress=False)
    first = searches_stored(tmp_path)
    run_scope(cfg(n=20, trials=2), tmp_path, models=models(), splits=make_splits(), progress=False)
    assert first == 2 * 10 and searches_stored(tmp_path) == 2 * 20
    small, large = (ScopeStudy(cfg(n=n, trials=2), models=models(), splits=make_splits()) for n in (10, 20))
    for trial in (0, 1):
        assert {i for i, _ in small.base_samples(trial)} < {i for i, _ in large.base_samples(trial)}


def test_each_searched_sample_carries_its_gold_label(tmp_path):
    splits = make_splits()
    res = run_scope(cfg(), tmp_path, models=models(), splits=splits, progress=False)
    test = splits[1]
    done = [r for r in res.perturbations if r.get("predictions")]
    assert done and all(r["gold"] == test.label_names[test[r["sample_id"]].label] for r in done)
