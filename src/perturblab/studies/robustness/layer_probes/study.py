"""The layer-probe study on the study core.

A logistic-regression probe is trained on each layer's pooled states of the clean training set
(once per run, and only when a cell needs it); it is evaluated on the clean evaluation set and on
the same set after each perturbation. Each of these evaluations is one stored cell: which
evaluation examples every layer's probe gets right (a string of ``0``/``1``, one per example) and,
for a perturbation, the share of evaluation inputs it changed. The cell's content key holds
everything that result depends on: the encoder's fingerprint, the training and evaluation
examples as used, the pooling, the probe's settings and seed, and the perturbation with its
parameters and the field of a pair it changes. The accuracies, drops, paired standard errors and
ranks are derived from the cells when the study finishes.
"""

from __future__ import annotations

import threading
from typing import Any, Hashable, Iterator, Mapping

import numpy as np

from ....core.boundary import Inputs
from ....core.keys import content_key, examples_fingerprint, model_fingerprint
from ....core.study import Phase, RunContext, Study, Task
from ....data.examples import Dataset
from ....errors import InputError
from ....measures.probe import Probe, fit_probe
from ....models.states import layer_states
from ....perturb.catalogue import get_perturbation, perturb_inputs, perturbation_key
from ...inputs import given_splits, labelled_split
from .config import LayerProbesArgs
from .result import LayerProbeResult

CELLS = "layer_probes.correct"
CLEAN = "clean"


def encode_correct(ok: np.ndarray) -> str:
    """A boolean vector as a string of ``0``/``1``."""
    return "".join("1" if v else "0" for v in np.asarray(ok, dtype=bool))


def decode_correct(s: str) -> np.ndarray:
    """The boolean vector of :func:`encode_correct`."""
    return np.frombuffer(s.encode("ascii"), dtype=np.uint8) == ord("1")


