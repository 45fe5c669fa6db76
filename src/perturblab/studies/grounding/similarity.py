"""Layer × layer representation similarity of two models on the same inputs.

``perturblab similarity --a minilm-l6 --b minilm-l3 --data rotten_tomatoes`` runs
:class:`SimilarityStudy`: it samples the inputs, streams both models' pooled states of every
layer through the on-disk state cache (:mod:`perturblab.models.states`), computes the
requested measures for every pair of layers with :func:`~perturblab.measures.layerwise.similarity_matrix`
(each layer prepared once) and writes

* ``results.sqlite`` — every layer × layer matrix of one measure, stored under both models'
  fingerprints, the inputs, the poolings and the measure: a comparison already made is read
  back, not recomputed (only missing measures are computed);
* ``results.json`` — one row per measure × layer pair: ``a, b, layer_a, layer_b, measure,
  kind, value, n, pooling_a, pooling_b``;
* ``heatmap_<measure>.png`` — the layer × layer matrix of each measure.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.files import write_json
from ...core.headline import Estimate, Headline
from ...core.keys import content_key, model_fingerprint
from ...core.study import Phase, RunContext, Study, StudyResult, Task
from ...errors import InputError
from ...measures.layerwise import resolve_measures, similarity_matrix
from ...measures.similarity import CCA_MEASURES, INFO, cca_forced_count, check_cca_size, measure_key
from ...models.base import Pooling, TextInput
from ...models.states import inputs_hash, layer_states
from ..inputs import study_inputs
from ..names import reported_name
from ..remote import RemoteLoad, loaded
from .compare import LAYERS
from .config import SimilarityArgs

log = logging.getLogger(__name__)


def similarity_rows(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], measures: Sequence[str], *,
                    pooling_a: Pooling = "mean", pooling_b: Pooling = "mean", chunk_size: int = 1000,
                    progress: bool = True, name_a: str | None = None, name_b: str | None = None,
                    matrices: dict[str, list[list[float]]] | None = None) -> list[dict[str, Any]]:
    """Every layer pair of two encoders under ``measures``: one row per measure × layer pair
    (``matrices`` gives measures computed before, by name; the others are computed)."""
    names = resolve_measures(measures)
    have = dict(matrices or {})
    missing = [m for m in names if m not in have]
    if missing:
        have.update(_matrices(enc_a, enc_b, inputs, missing, pooling_a, pooling_b, chunk_size, progress))
    name_a = name_a or getattr(enc_a, "name", "a")
    name_b = name_b or getattr(enc_b, "name", "b")
    return [{"a": name_a, "b": name_b, "layer_a": i, "layer_b": j, "measure": m, "kind": INFO[m].kind,
             "value": float(v), "n": len(inputs), "pooling_a": pooling_a, "pooling_b": pooling_b}
            for m in names for (i, j), v in np.ndenumerate(np.asarray(have[m], dtype=float))]


def _matrices(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], measures: Sequence[str], pooling_a: Pooling,
              pooling_b: Pooling, chunk_size: int, progress: bool) -> dict[str, list[list[float]]]:
    """The layer × layer matrix of each measure (both models' states read once, through the
    on-disk state cache)."""
    la = layer_states(enc_a, inputs, pooling_a, chunk_size=chunk_size, progress=progress)
    lb = layer_states(enc_b, inputs, pooling_b, chunk_size=chunk_size, progress=progress)
    log.debug("comparing %d x %d layers under %s", len(la), len(lb), ", ".join(measures))
    return {m: np.asarray(mat, dtype=float).tolist() for m, mat in similarity_matrix(la, lb, list(measures)).items()}


class SimilarityStudy(Study):
    """Layer × layer representation similarity of two models on the same inputs (the
    ``similarity`` command): CKA, CCA, PWCCA, Procrustes … for every pair of layers.

    ``a`` and ``b`` are encoder specs (encoder or language-model presets, ``.gguf`` files,
    directories, hub ids) or :class:`~perturblab.models.base.Encoder` objects (one object given
    as both compares it with itself, under its one name); ``data`` a data set, file or corpus
    (``text_column`` / ``text_fields`` name a file's text column(s)).

    Example (a tiny encoder against itself: linear CKA 1 on the same layer)::

        >>> import numpy as np, perturblab as pl
        >>> class Words:  # an encoder of its own: two layers from word counts
        ...     fingerprint, num_layers, name = "doctest-words-v3", 1, "words"
        ...     def hidden_states(self, inputs, pooling="mean"):
        ...         x = np.array([[t.count(w) for w in ("a", "e", "o", " ")] for t in inputs], float)
        ...         return [x, np.sqrt(x) + x ** 2]
        >>> texts = [f"text number {i} says {'a' * (i % 5)} and {'o' * (i % 3)}" for i in range(40)]
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
        >>> _ = path.write_text("\\n\\n".join(texts))
        >>> words = Words()
        >>> res = pl.similarity(words, words, data=str(path), n=30, measures="cka", quiet=True)
        >>> [round(r["value"], 6) for r in res.rows if r["layer_a"] == r["layer_b"]]
        [1.0, 1.0]
        >>> {(r["a"], r["b"]) for r in res.rows}
        {('words', 'words')}

    (The study: one task per measure, keyed on both encoders' fingerprints, the inputs and the
    poolings; the missing measures are computed together. ``encoders`` are ready objects by
    name, ``args.a`` / ``args.b``; the others are loaded.)
    """

    name = command = "similarity"
    help = "layer x layer representation similarity of two models"
    Args = SimilarityArgs
    part = LAYERS
    example = dict(a="minilm-l3", b="minilm-l6", measures="cka", n=40)

    @classmethod
    def of(cls, args: SimilarityArgs, inputs: Inputs) -> "SimilarityStudy":
        if "data" in inputs.data:
            raise InputError(f"--data: give a data set name, a file or a corpus, not a "
                             f"{type(inputs.data['data']).__name__} object")
        return cls(args, encoders=inputs.models, progress=not args.quiet)

    def __init__(self, args: SimilarityArgs, *, encoders: dict[str, Any] | None = None,
                 progress: bool = True) -> None:
        self.args, self._given, self.progress = args, dict(encoders or {}), progress
        self.measures = resolve_measures(args.measure_list())

    def prepare(self, ctx: RunContext) -> None:
        from ...models.resolve import load_model

        args = self.args
        self.inputs = study_inputs(args.data, args.n, args.seed, text_fields=args.text_field_list())
        self.encoders = []
        for name in (str(args.a), str(args.b)):
            if name in self._given:
                self.encoders.append(self._given[name])
            else:
                with ctx.step(f"loading encoder {name}"):
                    self.encoders.append(load_model(name, "encoder"))
        self.poolings = (args.pooling, args.pooling_b or args.pooling)
        widths = [getattr(e, "hidden_size", None) for e in self.encoders]
        if all(widths):  # before any encoding: a CCA measure the inputs cannot support is refused here
            for m in self.measures:
                self._check_cca_inputs(m, int(widths[0]), int(widths[1]))

    def _check_cca_inputs(self, measure: str, wa: int, wb: int) -> None:
        """Refuse the CCA ``measure`` when the inputs cannot hold representations of widths ``wa``
        and ``wb`` (:func:`~perturblab.measures.similarity.check_cca_size`); when the data holds
        fewer inputs than that needs, the refusal says so and asks for more data, not a larger
        ``--n`` the data cannot give."""
        n, args = len(self.inputs), self.args
        forced = cca_forced_count(wa, wb, n) if measure in CCA_MEASURES else 0
        if forced:
            need = wa + wb + 1
            held = n if n < args.n else len(study_inputs(args.data, need, args.seed,
                                                         text_fields=args.text_field_list()))
            if held < need:
                raise InputError(f"--data {args.data}: holds {held} inputs, and {measure} needs at least {need} for "
                                 f"representations of {wa} and {wb} dimensions (with {n}, {forced} of the canonical "
                                 f"correlations are 1 whatever the models); give data of at least {need} inputs, or "
                                 "measures without CCA (--measures cka,procrustes)")
        check_cca_size(measure, n, wa, wb)

    def identity(self) -> dict[str, Any]:
        return {"options": self.args.study_options(),
                "models": [model_fingerprint(e) for e in self.encoders], "inputs": inputs_hash(self.inputs)}

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        enc_a, enc_b = self.encoders
        base = [model_fingerprint(enc_a), model_fingerprint(enc_b), inputs_hash(self.inputs), len(self.inputs),
                *self.poolings]
        self._keys = {m: content_key("similarity", *base, measure_key(m)) for m in self.measures}
        remote = ctx.executor.name != "local"
        # a local cell computes with the loaded encoders; a remote one loads them from their specs
        handles = [RemoteLoad(name, "encoder", model_fingerprint(e)) if remote and name not in self._given else e
                   for name, e in zip((str(self.args.a), str(self.args.b)), self.encoders)]
        compute = partial(_matrix_cell, *handles, self.inputs, self.poolings, self.args.chunk_size,
                          self.progress and not remote)
        self._phase = Phase("similarity.matrix", [Task(k, m) for m, k in self._keys.items()], compute,
                            batch_size=len(self.measures), label="layer x layer comparisons")
        yield self._phase

    def finish(self, ctx: RunContext) -> "SimilarityResult":
        matrices = {m: self._phase.results[k] for m, k in self._keys.items()}
        rows = similarity_rows(*self.encoders, self.inputs, self.measures, pooling_a=self.poolings[0],
                               pooling_b=self.poolings[1], name_a=reported_name(self.args.a, self._given),
                               name_b=reported_name(self.args.b, self._given), matrices=matrices)
        return SimilarityResult(rows, run_id=ctx.run_id)


def _matrix_cell(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], poolings: tuple[Pooling, Pooling],
                 chunk_size: int, progress: bool, group: Any, measures: list[str]) -> list[list[list[float]]]:
    """Every measure's layer x layer matrix of the two encoders (either a
    :class:`~..remote.RemoteLoad`: loaded once in this process)."""
    mats = _matrices(loaded(enc_a), loaded(enc_b), inputs, measures, poolings[0], poolings[1], chunk_size, progress)
    return [mats[m] for m in measures]


class SimilarityResult(StudyResult):
    """The result of :func:`perturblab.similarity`: one row per measure × layer pair (``a, b,
    layer_a, layer_b, measure, kind, value, n, pooling_a, pooling_b``); :meth:`figures` the
    layer × layer heatmaps."""

    study = "similarity"

    def table(self) -> str:
        """Each measure's same-index layers, one line per measure."""
        lines = []
        for m in dict.fromkeys(r["measure"] for r in self.rows):
            diag = [r for r in self.rows if r["measure"] == m and r["layer_a"] == r["layer_b"]]
            lines.append(f"{m:22s} same-index layers: " + " ".join(f"{r['layer_a']}:{r['value']:.3f}" for r in diag))
        return "\n".join(lines)

    def headline(self) -> Headline:
        """Per measure, the value between the two models' last layers (no interval: one value over
        the n inputs)."""
        estimates = []
        for m in dict.fromkeys(r["measure"] for r in self.rows):
            rows = [r for r in self.rows if r["measure"] == m]
            la, lb = max(r["layer_a"] for r in rows), max(r["layer_b"] for r in rows)
            r = next(r for r in rows if (r["layer_a"], r["layer_b"]) == (la, lb))
            estimates.append(Estimate(
                f"{r['a']} vs {r['b']}", f"{m.replace('_', ' ')} ({r['kind']}), last layers {la} and {lb}", r["value"],
                n=r.get("n"), interval="no interval (one value over the inputs)",
                better="higher" if r["kind"] == "similarity" else "lower", key=m))
        return Headline(
            "How alike the two models' last-layer representations of the same inputs are, by each measure "
            "(a similarity is 1 and a distance 0 for representations its measure cannot tell apart); the "
            "heatmaps below give every pair of layers. n: the inputs.", estimates)

    def figures(self) -> dict[str, Any]:
        """``heatmap_<measure>.png`` -> figure."""
        from ...report.layer_plots import layer_heatmap_figures

        return layer_heatmap_figures(self.rows)

    def save(self, out: str | Path) -> list[Path]:
        """``results.json`` and the heatmaps, each written atomically."""
        from ...report.plots import save_figure

        out = Path(out)
        return [write_json(out / "results.json", self.rows)] + [save_figure(fig, out / name)
                                                                 for name, fig in self.figures().items()]


