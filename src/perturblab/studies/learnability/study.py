"""The learnability study (Zhang et al., Sec. 4): for every model × perturbation × seed,
learnability@p over the grid (Algorithm 1), average learnability (Eq. 5), robustness (Eq. 1)
and post-augmentation Δ (Eq. 2), then Spearman ρ between them across model × perturbation
pairs (Table 3).

Data: a stratified train/test split of a labelled set (seed 0), each part subsampled with
balanced classes (Sec. 4.2) to ``n_train`` / ``n_eval``; text pairs (``text_fields``, e.g. QQP's
two questions) are perturbed in ``perturb_field`` (``a``, ``b`` or ``both``, the default); the seeds vary training, pseudo labels
and perturbation draws, never the data. Every trained model's result is stored in
``results.sqlite`` (run by :func:`perturblab.core.entry.run`; the options are
:class:`~.config.LearnabilityArgs`) under the content it depends on:
the trainer's code, the train and test examples, the field perturbed, the perturbation, the
setting (``robustness`` or ``p=<p>``) and the seed. A resumed run trains nothing twice; edited
data or a changed trainer trains again.

``results.json`` rows: ``model, perturbation, metric, p, seed, value`` with metrics
``learnability`` and ``learnability_prob`` (per p), ``avg_learnability``, ``robustness``,
``post_aug_delta``, ``acc_clean``, ``acc_perturbed``, ``acc_augmented``. ``summary.json`` holds
the per-pair means and standard deviations over seeds and the Spearman tests; ``table.md`` shows
them as the paper's Tables 2 and 3.
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.files import atomic_write_text, write_json
from ...core.headline import Estimate, Headline, t_interval
from ...core.keys import content_key, examples_fingerprint
from ...core.study import Phase, RunContext, Study, StudyResult, Task
from ...errors import InputError
from ...measures.learnability import log_auc, post_augmentation_delta, robustness
from ...measures.grounding import rank_correlations
from ...measures.quality import tied_with_best
from ...measures.stats import spearman
from ...models.base import TextInput
from ...perturb.catalogue import LEARNABILITY_EIGHT, get_perturbation, perturb_inputs, perturbation_key
from .algorithm import Fit, LearnabilityPoint, learnability_curve
from .config import LearnabilityArgs

log = logging.getLogger(__name__)
NOISE = LEARNABILITY_EIGHT


def _data(args: LearnabilityArgs, given: Any = None) -> Any:
    """What the study splits: the data ``args`` names, loaded, or ``given`` in Python: a
    :class:`~perturblab.data.Dataset` (split as the data would be), or a ``(train, eval)`` pair
    of them (used as it is, as the other studies use one; anything else is refused)."""
    from ...data.examples import Dataset
    from ..inputs import given_splits, load_study_data

    if given is None:
        return load_study_data(args.data, text_fields=args.text_fields, label_column=args.label_column)
    return given if isinstance(given, Dataset) else given_splits(given, args.n_train, args.n_eval, 0)


def _split(args: LearnabilityArgs, given: Any = None):
    """The balanced training and evaluation subsamples of the data's stratified split (seed 0),
    or a ``(train, eval)`` pair ``given`` as it is (:func:`_data`)."""
    from ...data.loaders import sample_balanced, train_test_split

    data = _data(args, given)
    if isinstance(data, tuple):
        _check_learnable(args, data[1])
        return data
    _check_learnable(args, data)
    train, test = train_test_split(data, test_size=0.25, seed=0)
    return sample_balanced(train, args.n_train, 0), sample_balanced(test, args.n_eval, 0)


def _check_learnable(args: LearnabilityArgs, ds: Any) -> None:
    """Refuse data without class labels, and a perturbed field of a pair where the data has one text."""
    if not ds.label_names:
        raise InputError(f"data set {args.data!r} has no class labels; learnability trains classifiers on "
                         "pseudo-class labels and scores robustness by accuracy, so it needs a classification set")
    if args.perturb_field != "both" and not ds.is_pair:
        raise InputError(f"perturb_field={args.perturb_field!r} picks a text of a pair, but {args.data!r} has "
                         "one text field; name two columns (--text-fields A,B) or use 'both'")


def _accuracy(model: Any, texts: Sequence[TextInput], y: np.ndarray) -> float:
    return float((np.asarray(model.predict_proba(list(texts))).argmax(axis=1) == y).mean())


def trainer_fingerprint(fit: Fit) -> str:
    """What a trainer's results depend on, the same in every process: its ``fingerprint``
    attribute when it has one, else its code, defaults and the values it closes over (a
    ``functools.partial``: its function and arguments; a trainer object: its class and state),
    so a changed trainer under the same model name trains again and an unchanged one resumes.

    A trainer with no stable hash (it closes over a lock, an open file, a client object) is
    refused with an :class:`InputError` asking for a ``fingerprint`` attribute."""
    from ...core.stable_hash import NoStableHash
    from ...models.base import fingerprint_of
    from ...models.callable_backend import callable_digest

    name = getattr(fit, "__qualname__", None) or type(fit).__name__
    given = getattr(fit, "fingerprint", None)
    if given is not None:
        if not isinstance(given, str) or not given:
            raise InputError(f"trainer {name!r} has fingerprint {given!r}; it must be a non-empty string that "
                             "changes whenever the trainer's results could")
        return fingerprint_of("trainer", "fingerprint", given)
    try:
        return fingerprint_of("trainer", callable_digest(fit, "the trainer"))
    except NoStableHash as e:
        raise InputError(f"cannot fingerprint trainer {name!r}: {e}. Results are stored under what a trainer "
                         "computes; give it a `fingerprint` attribute, a string that changes whenever its results "
                         "could (e.g. fit.fingerprint = 'my-trainer-v1')") from None


LABELS = {"avg_learnability": "learnability", "robustness": "robustness",
          "post_aug_delta": "gain from augmentation"}
HEADLINE_SENTENCE = (
    "Learnability: how readily a model trained on a few perturbed examples learns to tell perturbed from "
    "clean text (the area under its learnability curve over p); robustness: its accuracy on perturbed test "
    "text minus on clean text; gain from augmentation: the accuracy that training on perturbed text wins "
    "back. Spearman ρ < 0 of learnability with robustness says the perturbations a model learns readily are "
    "the ones it is less robust to; ρ > 0 with the gain, that augmentation helps most against them. n: the "
    "pairs for ρ, the evaluation examples otherwise.")


class LearnabilityResult(StudyResult):
    """The result of :func:`perturblab.learnability`: ``rows`` (``model, perturbation, metric, p,
    seed, value``) and ``summary`` (Table 2 means and s.d. over seeds, Table 3 Spearman tests)."""

    study = "learnability"

    def table(self) -> str:
        """The Markdown of ``table.md``."""
        return learnability_markdown(self.summary)

    def console(self) -> str:
        """What the command prints: per model and perturbation the mean learnability, robustness
        and post-augmentation change, the Spearman tests between them, and the sizes."""
        lines = [f"{'model':14s} {'perturbation':24s} {'avg_learn':>10s} {'robustness':>11s} {'post_aug_Δ':>11s}"]
        for t in self.summary["table"]:
            lines.append(f"{t['model']:14s} {t['perturbation']:24s} {t['avg_learnability']:10.3f} "
                         f"{t['robustness']:11.3f} {t['post_aug_delta']:11.3f}")
        for c in self.summary["spearman"]:
            rho = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f} (p={c['p_value']:.2g})"
            lines.append(f"Spearman {c['x']} vs {c['y']}: {rho} over {c['n_pairs']} pairs")
        return "\n".join(lines + [self.sizes()])

    def headline(self) -> Headline:
        """The Spearman correlations across model × perturbation pairs (with their bootstrap
        intervals), then each pair's average learnability, robustness and post-augmentation change
        (t-intervals over seeds)."""
        estimates = []
        for c in self.summary["spearman"]:
            ci = c.get("ci") or (None, None)
            estimates.append(Estimate(
                "all model × perturbation pairs", f"Spearman ρ, {LABELS[c['x']]} vs {LABELS[c['y']]}", c["spearman"],
                ci[0], ci[1], n=c["n_pairs"], key=f"spearman:{c['x']}:{c['y']}",
                interval="95 % percentile bootstrap over the pairs" if c.get("ci") else
                         "no interval (fewer than 3 pairs, or undefined values)"))
        seeds = len({r["seed"] for r in self.rows if r.get("seed") is not None})
        n_eval = (self.split_sizes or {}).get("eval")
        for t in self.summary["table"]:
            for m in ("avg_learnability", "robustness", "post_aug_delta"):
                low, high = t_interval(t[m], t.get(m + "_se"), seeds)
                estimates.append(Estimate(
                    t["model"], f"{LABELS[m]}, {t['perturbation']}", t[m], low, high, n=n_eval,
                    interval=f"95 % t-interval over {seeds} seeds" if low is not None else "no interval (one seed)",
                    key=f"{m}:{t['perturbation']}"))
        return Headline(HEADLINE_SENTENCE, estimates)

    def figures(self) -> dict[str, Any]:
        """``curves_<model>.png``, ``correlations.png``, ``robustness_heatmap.png`` -> figure."""
        from .plots import learnability_figure_set

        return learnability_figure_set(self.rows, self.summary)

    def save(self, out: str | Path) -> list[Path]:
        """``results.json``, ``summary.json``, ``table.md`` and the figures, each atomically."""
        from ...report.plots import save_figure

        out = Path(out)
        paths = [write_json(out / "results.json", self.rows), write_json(out / "summary.json", self.summary),
                 atomic_write_text(out / "table.md", learnability_markdown(self.summary))]
        return paths + [save_figure(fig, out / name) for name, fig in self.figures().items()]


class LearnabilityStudy(Study):
    """Perturbation learnability, robustness and post-augmentation gain (learnability paper,
    Tables 2-3; the ``learnability`` command).

    ``models`` are trainable model names (``tfidf-lr``, ``textrnn``, ``minilm-probe``,
    ``hf-finetune``), or names given a ``fit(texts, labels, seed)`` function in ``trainers``;
    ``perturbations`` a list or ``all`` (the paper's eight) / ``robustness`` / ``every``; ``ps`` the
    perturbation probabilities (default: the paper's grid); ``trials`` training seeds;
    ``n_eval`` evaluation examples; ``n_boot`` bootstrap resamples of the Spearman intervals.
    ``workers`` models train at once in threads.
    ``out`` keeps the results store (``None``: a temporary directory). ``seeds`` and ``n_test``
    are the old names of ``trials`` and ``n_eval``.

    Example (a trainer of your own: a bag-of-words logistic regression)::

        >>> import numpy as np, perturblab as pl, pathlib, tempfile
        >>> from perturblab.models.sklearn_backend import SklearnClassifier
        >>> from sklearn.feature_extraction.text import CountVectorizer
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.pipeline import make_pipeline
        >>> def fit(texts, labels, seed):
        ...     pipe = make_pipeline(CountVectorizer(), LogisticRegression()).fit(texts, labels)
        ...     return SklearnClassifier(pipe, labels=["0", "1"])
        >>> rng = np.random.default_rng(0)
        >>> words = "good bad film plot actor scene music story".split()
        >>> lines = ["text,label"] + [" ".join(rng.choice(words, 6)) + f",{i % 2}" for i in range(80)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
        >>> _ = path.write_text("\\n".join(lines) + "\\n")
        >>> res = pl.learnability(["bow"], trainers={"bow": fit}, perturbations="leet_letters", data=str(path),
        ...                       trials=1, n_train=40, n_eval=20, ps=[0.1, 1.0], workers=1, quiet=True)
        >>> sorted({r["metric"] for r in res.rows})[:3]
        ['acc_augmented', 'acc_clean', 'acc_perturbed']

    (The study: one phase whose tasks are the trained models' results, per model × perturbation ×
    seed: the clean/perturbed/augmented accuracies, and each p of the learnability curve, keyed on
    the trainer, the train and test examples, the field perturbed, the perturbation, the setting and
    the seed. Tasks of one (model, seed) robustness cell or one (model, perturbation, seed) curve are
    computed together, so the clean model is trained once for all its missing perturbations.
    ``trainers`` maps model names to ``fit(texts, labels, seed)`` functions, default the trainable
    zoo, :mod:`perturblab.models.zoo`. The cells run on the run's executor (a local one with
    ``workers`` threads trains that many models at once; trainers must then be thread-safe, as the
    zoo's are); the outputs are assembled in grid order, so any executor writes the same files.)
    """

    name = command = "learnability"
    help = "perturbation learnability, robustness and post-augmentation gain"
    Args = LearnabilityArgs
    Result = LearnabilityResult
    example = dict(models="tfidf-lr", perturbations="leet_letters", trials=1, n_train=40, n_eval=20, ps=[0.1, 1.0],
                   workers=1)

    @classmethod
    def of(cls, args: LearnabilityArgs, inputs: Inputs) -> "LearnabilityStudy":
        """The study of ``args`` with the trainers given (``args.trainers``); ``workers`` must be
        a positive whole number (it is the number of threads that train models at once)."""
        if not isinstance(args.workers, int) or args.workers < 1:
            raise InputError(f"--workers: must be a positive integer (the models trained at once, e.g. 2), got "
                             f"{args.workers!r}")
        return cls(args, trainers=dict(args.trainers or {}), data=inputs.data.get("data"))

    def __init__(self, args: LearnabilityArgs, *, trainers: dict[str, Fit] | None = None, data: Any = None) -> None:
        self.args, self._given = args, data  # a Dataset or (train, eval) pair given in Python
        self.models, self.perturbations, self.ps = args.model_names(), args.perturbation_list(), args.p_grid()
        self.fits = {m: _trainer(m, trainers) for m in self.models}
        for fit in self.fits.values():  # a trainer with no stable fingerprint is refused before any work
            trainer_fingerprint(fit)

    def check(self) -> None:
        """The sizes asked for fit the data's splits: a larger ``--n-train`` or ``--n-eval`` is
        refused, naming what there is (never silently cut), before any model trains."""
        from ...data.loaders import train_test_split
        from ..inputs import sample_size

        args, data = self.args, _data(self.args, self._given)
        train, test = data if isinstance(data, tuple) else train_test_split(data, test_size=0.25, seed=0)
        sample_size(args.n_train, len(train), "training examples (the training split's size)", option="--n-train",
                    takes_all=False)
        sample_size(args.n_eval, len(test), "evaluation examples (the held-out split's size)", option="--n-eval",
                    takes_all=False)

    def prepare(self, ctx: RunContext) -> None:
        self.train, self.test = _split(self.args, self._given)
        self.x_train, self.x_test = self.train.inputs(), self.test.inputs()

    def identity(self) -> dict[str, Any]:
        return {"options": self.args.study_options(),
                "trainers": {m: trainer_fingerprint(f) for m, f in self.fits.items()},
                "train": examples_fingerprint(self.train), "test": examples_fingerprint(self.test)}

    def _key(self, model: str, pert: str, setting: str, seed: int) -> str:
        return content_key("learnability", self._trainer_fps[model], self._data, self.args.perturb_field,
                           self._pert_keys[pert], setting, seed)

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        self._trainer_fps = {m: trainer_fingerprint(f) for m, f in self.fits.items()}
        self._data = content_key(examples_fingerprint(self.train), examples_fingerprint(self.test))
        self._pert_keys = {p: perturbation_key(p) for p in self.perturbations}
        tasks = []
        for model, seed in self.grid():
            tasks += [Task(self._key(model, p, "robustness", seed), p, group=("robustness", model, seed))
                      for p in self.perturbations]
            for pert in self.perturbations:
                tasks += [Task(self._key(model, pert, f"p={p}", seed), p, group=("curve", model, pert, seed))
                          for p in self.ps]
        size = max(len(self.perturbations), len(self.ps), 1)
        self._phase = Phase("learnability.train", tasks,
                            partial(_learnability_cell, self.fits, self.x_train, self.train.labels, self.x_test,
                                    self.test.labels, self.args.perturb_field),
                            batch_size=size, label="model x seed x perturbation")
        yield self._phase

    def grid(self) -> list[tuple[str, int]]:
        """Every (model, seed) of the study: ``trials`` seeds of each model."""
        return [(m, s) for m in self.models for s in range(self.args.trials)]

    def finish(self, ctx: RunContext) -> "LearnabilityResult":
        results = self._phase.results

        def stored(model: str, pert: str, setting: str, seed: int) -> dict[str, Any]:
            return results[self._key(model, pert, setting, seed)]

        rows: list[dict[str, Any]] = []
        for model, seed in self.grid():
            rows += _robustness_rows(stored, model, self.perturbations, seed)
            for pert in self.perturbations:
                rows += _learnability_rows(stored, model, pert, self.ps, seed)
        result = LearnabilityResult(rows, summarise(rows, n_boot=self.args.n_boot), run_id=ctx.run_id)
        result.split_sizes = {"train": len(self.train), "eval": len(self.test)}
        return result


def _learnability_cell(fits: dict[str, Fit], x_train: list[TextInput], ytr: np.ndarray, x_test: list[TextInput],
                       yte: np.ndarray, field: str, group: tuple, payloads: list) -> list[dict[str, Any]]:
    """The phase function: a (model, seed) robustness cell over the perturbations in ``payloads``,
    or a (model, perturbation, seed) learnability curve over the ps in ``payloads``."""
    if group[0] == "robustness":
        _, model, seed = group
        return [res for *_, res in _robustness_results(fits[model], model, x_train, ytr, x_test, yte, payloads, seed,
                                                        field)]
    _, model, pert, seed = group
    by_p = {setting: res for _, _, setting, _, res in _curve_results(fits[model], model, x_train, x_test, pert,
                                                                       payloads, seed, field)}
    return [by_p[f"p={float(p)}"] for p in payloads]


def _trainer(name: str, trainers: dict[str, Fit] | None) -> Fit:
    if trainers is not None and name in trainers:
        return trainers[name]
    from ...models.zoo import get_trainer

    return get_trainer(name)


def _robustness_results(fit: Fit, model: str, train: list[TextInput], ytr: np.ndarray, test: list[TextInput],
                        yte: np.ndarray, perturbations: Sequence[str], seed: int, field: str = "both") -> list[tuple]:
    """Eq. 1 and 2 inputs for ``perturbations``: one clean model, one augmented model each."""
    clean_model = fit(list(train), ytr.copy(), seed)
    acc_clean = _accuracy(clean_model, test, yte)
    out = []
    for pert in perturbations:
        g = get_perturbation(pert)
        test_star, _ = perturb_inputs(g, test, seed=seed, field=field)
        train_star, _ = perturb_inputs(g, train, seed=seed + 1, field=field)
        augmented = fit(list(train) + train_star, np.concatenate([ytr, ytr]), seed)
        res = {"acc_clean": acc_clean, "acc_perturbed": _accuracy(clean_model, test_star, yte),
               "acc_augmented": _accuracy(augmented, test_star, yte)}
        out.append((model, pert, "robustness", seed, res))
    return out


def _curve_results(fit: Fit, model: str, train: list[TextInput], test: list[TextInput], pert: str,
                   ps: Sequence[float], seed: int, field: str = "both") -> list[tuple]:
    # labels, z and g(x) do not depend on which ps are asked: the same values as one full run
    return [(model, pert, f"p={q.p}", seed, q.to_row())
            for q in learnability_curve(fit, train, test, pert, ps=ps, seed=seed, field=field)]


def _robustness_rows(stored: Callable[..., dict[str, Any]], model: str, perturbations: Sequence[str],
                     seed: int) -> list[dict]:
    rows = []
    for pert in perturbations:
        res = dict(stored(model, pert, "robustness", seed))
        res["robustness"] = robustness(res["acc_perturbed"], res["acc_clean"])
        res["post_aug_delta"] = post_augmentation_delta(res["acc_augmented"], res["acc_perturbed"])
        rows += [{"model": model, "perturbation": pert, "metric": m, "p": None, "seed": seed, "value": v}
                 for m, v in res.items()]
    return rows


def _learnability_rows(stored: Callable[..., dict[str, Any]], model: str, pert: str, ps: Sequence[float],
                       seed: int) -> list[dict]:
    points = [LearnabilityPoint(**stored(model, pert, f"p={p}", seed)) for p in ps]
    rows = [{"model": model, "perturbation": pert, "metric": m, "p": q.p, "seed": seed, "value": v}
            for q in points for m, v in (("learnability", q.learnability), ("learnability_prob", q.learnability_prob))]
    rows.append({"model": model, "perturbation": pert, "metric": "avg_learnability", "p": None, "seed": seed,
                 "value": log_auc([q.p for q in points], [q.learnability for q in points])})
    return rows


def summarise(rows: Sequence[dict[str, Any]], n_boot: int | None = None) -> dict[str, Any]:
    """Means and standard deviations over seeds per model × perturbation (Table 2) and Spearman ρ
    with p-values and percentile-bootstrap 95 % intervals (``n_boot`` resamples of the pairs;
    default: the option's, ``--n-boot``) across the pairs (Table 3)."""
    if n_boot is None:
        from .config import LearnabilityArgs

        n_boot = LearnabilityArgs.defaults()["n_boot"]
    metrics = ("avg_learnability", "robustness", "post_aug_delta")
    pairs = sorted({(r["model"], r["perturbation"]) for r in rows})
    table = []
    for model, pert in pairs:
        entry: dict[str, Any] = {"model": model, "perturbation": pert}
        for m in metrics:
            v = [r["value"] for r in rows if (r["model"], r["perturbation"], r["metric"]) == (model, pert, m)]
            entry[m] = float(np.mean(v))
            entry[m + "_std"] = float(np.std(v, ddof=1)) if len(v) > 1 else None
            entry[m + "_se"] = None if entry[m + "_std"] is None else entry[m + "_std"] / float(np.sqrt(len(v)))
        table.append(entry)
    corr = []
    for a, b in (("avg_learnability", "robustness"), ("avg_learnability", "post_aug_delta"),
                 ("robustness", "post_aug_delta")):
        x, y = [t[a] for t in table], [t[b] for t in table]
        rho, pv = spearman(x, y)
        ci = None
        if len(table) >= 3 and np.isfinite(x).all() and np.isfinite(y).all():
            boot = rank_correlations(x, y, n_boot=n_boot, seed=0)  # resampling model x perturbation pairs
            ci = None if np.isnan(boot["spearman_low"]) else [boot["spearman_low"], boot["spearman_high"]]
        corr.append({"x": a, "y": b, "spearman": None if np.isnan(rho) else rho,
                     "p_value": None if np.isnan(pv) else pv, "ci": ci, "n_pairs": len(table)})
    return {"table": table, "spearman": corr}


def learnability_markdown(summary: dict[str, Any]) -> str:
    """Table 2 (average learnability per perturbation × model, rows sorted by their mean over
    models, the largest value of each column in bold, with every value within two standard errors
    of it: :func:`~perturblab.measures.quality.tied_with_best`) and Table 3 (Spearman ρ) of the paper,
    plus robustness and post-augmentation Δ; mean ± s.d. over seeds."""
    table = summary["table"]
    models = list(dict.fromkeys(t["model"] for t in table))
    perts = list(dict.fromkeys(t["perturbation"] for t in table))
    get = {(t["model"], t["perturbation"]): t for t in table}

    def block(metric: str, title: str, fmt: str) -> list[str]:
        avg = {p: float(np.mean([get[(m, p)][metric] for m in models if (m, p) in get])) for p in perts}
        best = {}  # each model's largest value and those within two standard errors of it (ties)
        for m in models:
            have = [p for p in perts if (m, p) in get]
            best[m] = {have[i] for i in tied_with_best([get[(m, p)][metric] for p in have],
                                                       [get[(m, p)].get(metric + "_se") for p in have])}
        lines = ["", f"## {title}", "", "| perturbation | " + " | ".join(models) + " | average over models |",
                 "|---|" + "---|" * (len(models) + 1)]
        for p in sorted(perts, key=lambda q: avg[q]):
            cells = []
            for m in models:
                t = get.get((m, p))
                if t is None:
                    cells.append("n/a")
                    continue
                sd = t.get(metric + "_std")
                text = fmt.format(t[metric]) + ("" if sd is None else " ± " + fmt.format(sd))
                cells.append(f"**{text}**" if p in best[m] else text)
            lines.append(f"| {p} | " + " | ".join(cells) + f" | {fmt.format(avg[p])} |")
        return lines

    lines = ["# Perturbation learnability", "", "Mean ± s.d. over seeds; rows sorted by the average over models; "
             "**bold**: each model's largest value, and every value tied with it (within two standard errors "
             "over seeds of the difference)."]
    lines += block("avg_learnability", "Average learnability, log-AUC over log10 p (Table 2)", "{:.3f}")
    lines += block("robustness", "Robustness: accuracy on perturbed − clean test (Eq. 1)", "{:.3f}")
    lines += block("post_aug_delta", "Post-augmentation Δ (Eq. 2)", "{:.3f}")
    lines += ["", "## Spearman correlations across model × perturbation pairs (Table 3)", "",
              "| x | y | ρ | 95 % bootstrap CI | p-value | pairs |", "|---|---|---|---|---|---|"]
    for c in summary["spearman"]:
        rho = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f}"
        ci = "n/a" if not c.get("ci") else f"[{c['ci'][0]:.2f}, {c['ci'][1]:.2f}]"
        pv = "n/a" if c["p_value"] is None else f"{c['p_value']:.2g}"
        lines.append(f"| {c['x']} | {c['y']} | {rho} | {ci} | {pv} | {c['n_pairs']} |")
    return "\n".join(lines) + "\n"
