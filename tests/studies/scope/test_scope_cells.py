"""The cells of the SCoPE study: a prediction cell stores the array its model returned, bit for
bit; every cell scores batches made from its own inputs, so a model whose scores move with the
batch gives the same study whatever its prediction cache held before and in whatever order or
number at once the cells ran; and the predictions are stored and resumed like the searches."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.lexicon import LexiconClassifier, make_splits, models

from perturblab.core.driver import run_study
from perturblab.core.executor import LocalExecutor
from perturblab.models.cache import CachedClassifier
from perturblab.studies.scope import ScopeArgs, ScopeStudy
from perturblab.studies.scope.cells import cell_scorer, predict_cell, probabilities


class BatchSensitive(LexiconClassifier):
    """A lexicon classifier whose scores move with the size of the batch they are computed in (as
    a transformer's last bits do with padding and matrix shapes, here by 1e-4 per row, so that a
    difference shows in every digit a test reads)."""

    def predict_proba(self, inputs):
        inputs = list(inputs)
        p = super().predict_proba(inputs)[:, 1]
        p = np.clip(p + 1e-4 * len(inputs), 0.0, 1.0)
        return np.stack([1 - p, p], axis=1)


def _models():
    ref, tgt = models()["ref"], models()["tgt"]
    return {name: BatchSensitive(m.weights, m.bias, name=name) for name, m in (("ref", ref), ("tgt", tgt))}


ARGS = ScopeArgs(reference="ref", targets="tgt", capabilities="typo,synonym", n=24, trials=2, n_boot=30)


def test_a_prediction_cell_reads_back_the_array_its_model_returned():
    lexicon = models()["ref"]
    texts = ["a good film", "an awful plot", "a good film"]
    for model, dtype in ((lexicon, np.float64), (CachedClassifier(lexicon), np.float32)):
        want = np.asarray(cell_scorer(model).predict_proba(texts))
        stored = json.loads(json.dumps(predict_cell(model, texts)))  # as the results store keeps it
        got = probabilities(stored)
        assert got.dtype == dtype and got.shape == (3, 2)
        assert got.tobytes() == want.tobytes()
    pair = predict_cell(lexicon, [["a good film", "a bad plot"]])  # a pair arrives as a JSON list
    assert probabilities(pair).tobytes() == lexicon.predict_proba([("a good film", "a bad plot")]).tobytes()


def test_a_cell_never_reads_what_the_driver_cached_from_another_batch():
    sensitive = _models()["ref"]
    driver = CachedClassifier(sensitive)
    driver.predict_proba(["a good film"])  # scored alone: +1e-4
    fresh = cell_scorer(driver)
    assert fresh is not driver and len(fresh) == 0
    together = fresh.predict_proba(["a good film", "an awful plot"])  # both in one batch: +2e-4
    assert together[0, 1] == pytest.approx(driver.predict_proba(["a good film"])[0, 1] + 1e-4, abs=1e-7)


def _study(models=None):
    return ScopeStudy(ARGS, models=models or _models(), splits=make_splits(), progress=False, chunk_size=8)


def _outputs(result):
    return json.dumps(result.rows, sort_keys=True, default=str), json.dumps(result.perturbations, sort_keys=True,
                                                                           default=str)


def test_batch_sensitive_models_give_one_study_whatever_ran_before_and_in_any_order(tmp_path):
    """A fresh run; a run whose models' caches already hold every text scored in other batches;
    a run of four cells at once: the same rows and records, to the last bit."""
    first = run_study(_study(), tmp_path / "a", progress=False)

    warm = {name: CachedClassifier(m) for name, m in _models().items()}
    _, test = make_splits()
    for m in warm.values():  # every test text, scored once in one big batch
        m.predict_proba([ex.text for ex in test])
    warmed = run_study(_study({**warm}), tmp_path / "b", progress=False)
    warm_again = run_study(_study({name: CachedClassifier(m) for name, m in _models().items()}), tmp_path / "c",
                           executor=LocalExecutor(4), progress=False)
    assert _outputs(first) == _outputs(run_study(_study(), tmp_path / "d", executor=LocalExecutor(4), progress=False))
    assert _outputs(warmed) == _outputs(warm_again)  # given cached models: float32, whatever they held
    assert all(abs(a["soft_scope"] - b["soft_scope"]) < 1e-6 for a, b in zip(first.rows, warmed.rows))


def test_predictions_are_stored_and_a_second_run_scores_nothing(tmp_path):
    counted = _models()
    run_study(_study(counted), tmp_path / "out", progress=False)
    assert sum(m.calls for m in counted.values()) > 0
    again = _models()
    second = _study(again)
    run_study(second, tmp_path / "out", progress=False)
    assert sum(m.calls for m in again.values()) == 0  # the searches and the predictions read back
    # one cell per model for each trial's base samples and each capability's finds
    keys = second._prediction_keys
    assert {k[:1] for k in keys} == {("ref",), ("tgt",)}
    assert {k[1:] for k in keys} >= {(0,), (1,), ("typo", 0), ("typo", 1)}