SimilarityStudy.Result = SimilarityResult  # what it returns, declared once the class is defined


def streamed_minibatch_cka(enc_a: Any, enc_b: Any, inputs: Sequence[TextInput], *, pooling_a: Pooling = "mean",
                           pooling_b: Pooling = "mean", batch_size: int = 500, progress: bool = True) -> Any:
    """(layers_a, layers_b) minibatch linear CKA (Nguyen et al. 2021) of two encoders over any
    number of inputs: both models encode one minibatch of inputs at a time, in input order,
    and only the HSIC sums are kept, so memory does not grow with n."""
    from ...measures.cka import MinibatchCKA
    from ...models.states import iter_layer_states

    it_a = iter_layer_states(enc_a, inputs, pooling_a, chunk_size=batch_size, cache=False, progress=progress)
    it_b = iter_layer_states(enc_b, inputs, pooling_b, chunk_size=batch_size, cache=False, progress=False)
    acc = None
    for (rows_a, xa), (rows_b, xb) in zip(it_a, it_b):
        assert rows_a == rows_b
        if rows_a.stop - rows_a.start < 4:
            log.debug("skipping a final minibatch of %d inputs (the unbiased HSIC needs 4)", rows_a.stop - rows_a.start)
            continue
        acc = acc or MinibatchCKA(len(xa), len(xb))
        acc.update(xa, xb)
    if acc is None:
        raise InputError("no minibatch of at least 4 inputs; give more inputs or a larger batch_size")
    return acc.value()