class LayerProbeStudy(Study):
    """Which layers each perturbation affects (the ``layer-probes`` command; robustness paper
    Sec. 4.4): a probe per layer trained on clean states, scored on clean and perturbed inputs.

    ``model`` is an encoder spec (preset, directory, hub id) or an encoder object (``hidden_states``,
    ``fingerprint``, ``name``); ``data`` a data spec, a :class:`~perturblab.data.Dataset` (split 3:1
    and sampled to ``n_train`` / ``n_eval``) or a ready ``(train, eval)`` pair. ``out`` keeps the
    results store, so calling again recomputes only what changed (``None``: a temporary
    directory). Nothing but the store is written until you call ``.save(dir)``.

    Example (an encoder of two "layers" counting words, on data of your own)::

        >>> import numpy as np
        >>> from perturblab import layer_probes
        >>> from perturblab.data import Dataset, Example
        >>> class Counts:
        ...     name, fingerprint, num_layers = "counts", "doctest-counts-v1", 1
        ...     def hidden_states(self, texts, pooling="mean"):
        ...         h = np.array([[t.split().count(w) for w in ("good", "bad", "a")] for t in texts], np.float32)
        ...         return [h, 2 * h]
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 8], ["negative", "positive"])
        >>> res = layer_probes(Counts(), perturbations="drop_first", data=data, n_train=30, n_eval=12,
        ...                    top=1, quiet=True)
        >>> [r["value"] for r in res.rows if r["metric"] == "clean_acc"]
        [1.0, 1.0]
        >>> res.summary[0]["perturbation"], len(res.summary[0]["top_layers"])
        ('drop_first', 1)

    (The study: ``encoder`` is a ready object, else ``args.model`` is loaded as a preset,
    directory or hub id; ``splits`` gives (train, eval) directly, else ``args.data`` sampled to
    ``n_train`` / ``n_eval``; ``perturbation_params`` maps a perturbation's name to its keyword
    arguments, checked here: a perturbation that refuses them fails before anything runs.)
    """

    name = command = "layer-probes"
    help = "per-layer probes on clean vs perturbed inputs; top affected layers"
    Args = LayerProbesArgs
    Result = LayerProbeResult
    example = dict(model="minilm-l3", perturbations="change_char", n_train=40, n_eval=20, top=1)

    @classmethod
    def of(cls, args: LayerProbesArgs, inputs: Inputs) -> "LayerProbeStudy":
        splits = given_splits(inputs.data.get("data"), args.n_train, args.n_eval, args.seed)
        return cls(args, encoder=inputs.model(args.model), splits=splits, progress=not args.quiet,
                   perturbation_params=args.perturbation_params)

    def __init__(self, args: LayerProbesArgs, *, encoder: Any = None,
                 splits: tuple[Dataset, Dataset] | None = None, progress: bool = True,
                 perturbation_params: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.args, self.progress = args, progress
        self.perturbations = args.perturbation_list()
        self.perturbation_params = {k: dict(v) for k, v in (perturbation_params or {}).items()}
        for name in self.perturbations:  # unknown parameters fail here
            get_perturbation(name, **self.params(name))
        self._encoder, self._splits = encoder, splits
        self._probes: list[Probe] | None = None
        self._probes_lock = threading.Lock()
        self._phase: Phase | None = None

    # -- set-up ------------------------------------------------------------------------
    def params(self, name: str) -> dict[str, Any]:
        """The keyword arguments of perturbation ``name``."""
        return dict(self.perturbation_params.get(name, {}))

    def splits(self) -> tuple[Dataset, Dataset]:
        """(train, eval) as used: loaded, split and sampled once."""
        if self._splits is None:
            args = self.args
            self._splits = labelled_split(args.data, args.n_train, args.n_eval, args.seed,
                                          text_fields=args.text_fields, label_column=args.label_column)
        return self._splits

    def encoder(self) -> Any:
        """The encoder whose layers are probed."""
        if self._encoder is None:
            from ....models.resolve import load_model

            self._encoder = load_model(self.args.model, "encoder")  # a spec's [device=, dtype=, ...] too
        return self._encoder

    def prepare(self, ctx: RunContext) -> None:
        with ctx.step("loading the data"):
            self.splits()
        with ctx.step(f"loading encoder {self.args.model}"):
            self.encoder()

    def _base_key(self) -> list[Any]:
        args = self.args
        train, test = self.splits()
        return [model_fingerprint(self.encoder()), examples_fingerprint(train), examples_fingerprint(test),
                args.pooling, args.probe_c, args.seed]

    def identity(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.args.study_options().items() if k not in ("model", "data")}
        train, test = self.splits()
        return {"options": opts, "perturbation_params": self.perturbation_params,
                "encoder": model_fingerprint(self.encoder()), "train": examples_fingerprint(train),
                "test": examples_fingerprint(test)}

    def task_key(self, perturbation: str) -> str:
        """The content key of the clean evaluation (``"clean"``) or of one perturbation's."""
        if perturbation == CLEAN:
            return content_key(CELLS, CLEAN, *self._base_key())
        params = self.params(perturbation)
        return content_key(CELLS, *self._base_key(), perturbation_key(perturbation, **params),
                           sorted(params.items()), self.args.perturb_field)

    # -- the work cells ------------------------------------------------------------------
    def _states(self, inputs: list[Any]) -> list[np.ndarray]:
        return layer_states(self.encoder(), inputs, pooling=self.args.pooling, progress=self.progress)

    def probes(self) -> list[Probe]:
        """One probe per layer, fitted on the clean training states (once per study object)."""
        with self._probes_lock:
            if self._probes is None:
                train, _ = self.splits()
                self._probes = [fit_probe(h, train.labels, seed=self.args.seed, C=self.args.probe_c)
                                for h in self._states(train.inputs())]
            return self._probes

    def evaluate(self, perturbation: str) -> dict[str, Any]:
        """One cell: which evaluation examples each layer's probe gets right on the clean or the
        perturbed inputs (and the share of inputs the perturbation changed)."""
        _, test = self.splits()
        x = test.inputs()
        change_rate = None
        if perturbation != CLEAN:
            t = get_perturbation(perturbation, **self.params(perturbation))
            x, changed = perturb_inputs(t, x, seed=self.args.seed, field=self.args.perturb_field)
            change_rate = float(np.mean(changed))
        states = self._states(x)
        y = test.labels
        correct = [encode_correct(p.predict(h) == y) for p, h in zip(self.probes(), states)]
        return {"correct": correct, "change_rate": change_rate}

    def _compute(self, group: Hashable, payloads: list[str]) -> list[dict[str, Any]]:
        return [self.evaluate(p) for p in payloads]

    # -- the study protocol --------------------------------------------------------------
    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        names = [CLEAN, *self.perturbations]
        tasks = [Task(self.task_key(n), n, group=n) for n in names]
        self._phase = Phase(CELLS, tasks, self._compute, label="probes per perturbation")
        yield self._phase

    def finish(self, ctx: RunContext) -> LayerProbeResult:
        assert self._phase is not None
        cells = {t.payload: self._phase.results[t.key] for t in self._phase.tasks}
        result = LayerProbeResult(self.args, probe_rows(self.args, cells), run_id=ctx.run_id)
        train, test = self.splits()
        result.split_sizes = {"train": len(train), "eval": len(test)}
        return result


def probe_rows(args: LayerProbesArgs, cells: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows ``model, perturbation, layer, metric, value`` from the stored cells: clean accuracy
    per layer, then per perturbation its change rate and per layer the perturbed accuracy, the
    drop, its paired standard error over the evaluation examples and the layer's rank (1 = the
    largest drop)."""
    clean_ok = [decode_correct(s) for s in cells[CLEAN]["correct"]]
    if not clean_ok or not len(clean_ok[0]):
        raise InputError("the evaluation split is empty; give more data or a larger --n-eval")
    n = len(clean_ok[0])
    clean = [float(c.mean()) for c in clean_ok]
    name_of = args.model
    rows: list[dict[str, Any]] = [{"model": name_of, "perturbation": "clean", "layer": i, "metric": "clean_acc",
                                   "value": a} for i, a in enumerate(clean)]
    for pname in args.perturbation_list():
        ok = [decode_correct(s) for s in cells[pname]["correct"]]
        acc = np.array([o.mean() for o in ok])
        drop = np.asarray(clean) - acc
        # paired standard error of the drop over the evaluation examples
        drop_se = np.array([np.std(c.astype(float) - o, ddof=1) / np.sqrt(n) for c, o in zip(clean_ok, ok)])
        rank = np.empty(len(drop), dtype=int)
        rank[np.argsort(-drop, kind="stable")] = np.arange(1, len(drop) + 1)
        rows.append({"model": name_of, "perturbation": pname, "layer": None, "metric": "change_rate",
                     "value": float(cells[pname]["change_rate"])})
        for i in range(len(drop)):
            rows += [{"model": name_of, "perturbation": pname, "layer": i, "metric": m, "value": float(v)}
                     for m, v in (("perturbed_acc", acc[i]), ("drop", drop[i]), ("drop_se", drop_se[i]),
                                  ("rank", rank[i]))]
    return rows
