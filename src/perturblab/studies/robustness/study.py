"""Relative robustness of classifiers and regressors to text perturbations (robustness paper,
Sec. 3.2–3.4, 4.2, Tables 1 and 3).

Every model is scored with a task metric m on the clean test set (m_c, Table 1) and on the test
set with a perturbation applied to every input (m_p); relative robustness is
``1 − (m_c − m_p) / m_c`` (:func:`~perturblab.measures.learnability.relative_robustness`), below 1
when the perturbation hurts, above 1 when it helps. Texts a perturbation cannot change stay in the
perturbed set unchanged (as in the paper, which scores the whole perturbed test set); the share
changed is reported as ``change_rate``. Each random perturbation is drawn ``trials`` times
(different random choices of words and characters; tables give the mean ± standard deviation
over draws); a deterministic one (``drop_nouns``, ``drop_first``, ``gender_swap``, …) once.

Models are model specs ``[NAME=]SOURCE[[option=value,...]]`` loaded by
:func:`~perturblab.models.resolve.load_model`: a preset (``minilm-l6``, ``minilm-l3``,
``tfidf-lr``, … with a logistic-regression head trained on the training split, cached), a
trainable zoo model (``textrnn``, ``minilm-probe``, ``hf-finetune``, trained on the training split
with ``train_seed``), or a fine-tuned HF sequence classifier given as a local directory or hub id
(``[batch_size=8,max_length=128]`` sets its backend options). ``NAME=SOURCE`` gives a model a short
name for the tables. Model outputs are matched to the data's labels by name
(:func:`~perturblab.models.labels.align_labels`).

Text pairs (``text_fields="premise,hypothesis"``) are perturbed in the first text, the
second or both (``perturb_field``, default ``both``: the whole input, as the paper perturbs every
GLUE input). A regression data set (numeric targets, ``task="regression"``; STS-B) is scored by
``pearson`` / ``spearman`` (the default metrics follow the task: accuracy and MCC, or Pearson and
Spearman) with regressors (``load_model(spec, "regressor")``: encoder presets with a ridge head,
``tfidf-ridge``, one-output HF heads, ``hf-finetune`` fine-tuned by mean squared error;
:mod:`perturblab.models.regression`).

The options are :class:`~.config.RobustnessArgs`. Resumable (run by
:func:`perturblab.core.entry.run`): each model's predictions on each (perturbation, draw) are
stored in ``results.sqlite`` under the content they depend on (the model's fingerprint, the test
examples, the field perturbed, the draw and the label alignment), so a re-run predicts nothing
twice, an edited test set or a retrained model is predicted again, and metrics can be changed
without re-running models.

Outputs: ``results.json`` rows ``model, perturbation, metric, seed, clean, perturbed,
relative_robustness, change_rate, n``; ``summary.json`` (with ``models``: each model's clean
accuracy, majority-class rate, MCC and its flags ``one-class`` / ``chance-level``, and
``most_robust``: the most robust model of each row with those tied with it, by the rules of
:mod:`perturblab.measures.quality`; ``gaps``: each later model's paired gaps to the first model,
its clean accuracy and mean relative robustness minus the first's, with 95 % paired intervals:
a classifier's from both models' joint outcomes on each example, others from the same bootstrap
resamples of the test examples for both, :func:`~.summary.paired_gaps`);
``table.md`` (Table 1 and Table 3 style, per metric: the
highest robustness of each row in bold, every tied model in bold, flagged models left out of the
ranking and named in the header; the three lowest of each column underlined; then the flags and
the ranking with standard errors); ``robustness_heatmap_<metric>.png``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.files import atomic_write_text, save_figure, write_json
from ...core.keys import content_key, examples_fingerprint, model_fingerprint
from ...core.headline import Headline
from ...core.readers import option_name
from ...core.study import Lazy, Phase, RunContext, Study, StudyResult, Task
from ...data.examples import Dataset
from ...errors import InputError
from ...measures.learnability import relative_robustness, relative_robustness_many
from ...measures.quality import classification_quality, regression_quality
from ...measures.stats import percentile_interval
from ...measures.task_metrics import TASK_METRICS, bootstrap_confusions, bootstrap_indices, get_task_metric
from ...models.base import Classifier, Regressor, is_regressor
from ...models.labels import align_labels, aligned_predictions
from ...models.resolve import load_model
from ...models.spec import ModelSpec
from ...models.states import inputs_hash
from ...perturb.catalogue import get_perturbation, perturb_inputs, perturbation_key
from ..remote import RemoteLoad, loaded
from .compare import ROBUSTNESS
from .config import RobustnessArgs
from .headline import robustness_headline
from .summary import most_robust, paired_gaps, relative_robustness_figures, robustness_markdown, summarise

STUDY = "robustness"


DEFAULT_METRICS = {"classification": ("accuracy", "mcc"), "regression": ("pearson", "spearman")}


def _label_map(maps: Mapping[str, Mapping[str, str]], spec: str, labels: Sequence[str]) -> Mapping[str, str] | None:
    """The label map of model ``spec`` (with output ``labels``): its own, else the map for every
    model ("*") when it names only labels the model has."""
    if spec in maps:
        return maps[spec]
    star = maps.get("*")
    if star and {k.strip().lower() for k in star} <= {str(x).strip().lower() for x in labels}:
        return star
    return None


def draws(perturbation: str, seeds: int) -> int:
    """How many draws a perturbation needs: 1 for a deterministic one (every draw is the same)."""
    return 1 if getattr(get_perturbation(perturbation), "deterministic", False) else seeds


def perturbation_draws(perturbations: Sequence[str], trials: int) -> list[tuple[str, int]]:
    """Every (perturbation, draw) of ``perturbations`` with ``trials`` draws of each random
    perturbation (:func:`draws`)."""
    return [(p, s) for p in perturbations for s in range(draws(p, trials))]


def _task_metrics(given: Sequence[str] | None, regression: bool) -> list[str]:
    """The metrics ``given`` (None: the task's), each checked to score what the task predicts."""
    task = "regression" if regression else "classification"
    metrics = list(given) if given else list(DEFAULT_METRICS[task])
    wanted = "number" if regression else "label"
    for m in metrics:
        metric = get_task_metric(m)
        if metric.consumes != wanted:
            fits = [k for k, v in TASK_METRICS.items() if v.consumes == wanted]
            raise InputError(f"metric {m!r} scores {metric.consumes}s, but this is a {task} task; use "
                             f"{', '.join(fits)}")
    return [get_task_metric(m).name for m in metrics]


class RobustnessResult(StudyResult):
    """The result of :func:`perturblab.robustness`: ``rows`` (model × perturbation × metric × draw:
    clean and perturbed scores, relative robustness, share of inputs changed, n) and ``summary``
    (means, standard deviations over draws, bootstrap intervals, the tables; a dict)."""

    study = STUDY

    def __init__(self, rows: Sequence[dict[str, Any]], summary: dict[str, Any], run_id: str | None = None,
                 outcomes: dict[tuple[str, str], dict[str, float]] | None = None) -> None:
        super().__init__(rows, summary, run_id=run_id)
        self._outcomes = dict(outcomes or {})

    def outcomes(self) -> dict[tuple[str, str], dict[str, float]]:
        """(model, key) -> test example -> term of each classifier's clean ``accuracy`` and its
        ``accuracy_gap`` to the first model (:meth:`StudyResult.outcomes`); relative robustness, a
        ratio of two accuracies, has no per-example term."""
        return self._outcomes

    def table(self) -> str:
        """The Markdown tables of ``table.md`` (Tables 1 and 3 style)."""
        return robustness_markdown(self.summary)

    def figures(self) -> dict[str, Any]:
        """``robustness_heatmap_<metric>.png`` -> matplotlib figure (what :meth:`save` writes)."""
        return relative_robustness_figures(self.summary, "robustness_heatmap")

    def headline(self) -> Headline:
        """Each model's clean accuracy and relative robustness per perturbation, with intervals
        and n (:func:`~.headline.robustness_headline`)."""
        return robustness_headline(self.summary, self.rows)

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``summary.json``, ``table.md`` and one heatmap per metric."""
        out = Path(out)
        paths = [write_json(out / "results.json", self.rows), write_json(out / "summary.json", self.summary),
                 atomic_write_text(out / "table.md", robustness_markdown(self.summary))]
        return paths + [save_figure(fig, out / name) for name, fig in self.figures().items()]


class RobustnessStudy(Study):
    """Relative robustness of classifiers or regressors to perturbations (robustness paper,
    Tables 1 and 3; the ``robustness`` command).

    ``models`` are specs (presets, trainable zoo models, model directories, hub ids, ``NAME=SOURCE``;
    one comma-separated string or a list) or model objects; ``perturbations`` a list or
    ``robustness`` / ``all`` / ``every``; ``trials`` draws of each random perturbation;
    ``n_eval`` evaluation examples; ``label_map`` ``[MODEL:]LABEL=DATA_LABEL,...`` entries or a
    mapping {model or "*": {model label: data label}}. ``out`` keeps the results store (``None``: a
    temporary directory); ``.save(dir)`` writes what the command writes. ``seeds`` and ``n_test``
    are the old names of ``trials`` and ``n_eval``.

    Example (a classifier that only reads the first word, against dropping the first word)::

        >>> import numpy as np, perturblab as pl
        >>> from perturblab.models import CallableClassifier
        >>> def first_word(texts):
        ...     p = np.array([0.9 if t.split()[0] == "good" else 0.1 for t in texts])
        ...     return np.stack([1 - p, p], axis=1)
        >>> clf = CallableClassifier(first_word, ["neg", "pos"], name="first")
        >>> rows = ["text,label"] + [f"{w} film number {i},{'pos' if w == 'good' else 'neg'}"
        ...                          for i, w in enumerate(["good", "bad"] * 20)]
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
        >>> _ = path.write_text("\\n".join(rows) + "\\n")
        >>> res = pl.robustness([clf], perturbations="drop_first", data=str(path), n_train=8, n_eval=10,
        ...                     metrics="accuracy", quiet=True, n_boot=50)
        >>> (res.rows[0]["clean"], res.rows[0]["perturbed"], res.rows[0]["relative_robustness"])
        (1.0, 0.5, 0.5)

    (The study: one phase of prediction tasks, each a model's predictions on the clean test set or
    one (perturbation, draw) of it, keyed on the model's fingerprint, the test examples, the field
    perturbed, the draw and the label alignment. ``classifiers`` gives ready models by name, used
    instead of loading the spec of that name; a Ray worker resolves any other model itself, once
    per worker process.)
    """

    name = command = STUDY
    help = "relative robustness of classifiers and regressors to perturbations (Table 3 style)"
    Args = RobustnessArgs
    Result = RobustnessResult
    part = ROBUSTNESS
    example = dict(models="tfidf-lr", perturbations="change_char", n_train=20, n_eval=20, trials=1,
                   metrics="accuracy", n_boot=50)

    @classmethod
    def of(cls, args: RobustnessArgs, inputs: Inputs) -> "RobustnessStudy":
        return cls(args, classifiers=inputs.models, data=inputs.data.get("data"))

    def __init__(self, args: RobustnessArgs, *, classifiers: Mapping[str, Classifier] | None = None,
                 data: "Dataset | tuple[Dataset, Dataset] | None" = None) -> None:
        self.args, self._ready = args, dict(classifiers or {})
        self._given = data  # a Dataset (split as a data spec is) or a (train, eval) pair given in Python
        for name, message in args.relations():  # a label map names one of the models (also objects)
            raise InputError(f"{option_name(name)}: {message}")
        self.perturbations = args.perturbation_list()
        self.label_maps = args.label_maps()
        self.metrics: list[str] = []  # the metrics scored: set when the data's task is known (prepare)

    def draws(self) -> list[tuple[str, int]]:
        """Every (perturbation, draw) of the study (:func:`perturbation_draws`)."""
        return perturbation_draws(self.perturbations, self.args.trials)

    def prepare(self, ctx: RunContext) -> None:
        from ..inputs import given_splits, labelled_split

        args = self.args
        if self._given is None or isinstance(self._given, Dataset):
            train, test = labelled_split(args.data if self._given is None else self._given, args.n_train, args.n_eval,
                                         seed=0, text_fields=args.text_fields, label_column=args.label_column,
                                         task=args.task, regression=True)
        else:  # a (train, eval) pair as it is; anything else is refused
            train, test = given_splits(self._given, args.n_train, args.n_eval, 0)
        regression = not test.label_names
        self.metrics = _task_metrics(args.metric_list(), regression)
        if args.perturb_field != "both" and not test.is_pair:
            raise InputError(f"perturb_field={args.perturb_field!r} picks a text of a pair, but {test.name!r} has "
                             "one text field; name two columns (text_fields / --text-fields A,B) or use 'both'")
        self.train, self.test = train, test
        self.inputs, self.y = test.inputs(), np.asarray(test.labels)
        self.loaded: list[tuple[str, Any, Any, list | None]] = []  # (name, model, handle, columns)
        remote = ctx.executor.name != "local"
        role = "classifier" if train.label_names else "regressor"
        for entry in args.model_names():
            ready = self._ready.get(entry)
            ms = None if ready is not None else ModelSpec.parse(entry)
            spec = entry if ms is None else ms.name
            ready = self._ready.get(spec, ready)
            if ready is None:
                with ctx.step(f"loading model {spec}"):
                    clf = load_model(ms, role, train=train, seed=args.train_seed)
            else:
                clf = ready
            columns = _output_columns(clf, test, self.label_maps, spec)
            # a local cell uses the loaded model; a remote one loads it from its spec
            handle = RemoteLoad(ms, role, model_fingerprint(clf), train=train, seed=args.train_seed) \
                if remote and ready is None else clf
            self.loaded.append((spec, clf, handle, columns))

    def identity(self) -> dict[str, Any]:
        return {"options": self.args.study_options(),
                "models": {spec: model_fingerprint(clf) for spec, clf, _, _ in self.loaded},
                "train": examples_fingerprint(self.train), "test": examples_fingerprint(self.test)}

    def _key(self, clf: Any, columns: list | None, setting: str) -> str:
        """A cell's key: the model, the test data, and the setting (``clean`` or ``perturbation|draw``)
        with the perturbation known by what it does (:func:`~perturblab.perturb.catalogue.perturbation_key`)."""
        name, sep, draw = setting.partition("|")
        if sep:
            setting = f"{self._pert_keys[name]}|{draw}"
        return content_key(STUDY, model_fingerprint(clf), self._test_key, self.args.perturb_field, setting, columns)

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        self._test_key = content_key(inputs_hash(self.inputs), self.y.tolist())
        names = dict.fromkeys(p for p, _ in self.draws())
        self._pert_keys = {p: perturbation_key(p) for p in names}
        perturbed: dict[tuple[str, int], tuple[list, float]] = {}

        def inputs_of(pert: str | None, seed: int) -> tuple[list, float | None]:
            """The test inputs with one draw of ``pert`` and the share it changed; each draw is made
            once (only when some model's predictions on it are not stored) and shared by the models."""
            if pert is None:
                return self.inputs, None
            if (pert, seed) not in perturbed:
                xs, changed = perturb_inputs(pert, self.inputs, seed=seed, field=self.args.perturb_field)
                perturbed[(pert, seed)] = (xs, float(np.mean(changed)))
            return perturbed[(pert, seed)]

        settings = [("clean", None, 0)] + [(f"{p}|{s}", p, s) for p, s in self.draws()]
        tasks = []
        for spec, clf, handle, columns in self.loaded:
            for setting, pert, seed in settings:
                tasks.append(Task(self._key(clf, columns, setting),
                                  Lazy(partial(_cell_payload, handle, columns, inputs_of, pert, seed))))
        self._phase = Phase(f"{STUDY}.predict", tasks, _predict_cells, label="predictions")
        yield self._phase

    def finish(self, ctx: RunContext) -> "RobustnessResult":
        results = self._phase.results

        def stored(clf: Any, columns: list | None) -> Callable[[str], dict[str, Any]]:
            return lambda setting: results[self._key(clf, columns, setting)]

        rows = [row for spec, clf, _, columns in self.loaded
                for row in _model_rows(stored(clf, columns), self, spec, self.y)]
        preds = {spec: stored(clf, columns) for spec, clf, _, columns in self.loaded}
        replicates = _replicates(preds, self, self.y)
        intervals = {k: list(percentile_interval(np.mean(v, axis=0))) for k, v in replicates.items()}
        summary = summarise(rows, intervals)
        clean = {spec: np.asarray(preds[spec]("clean")["pred"]) for spec in preds}
        summary["models"] = [{"model": spec, **_quality(clean[spec], self.y, columns is None, self.test.label_names)}
                             for spec, _, _, columns in self.loaded]
        correct = {spec: clean[spec] == self.y for spec, _, _, columns in self.loaded if columns is not None}
        right = {(spec, p, s): np.asarray(preds[spec](f"{p}|{s}")["pred"]) == self.y
                 for spec in correct for p, s in self.draws()}
        summary["gaps"] = paired_gaps(rows, replicates, correct, n=len(self.y), perturbed=right)
        summary["most_robust"] = most_robust(summary)
        # the options, with the metrics scored (the task's own when none were given)
        summary["config"] = {**self.args.study_options(), "metrics": list(self.metrics)}
        return RobustnessResult(rows, summary, run_id=ctx.run_id, outcomes=_per_example(correct, self.inputs))


def _per_example(correct: Mapping[str, np.ndarray], inputs: Sequence[Any]) -> dict[tuple[str, str], dict[str, float]]:
    """(model, key) -> test example id (:func:`~perturblab.core.keys.example_ids` of ``inputs``)
    -> term, for a classifier's clean ``accuracy`` (1 when right) and, for every model after the
    first, its ``accuracy_gap`` to the first (its term minus the first's): the headline's
    estimates are their means."""
    from ...core.keys import example_ids

    ids, models = example_ids(inputs), list(correct)
    out: dict[tuple[str, str], dict[str, float]] = {}
    for m in models:
        out[(m, "accuracy")] = {i: float(v) for i, v in zip(ids, correct[m])}
        if m != models[0]:
            out[(m, "accuracy_gap")] = {i: float(a) - float(b) for i, a, b in zip(ids, correct[m], correct[models[0]])}
    return out


def _quality(pred: np.ndarray, y: np.ndarray, regression: bool, names: Sequence[str] | None) -> dict[str, Any]:
    """Whether a model's clean predictions are worth ranking: one class (one value) or chance
    level, by the rules of :mod:`perturblab.measures.quality` (classes named by ``names``)."""
    return regression_quality(y, pred) if regression else classification_quality(y, pred, names)


def _cell_payload(handle: Any, columns: list | None, inputs_of: Callable, pert: str | None,
                  seed: int) -> tuple[Any, list | None, list, float | None]:
    xs, rate = inputs_of(pert, seed)
    return handle, columns, xs, rate


def _predict_cells(group: Any, payloads: list[tuple[Any, list | None, list, float | None]]) -> list[dict[str, Any]]:
    """The phase function: :func:`_predict_cell` of each payload."""
    return [_predict_cell(*p) for p in payloads]


def _output_columns(model: Classifier | Regressor, test: Any, label_maps: Mapping[str, Mapping[str, str]],
                    spec: str) -> list | None:
    """The model's output columns in the data's label order (None for a regressor), refusing a
    classifier on regression data and a regressor on classification data; ``label_maps`` as
    :meth:`~.config.RobustnessArgs.label_maps` gives them."""
    if is_regressor(model) or not test.label_names:
        if is_regressor(model) != (not test.label_names):
            kind = "a regressor" if is_regressor(model) else f"a classifier (labels {list(model.labels)[:5]})"
            task = "numeric targets (regression)" if not test.label_names else f"classes {test.label_names[:5]}"
            raise InputError(f"model {spec!r} is {kind}, but {test.name!r} has {task}; use a model of the data's task")
        return None
    return align_labels(model.labels, test.label_names, _label_map(label_maps, spec, model.labels), model=spec)


def _predict_cell(model: Classifier | Regressor | RemoteLoad, columns: list | None,
                  xs: list, change_rate: float | None) -> dict[str, Any]:
    """One cell: the model's predictions on ``xs`` (the clean or one perturbed test set): class
    indices in the data's label order, or a regressor's values (``columns`` None); with the share
    of inputs the perturbation changed. A :class:`~..remote.RemoteLoad` model is loaded once per
    process (a Ray worker's) and fingerprint, the driver's (its predictions are stored under it)."""
    model = loaded(model)
    if columns is None:
        return {"pred": np.asarray(model.predict_values(xs), dtype=np.float64).tolist(), "change_rate": change_rate}
    return {"pred": aligned_predictions(model.predict_proba(xs), columns).tolist(), "change_rate": change_rate}


def _model_rows(stored: Callable[[str], dict[str, Any]], study: RobustnessStudy, spec: str,
                y: np.ndarray) -> list[dict[str, Any]]:
    """``results.json`` rows of one model, from its stored predictions (``stored(setting)``)."""
    clean = np.asarray(stored("clean")["pred"])
    scores_clean = {m: get_task_metric(m)(y, clean) for m in study.metrics}
    rows = []
    for pert, seed in study.draws():
        hit = stored(f"{pert}|{seed}")
        pred = np.asarray(hit["pred"])
        for metric in study.metrics:
            fn = get_task_metric(metric)
            m_c, m_p = scores_clean[metric], fn(y, pred)
            rr = relative_robustness(m_c, m_p) if m_c > 0 else None
            rows.append({"model": spec, "perturbation": pert, "metric": fn.name, "seed": seed,
                         "clean": m_c, "perturbed": m_p, "relative_robustness": rr,
                         "change_rate": hit["change_rate"], "n": len(y)})
    return rows


def _replicates(preds: Mapping[str, Callable[[str], dict[str, Any]]], study: RobustnessStudy,
                y: np.ndarray) -> dict[tuple[str, str, str], np.ndarray]:
    """The paired-bootstrap replicates of every model, on the same resamples: the test examples are
    resampled ``n_boot`` times once (seeded by ``train_seed``) and every replicate scores every
    model's clean and perturbed predictions (``preds[model](setting)``) on the same resample
    (label metrics through confusion matrices, correlations on all resamples at once).

    Returns (model, perturbation, metric) -> the (draws, n_boot) relative robustness of each draw
    on each resample (the study's 95 % interval of a cell is the percentile interval of its mean
    over draws; a paired gap between two models differences them replicate by replicate)."""
    args = study.args
    metrics = [m for m in (get_task_metric(k) for k in study.metrics)
               if m.from_confusion is not None or m.resampled is not None]
    if not metrics or args.n_boot < 1:
        return {}
    models = list(preds)
    settings = ["clean"] + [f"{p}|{s}" for p, s in study.draws()]
    arrays = [np.asarray(preds[spec](setting)["pred"]) for spec in models for setting in settings]
    reps: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    if study.test.label_names:  # a classification task: class indices, label metrics
        conf = bootstrap_confusions(y, arrays, n_boot=args.n_boot, seed=args.train_seed)
        for i, (spec, setting) in enumerate((spec, setting) for spec in models for setting in settings):
            reps[(spec, setting)] = {m.name: m.from_confusion(conf[i]) for m in metrics}
    else:
        idx = bootstrap_indices(len(y), args.n_boot, seed=args.train_seed)
        for i, (spec, setting) in enumerate((spec, setting) for spec in models for setting in settings):
            reps[(spec, setting)] = {m.name: m.resampled(y, arrays[i], idx) for m in metrics}
    out = {}
    for spec in models:
        for m in metrics:
            clean = reps[(spec, "clean")][m.name]
            for pert in study.perturbations:
                out[(spec, pert, m.name)] = np.stack([
                    relative_robustness_many(clean, reps[(spec, f"{pert}|{s}")][m.name])
                    for s in range(draws(pert, args.trials))])
    return out
