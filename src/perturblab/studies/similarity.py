"""Layer × layer representation similarity of two models on the same inputs.

``perturblab similarity --a minilm-l6 --b minilm-l3 --data rotten_tomatoes`` runs
:func:`compare_models`: it samples the inputs, streams both models' pooled states of every
layer through the on-disk state cache (:mod:`perturblab.models.states`), computes the
requested measures for every pair of layers with :func:`~perturblab.measures.layerwise.similarity_matrix`
(each layer prepared once) and writes

* ``results.sqlite`` — the ``similarities`` table, keyed on both models' fingerprints, the
  inputs' hash, the pooling and the measure: a comparison already made is read back, not
  recomputed (only missing measures are computed);
* ``results.json`` — one row per measure × layer pair: ``a, b, layer_a, layer_b, measure,
  kind, value, n, pooling_a, pooling_b``;
* ``heatmap_<measure>.png`` — the layer × layer matrix of each measure.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from ..measures.layerwise import resolve_measures, similarity_matrix
from ..measures.similarity import INFO
from ..models.base import Pooling, TextInput
from ..models.states import inputs_hash, layer_states
from ..store import ResultStore
from .inputs import study_inputs

log = logging.getLogger(__name__)
DEFAULT_MEASURES = ("linear_cka", "pwcca_distance", "procrustes_distance")


@dataclass(kw_only=True)
class SimilarityConfig:
    """Which models, inputs and measures :func:`compare_models` uses."""

    a: str
    b: str
    data: str = "rotten_tomatoes"
    n: int = 2000
    seed: int = 0
    measures: Sequence[str] = DEFAULT_MEASURES
    pooling: Pooling = "mean"
    pooling_b: Pooling | None = None  # default: same as pooling
    chunk_size: int = 1000
    extra: dict[str, Any] = field(default_factory=dict)


def similarity_rows(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], measures: Sequence[str], *,
                    pooling_a: Pooling = "mean", pooling_b: Pooling = "mean", store: ResultStore | None = None,
                    chunk_size: int = 1000, progress: bool = True, name_a: str | None = None,
                    name_b: str | None = None) -> list[dict[str, Any]]:
    """Every layer pair of two encoders under ``measures`` (computing only what ``store`` lacks)."""
    names = resolve_measures(measures)
    key = {"a_fp": enc_a.fingerprint, "b_fp": enc_b.fingerprint, "inputs": inputs_hash(inputs),
           "pooling": f"{pooling_a}|{pooling_b}"}
    name_a = name_a or getattr(enc_a, "name", "a")
    name_b = name_b or getattr(enc_b, "name", "b")
    cells = (enc_a.num_layers + 1) * (enc_b.num_layers + 1)
    have = {} if store is None else {m: store.similarities(**key, measure=m) for m in names}
    missing = [m for m in names if len(have.get(m, [])) < cells]
    if missing:
        la = layer_states(enc_a, inputs, pooling_a, chunk_size=chunk_size, progress=progress)
        lb = layer_states(enc_b, inputs, pooling_b, chunk_size=chunk_size, progress=progress)
        log.info("comparing %d x %d layers under %s", len(la), len(lb), ", ".join(missing))
        mats = similarity_matrix(la, lb, missing)
        new = [dict(key, measure=m, layer_a=i, layer_b=j, a=name_a, b=name_b, n=len(inputs), value=float(v))
               for m, mat in mats.items() for (i, j), v in np.ndenumerate(mat)]
        if store is not None:
            store.add_similarities(new)
        for m in missing:
            have[m] = [r for r in new if r["measure"] == m]
    return [{"a": name_a, "b": name_b, "layer_a": r["layer_a"], "layer_b": r["layer_b"], "measure": m,
             "kind": INFO[m].kind, "value": r["value"], "n": r["n"], "pooling_a": pooling_a, "pooling_b": pooling_b}
            for m in names for r in sorted(have[m], key=lambda r: (r["layer_a"], r["layer_b"]))]


def streamed_minibatch_cka(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], *, pooling_a: Pooling = "mean",
                           pooling_b: Pooling = "mean", batch_size: int = 500, progress: bool = True) -> Any:
    """(layers_a, layers_b) minibatch linear CKA (Nguyen et al. 2021) of two encoders over any
    number of inputs: both models encode one minibatch of inputs at a time, in input order,
    and only the HSIC sums are kept, so memory does not grow with n."""
    from ..measures.cka import MinibatchCKA
    from ..models.states import iter_layer_states

    it_a = iter_layer_states(enc_a, inputs, pooling_a, chunk_size=batch_size, cache=False, progress=progress)
    it_b = iter_layer_states(enc_b, inputs, pooling_b, chunk_size=batch_size, cache=False, progress=False)
    acc = None
    for (rows_a, xa), (rows_b, xb) in zip(it_a, it_b):
        assert rows_a == rows_b
        if rows_a.stop - rows_a.start < 4:
            log.info("skipping a final minibatch of %d inputs (the unbiased HSIC needs 4)", rows_a.stop - rows_a.start)
            continue
        acc = acc or MinibatchCKA(len(xa), len(xb))
        acc.update(xa, xb)
    if acc is None:
        raise InputError("no minibatch of at least 4 inputs; give more inputs or a larger batch_size")
    return acc.value()


def compare_models(config: SimilarityConfig, out_dir: str | Path, *, progress: bool = True,
                   plots: bool = True) -> list[dict[str, Any]]:
    """Run the layer × layer comparison of ``config`` and write its outputs to ``out_dir``."""
    from ..models.presets import load_encoder

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    measures = resolve_measures(config.measures)
    inputs = study_inputs(config.data, config.n, config.seed)
    enc_a, enc_b = load_encoder(config.a), load_encoder(config.b)
    with ResultStore(out / "results.sqlite") as store:
        rows = similarity_rows(enc_a, enc_b, inputs, measures, pooling_a=config.pooling,
                               pooling_b=config.pooling_b or config.pooling, store=store,
                               chunk_size=config.chunk_size, progress=progress, name_a=config.a, name_b=config.b)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    if plots:
        from ..report.similarity_plots import layer_heatmaps

        layer_heatmaps(rows, out)
    return rows
