"""The public Python API: one function per study, named like its command.

Each function's keyword arguments are the command's long options with ``-`` as ``_``; models
may be given as specs (preset names, directories, hub ids) or as ready model objects, and data
as a spec or as :class:`~perturblab.data.Dataset` objects. Each returns the study's result
object (rows, ``to_pandas()``, summary, figures, ``save(dir)``); the command line calls the same
function and then ``save``, so the two cannot disagree.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .errors import InputError
from .studies.robustness.config import DEFAULT_PROMPT

if TYPE_CHECKING:  # pragma: no cover
    from .data.examples import Dataset
    from .studies.scope import ScopeResult
    from .studies.scope.checkpoints import CheckpointResult
    from .studies.learnability.study import LearnabilityResult
    from .studies.robustness.generation import GenerationResult
    from .studies.robustness.study import RobustnessResult
    from .studies.selfcheck.result import SelfCheckResult
    from .studies.grounding.similarity import SimilarityResult
    from .studies.scope.lm import LMScopeResult

#: ``perturb_field`` of the search studies -> the index of the text of a pair they change (None: both)
SEARCH_FIELDS: dict[str, int | None] = {"a": 0, "b": 1, "both": None}


def renamed(value: Any, old_value: Any, default: Any, name: str, old: str) -> Any:
    """An option given by its name or by its old name (``old_value`` not None); both, with other
    values, is an error."""
    if old_value is None:
        return value
    if value != default and value != old_value:
        raise InputError(f"{name}={value!r} and its old name {old}={old_value!r} disagree; give {name} only")
    return old_value


def _names(value: str | Sequence[Any] | Any) -> list[Any]:
    """A comma-separated string (commas inside a spec's ``[...]`` options belong to it) or a list
    of specs / model objects, as a list."""
    if isinstance(value, str):
        from .core.options import csv_list

        return csv_list(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _model_table(models: Sequence[Any], role: str) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """Display names for ``models`` (a spec's ``NAME=``, else its source; an object's ``name``
    attribute, else ``<role><i>``), the ready objects by name and the specs by name."""
    from .models.resolve import ModelSpec

    names, given, specs = [], {}, {}
    for i, m in enumerate(models):
        if isinstance(m, str):
            ms = ModelSpec.parse(m)
            if specs.get(ms.name, m) != m or ms.name in given:
                raise InputError(f"two different {role}s are named {ms.name!r}; give one another name (NAME=SOURCE)")
            names.append(ms.name)
            specs[ms.name] = m
            continue
        if not hasattr(m, "fingerprint"):
            raise InputError(f"{role} {i} is a {type(m).__name__}; give a model spec (a preset name, a directory "
                             "or a hub id) or a model object with a fingerprint (perturblab.models)")
        name = str(getattr(m, "name", "") or f"{role}{i}")
        if given.get(name, m) is not m or name in specs:
            raise InputError(f"two different {role}s are named {name!r}; give one another name attribute")
        names.append(name)
        given[name] = m
    return names, given, specs


def _models_of(reference: Any, targets: Any) -> tuple[str, list[str], dict[str, Any], dict[str, str]]:
    """The reference's and targets' display names, ready objects and specs; one name may not
    stand for two different models."""
    ref_names, given, specs = _model_table(_names(reference)[:1] if isinstance(reference, str) else [reference],
                                           "reference")
    tgt_names, given_t, specs_t = _model_table(_names(targets), "target")
    seen: dict[str, Any] = {}
    for table in (given, specs, given_t, specs_t):
        for name, model in table.items():
            if name in seen and seen[name] is not model and seen[name] != model:
                raise InputError(f"two different models are named {name!r}; give one of them another name "
                                 "(NAME=SOURCE for a spec, the name attribute of an object)")
            seen[name] = model
    return ref_names[0], tgt_names, {**given, **given_t}, {**specs, **specs_t}


def _splits(data: "str | Dataset | tuple[Dataset, Dataset]", *, text_column: str | None,
            text_fields: Sequence[str] | str, label_column: str | None, perturb_field: str, seed: int,
            test_size: float) -> "tuple[Dataset, Dataset]":
    from .data.examples import Dataset
    from .data.loaders import train_test_split
    from .studies.inputs import load_study_data

    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(d, Dataset) for d in data):
        ds, splits = data[1], data
    else:
        fields = _names(text_fields) if text_fields else []
        if text_column and fields:
            raise InputError("--text-fields takes one or two column names (A or A,B) and replaces --text-column; "
                             f"got --text-fields {','.join(fields)} and --text-column {text_column}")
        if isinstance(data, Dataset):
            ds = data
        else:
            ds = load_study_data(str(data), text_fields=fields or ([text_column] if text_column else []),
                                 label_column=label_column)
        splits = None
    if perturb_field in ("b", "both") and not ds.is_pair:
        raise InputError(f"--perturb-field {perturb_field} needs the two texts of a pair, but the data have one "
                         "text field; name two columns with --text-fields A,B or use --perturb-field a")
    return splits or train_test_split(ds, test_size=test_size, seed=seed)


def _executor(stack: ExitStack, executor: Any, address: str | None, num_cpus: int | None) -> Any:
    if not isinstance(executor, str):
        return executor
    from .executor import make_executor

    ex = make_executor(executor, address=address, num_cpus=num_cpus)
    if hasattr(ex, "shutdown"):
        stack.callback(ex.shutdown)
    return ex


def scope(reference: Any, targets: Any, *, capabilities: str | Sequence[str] = ("synonym", "typo"),
          data: "str | Dataset | tuple[Dataset, Dataset]" = "rotten_tomatoes", text_column: str | None = None,
          text_fields: str | Sequence[str] = (), label_column: str | None = None, perturb_field: str = "a",
          n: int = 500, trials: int = 3, seed: int = 0, loss: str = "l1", search: str = "greedy",
          beam_width: int = 3, max_words: int | None = None, patience: int | None = None,
          max_candidates: int | None = None, allow_non_alphabetic: bool = False,
          synonym_min_similarity: float | None = None, reinflect_synonyms: bool = False, tolerance: float | None = None,
          cutoff: float | None = None, n_boot: int = 1000, test_size: float = 0.25, out: str | Path | None = None,
          quiet: bool = False,
          executor: Any = "local", address: str | None = None, num_cpus: int | None = None,
          models: Mapping[str, Any] | None = None) -> "ScopeResult":
    """Shared invariances of ``targets`` with ``reference`` (SCoPE; the ``scope`` command).

    ``reference`` and ``targets`` are model specs (``"minilm-l6"``, a directory, a hub id; targets
    also as one comma-separated string) or classifier objects (``labels``, ``predict_proba``,
    ``fingerprint``). ``out`` keeps the results store and prediction cache, so calling again
    resumes and computes only what changed (``None``: a temporary directory). Nothing but the
    store is written until you call ``.save(dir)``. Eligible words follow SCoPE Sec. 3.2 (no
    stopwords, none shorter than four, none changed twice) and our alphabetic-only constraint;
    ``allow_non_alphabetic=True`` (as in :func:`scope_lm` and :func:`checkpoints`) drops the latter.
    ``synonym_min_similarity`` (a cosine, e.g. 0.85) and ``reinflect_synonyms`` keep synonym swaps'
    meaning and grammar (:class:`~perturblab.perturb.search.SynonymOptions`; both off by default,
    as in the paper).

    Example (two small classifiers from :mod:`perturblab.models`, on data of your own)::

        >>> import perturblab as pl
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.models import CallableClassifier
        >>> import numpy as np
        >>> def lexicon(words):
        ...     def proba(texts):
        ...         s = np.array([sum(w in t for w in words) for t in texts], float)
        ...         p = 1 / (1 + np.exp(-(s - 0.5)))
        ...         return np.stack([1 - p, p], axis=1)
        ...     return proba
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 4], ["negative", "positive"])
        >>> ref = CallableClassifier(lexicon(["good"]), labels=["negative", "positive"], name="ref")
        >>> tgt = CallableClassifier(lexicon(["good", "story"]), labels=["negative", "positive"], name="tgt")
        >>> res = pl.scope(ref, [tgt], capabilities="typo", data=data, n=6, trials=1, quiet=True)
        >>> sorted(res.summary[0])[:3]
        ['capability', 'flags', 'gap_iid_acc']
        >>> res.summary[0]["flags"]  # neither model predicts one class or is at chance level
        []
        >>> 0 <= res.rows[0]["soft_scope"] <= res.rows[0]["hard_scope"] <= 1
        True
    """
    from .measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
    from .studies.scope import ScopeConfig, ScopeStudy

    if perturb_field not in SEARCH_FIELDS:
        raise InputError(f"perturb_field must be one of {', '.join(SEARCH_FIELDS)}, got {perturb_field!r}")
    ref_name, tgt_names, given, specs = _models_of(reference, targets)
    given.update(models or {})
    data_name = data if isinstance(data, str) else getattr(data, "name", None) or "data"
    cfg = ScopeConfig(reference=ref_name, targets=tgt_names, capabilities=_names(capabilities),
                      data=str(data_name), n=n, trials=trials, seed=seed, loss=loss, search=search,
                      beam_width=beam_width, max_words=max_words, patience=patience, max_candidates=max_candidates,
                      alphabetic_only=not allow_non_alphabetic, synonym_min_similarity=synonym_min_similarity,
                      reinflect_synonyms=reinflect_synonyms,
                      tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
                      cutoff=DEFAULT_CUTOFF if cutoff is None else cutoff, n_boot=n_boot, test_size=test_size,
                      perturb_field=SEARCH_FIELDS[perturb_field])
    cfg.validate()
    splits = _splits(data, text_column=text_column, text_fields=text_fields, label_column=label_column,
                     perturb_field=perturb_field, seed=seed, test_size=test_size)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = _executor(stack, executor, address, num_cpus)
        study = ScopeStudy(cfg, where, models=given, splits=splits, progress=not quiet, specs=specs)
        study.run(executor=ex)
        assert study.result is not None
        return study.result


def scope_lm(reference: Any, targets: Any, *, capabilities: str | Sequence[str] = ("synonym", "typo"),
             corpus: str = "oanc", sentences: Sequence[str] | None = None, n: int | None = 100, trials: int = 3,
             seed: int = 0, loss: str = "l1", search: str = "greedy", beam_width: int = 3,
             max_words: int | None = None, patience: int | None = None, max_candidates: int | None = None,
             allow_non_alphabetic: bool = False, synonym_min_similarity: float | None = None,
             reinflect_synonyms: bool = False, tolerance: float | None = None, cutoff: float | None = None,
             n_boot: int = 1000,
             chunk_size: int = 8, max_batch: int = 256, out: str | Path | None = None,
             quiet: bool = False) -> "LMScopeResult":
    """Shared invariances of language models (SCoPE App. G; the ``scope-lm`` command).

    ``reference`` and ``targets`` are language-model specs (``"smollm2-135m"``, a directory, a
    ``.gguf`` file; targets also as one comma-separated string) or
    :class:`~perturblab.models.lm.LanguageModel` objects sharing one vocabulary. The base sentences
    come from ``corpus`` or are given as ``sentences``. ``chunk_size`` base sentences are searched
    and scored together (one work cell); about ``max_batch`` texts are scored at once (smaller: less
    memory). ``out`` keeps the results store (``None``: a temporary directory); ``.save(dir)``
    writes ``results.json``.

    Example (a language model against itself scores 1)::

        >>> import perturblab as pl, transformers
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> from perturblab.models.lm import HFCausalLM
        >>> texts = ["the cat sat on the warm mat today", "a dog ran in the big green park",
        ...          "she read the old book by the window", "we walked along the quiet river bank"]
        >>> vocab = {w: i for i, w in enumerate(["<unk>", *sorted({w for t in texts for w in t.split()})])}
        >>> words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tok = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<unk>")
        >>> config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
        ...                                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
        >>> lm = HFCausalLM(transformers.LlamaForCausalLM(config), tok, name="tiny")
        >>> res = pl.scope_lm(lm, [lm], capabilities="typo", sentences=texts, n=4, trials=1, max_words=1,
        ...                   n_boot=50, quiet=True)
        >>> res.rows[0]["hard_scope"], res.rows[0]["soft_scope"]
        (1.0, 1.0)
    """
    from .measures.scope import DEFAULT_TOLERANCE
    from .measures.scope_lm import DEFAULT_LM_CUTOFF
    from .studies.scope.lm import LMScopeConfig, LMScopeStudy

    ref_name, tgt_names, given, specs = _models_of(reference, targets)
    cfg = LMScopeConfig(reference=ref_name, targets=tgt_names, capabilities=_names(capabilities), corpus=corpus,
                        n=n, trials=trials, seed=seed, loss=loss, search=search, beam_width=beam_width,
                        max_words=max_words, patience=patience, max_candidates=max_candidates,
                        alphabetic_only=not allow_non_alphabetic, synonym_min_similarity=synonym_min_similarity,
                        reinflect_synonyms=reinflect_synonyms,
                        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
                        cutoff=DEFAULT_LM_CUTOFF if cutoff is None else cutoff, n_boot=n_boot,
                        chunk_size=chunk_size, max_batch=max_batch)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        study = LMScopeStudy(cfg, where, models=given, sentences=sentences, progress=not quiet, specs=specs)
        study.run()
        assert study.result is not None
        return study.result


def _fractions(value: str | Sequence[float]) -> list[float]:
    if not isinstance(value, str):
        return [float(x) for x in value]
    try:
        return [float(x) for x in _names(value)]
    except ValueError:
        raise InputError(f"--fractions takes comma-separated numbers in [0, 1], e.g. 0,0.5,1; got {value!r}") from None


def checkpoints(checkpoints: Any = None, *, finetune: str | None = None, fractions: str | Sequence[float] = "0,0.2,0.4,0.6,0.8,1",
                epochs: int = 1, max_seconds: float = 300.0, lr: float = 5e-5, n_train: int | None = None,
                capabilities: str | Sequence[str] = ("synonym", "typo"),
                comparisons: str | Sequence[str] = ("vs_final", "vs_previous"),
                data: "str | Dataset | tuple[Dataset, Dataset]" = "rotten_tomatoes", text_column: str | None = None,
                text_fields: str | Sequence[str] = (), label_column: str | None = None, perturb_field: str = "a",
                n: int | None = 200, trials: int = 3, seed: int = 0, max_words: int | None = None,
                patience: int | None = None, max_candidates: int | None = None, allow_non_alphabetic: bool = False,
                synonym_min_similarity: float | None = None, reinflect_synonyms: bool = False,
                out: str | Path | None = None, quiet: bool = False) -> "CheckpointResult":
    """Shared invariances over the checkpoints of one training run (SCoPE App. D; the
    ``checkpoints`` command).

    ``checkpoints`` are in training order, the last the final model: classifier directories (one
    string, comma-separated, or a list; one directory holding ``checkpoint-*`` subdirectories
    stands for those), :class:`~perturblab.studies.scope.checkpoints.Checkpoint` objects, or
    ``None`` with ``finetune=BASE`` to fine-tune an encoder here with checkpoints at ``fractions``.

    Example (three checkpoints that drift from the final one)::

        >>> import numpy as np, perturblab as pl
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.models import CallableClassifier
        >>> from perturblab.studies.scope.checkpoints import Checkpoint
        >>> def lexicon(weight):
        ...     def proba(texts):
        ...         s = np.array([weight * ("good" in t) - 0.5 + 0.1 * len(t) % 1 for t in texts])
        ...         p = 1 / (1 + np.exp(-s))
        ...         return np.stack([1 - p, p], axis=1)
        ...     return proba
        >>> labels = ["negative", "positive"]
        >>> cks = [Checkpoint(f"step{i}", CallableClassifier(lexicon(w), labels, name=f"step{i}"), 50.0 * i)
        ...        for i, w in enumerate([0.2, 1.0, 3.0])]
        >>> texts = ["a good film", "a bad film", "good acting here", "the plot was weak", "a good story"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 4], labels)
        >>> res = pl.checkpoints(cks, capabilities="typo", data=data, n=4, trials=1, quiet=True)
        >>> [(r["comparison"], r["checkpoint"]) for r in res.rows][:3]
        [('vs_final', 'step0'), ('vs_final', 'step1'), ('vs_final', 'step2')]
        >>> res.rows[2]["hard_scope"]  # the final checkpoint against itself
        1.0
    """
    from .models.finetune import FinetuneConfig
    from .studies.scope.checkpoints import (Checkpoint, CheckpointConfig, CheckpointStudy, checkpoints_from_dirs,
                                            finetune_checkpoints)

    if (checkpoints is None) == (finetune is None):
        raise InputError("give either checkpoints (--checkpoints DIR,DIR,...) or a model to fine-tune "
                         "(--finetune BASE), not both and not neither")
    cfg = CheckpointConfig(capabilities=_names(capabilities), n=n, trials=trials, seed=seed, max_words=max_words,
                           patience=patience, max_candidates=max_candidates, alphabetic_only=not allow_non_alphabetic,
                           synonym_min_similarity=synonym_min_similarity, reinflect_synonyms=reinflect_synonyms,
                           comparisons=tuple(_names(comparisons)), perturb_field=SEARCH_FIELDS[perturb_field],
                           data=data if isinstance(data, str) else getattr(data, "name", None) or "data")
    splits = _splits(data, text_column=text_column, text_fields=text_fields, label_column=label_column,
                     perturb_field=perturb_field, seed=seed, test_size=cfg.test_size)
    if finetune is not None:
        train = splits[0] if n_train is None else splits[0].sample(n_train, seed=seed)
        ft = FinetuneConfig(epochs=epochs, max_seconds=max_seconds, lr=lr)
        cks = finetune_checkpoints(finetune, train, seed=seed, fractions=_fractions(fractions), config=ft,
                                   progress=not quiet)
    else:
        given = _names(checkpoints)
        cks = given if any(isinstance(c, Checkpoint) for c in given) else checkpoints_from_dirs(given)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        study = CheckpointStudy(cfg, where, cks, splits=splits, progress=not quiet)
        study.run()
        assert study.result is not None
        return study.result


def perturbation_names(spec: str | Sequence[str]) -> list[str]:
    """``all`` = the learnability paper's eight, ``robustness`` = the robustness paper's eight,
    ``every`` = every registered perturbation; otherwise a comma list (or a list) of names."""
    from .perturb.catalogue import PERTURBATIONS
    from .studies.robustness.layer_probes import DEFAULT_PERTURBATIONS as ROBUSTNESS_EIGHT
    from .studies.learnability.study import NOISE

    if not isinstance(spec, str):
        return list(spec)
    named = {"all": list(NOISE), "robustness": list(ROBUSTNESS_EIGHT), "every": PERTURBATIONS.names()}
    return named.get(spec.strip().lower(), _names(spec))


def label_maps(values: Sequence[str] | Mapping[str, Mapping[str, str]] | None) -> dict[str, dict[str, str]]:
    """``[MODEL:]model_label=data_label,...`` entries -> {model or "*": {model label: data label}}
    (a mapping is taken as it is)."""
    if isinstance(values, Mapping):
        return {k: dict(v) for k, v in values.items()}
    maps: dict[str, dict[str, str]] = {}
    for v in values or []:
        spec, _, mapping = v.rpartition(":")
        pairs = [x.split("=", 1) for x in _names(mapping)]
        if not pairs or any(len(p) != 2 or not p[0].strip() or not p[1].strip() for p in pairs):
            raise InputError(f"--label-map {v!r}: expected [MODEL:]model_label=data_label,... "
                             "(e.g. NEGATIVE=neg,POSITIVE=pos)")
        maps[spec.strip() or "*"] = {a.strip(): b.strip() for a, b in pairs}
    return maps


def robustness(models: Any, *, perturbations: str | Sequence[str] = "robustness",
               data: str = "rotten_tomatoes", text_fields: str | Sequence[str] = (), label_column: str | None = None,
               task: str | None = None, metrics: str | Sequence[str] | None = None, trials: int = 3,
               n_train: int = 2000, n_eval: int = 1000, perturb_field: str = "both",
               label_map: Sequence[str] | Mapping[str, Mapping[str, str]] | None = None, n_boot: int = 1000,
               train_seed: int = 0, out: str | Path | None = None, quiet: bool = False, executor: Any = "local",
               address: str | None = None, num_cpus: int | None = None, seeds: int | None = None,
               n_test: int | None = None) -> "RobustnessResult":
    """Relative robustness of classifiers or regressors to perturbations (robustness paper,
    Tables 1 and 3; the ``robustness`` command).

    ``models`` are specs (presets, trainable zoo models, model directories, hub ids, ``NAME=SOURCE``;
    one comma-separated string or a list) or model objects; ``perturbations`` a list or
    ``robustness`` / ``all`` / ``every``; ``trials`` draws of each random perturbation;
    ``n_eval`` evaluation examples. ``out`` keeps the results store (``None``: a
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
        >>> res = pl.robustness([clf], perturbations="drop_first", data=str(path), n_train=8, n_eval=8,
        ...                     metrics="accuracy", quiet=True, n_boot=50)
        >>> (res.rows[0]["clean"], res.rows[0]["perturbed"], res.rows[0]["relative_robustness"])
        (1.0, 0.5, 0.5)
    """
    from .studies.robustness.study import RobustnessConfig, RobustnessStudy

    trials = renamed(trials, seeds, 3, "trials", "seeds")
    n_eval = renamed(n_eval, n_test, 1000, "n_eval", "n_test")
    specs, given = [], {}
    for m in _names(models):
        if isinstance(m, str):
            specs.append(m)
        else:
            name = str(getattr(m, "name", "") or f"model{len(specs)}")
            specs.append(name)
            given[name] = m
    cfg = RobustnessConfig(models=specs, perturbations=perturbation_names(perturbations), data=data,
                           metrics=_names(metrics) if metrics else None, seeds=trials, n_train=n_train, n_test=n_eval,
                           perturb_field=perturb_field, label_maps=label_maps(label_map),
                           text_fields=_names(text_fields) if text_fields else (), label_column=label_column, task=task,
                           n_boot=n_boot, train_seed=train_seed)
    from .core.driver import run_study

    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = _executor(stack, executor, address, num_cpus)
        study = RobustnessStudy(cfg, classifiers=given)
        return run_study(study, where, executor=ex, progress=not quiet)


def generation(models: Any, *, data: str = "lead:conll2010", source_column: str = "source",
               reference_column: str = "reference", perturbations: str | Sequence[str] = "robustness",
               metrics: str | Sequence[str] = ("rouge1", "rouge2", "rougeL"), n: int = 100, trials: int = 3,
               max_new_tokens: int = 40, prompt: str | None = DEFAULT_PROMPT, seed: int = 0, n_boot: int = 1000,
               out: str | Path | None = None, quiet: bool = False, seeds: int | None = None) -> "GenerationResult":
    """Robustness of generated summaries to perturbed sources (robustness paper Sec. 3.3-3.4,
    Table 4; the ``generation`` command): ROUGE F of greedy generations from clean and perturbed
    prompts, relative robustness 1 − (m_c − m_p) / m_c with paired-bootstrap intervals.

    ``models`` are language-model specs (presets, directories, ``.gguf`` files, hub ids,
    ``NAME=SOURCE``; one comma-separated string or a list) or objects with ``generate(prompts,
    max_new_tokens)``, ``name`` and ``fingerprint``; ``data`` is ``lead:<corpus>`` or a file of
    source/reference pairs; ``prompt`` a template with ``{source}`` (default: the study's);
    ``trials`` draws of each random perturbation (``seeds`` is its old name); ``seed`` the sample
    of ``n`` examples. ``out`` keeps the results store, so calling again generates only what is
    missing (``None``: a temporary directory); ``.save(dir)`` writes what the command writes.

    Example (a "model" that copies the source, against dropping the first word)::

        >>> import perturblab as pl, pathlib, tempfile
        >>> class Copier:
        ...     name, fingerprint = "copier", "doctest-copier-v1"
        ...     def generate(self, prompts, max_new_tokens=40):
        ...         return [" " + p.split("Text: ")[1].split("\\n")[0] + "\\n" for p in prompts]
        >>> lines = ["source,reference"] + [f"the film number {i} was good,the film number {i} was good"
        ...                                 for i in range(6)]
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.csv"
        >>> _ = path.write_text("\\n".join(lines) + "\\n")
        >>> res = pl.generation([Copier()], data=str(path), perturbations="drop_first", metrics="rouge1",
        ...                     n_boot=50, quiet=True)
        >>> r = res.rows[0]
        >>> (r["perturbation"], r["clean"], round(r["perturbed"], 3), r["n"])
        ('drop_first', 1.0, 0.909, 6)
    """
    from .core.driver import run_study
    from .studies.robustness.generation import GenerationConfig, GenerationStudy

    trials = renamed(trials, seeds, 3, "trials", "seeds")
    specs, given = [], {}
    for m in _names(models):
        if isinstance(m, str):
            specs.append(m)
            continue
        if not hasattr(m, "fingerprint") or not callable(getattr(m, "generate", None)):
            raise InputError(f"{type(m).__name__} is not a language model: give a spec or an object with "
                             "generate(prompts, max_new_tokens) and a fingerprint")
        name = str(getattr(m, "name", "") or f"model{len(specs)}")
        specs.append(name)
        given[name] = m
    cfg = GenerationConfig(models=specs, data=data, perturbations=perturbation_names(perturbations), seeds=trials,
                           n=n, sample_seed=seed, metrics=_names(metrics), prompt=DEFAULT_PROMPT if prompt is None
                           else prompt, max_new_tokens=max_new_tokens, source_column=source_column,
                           reference_column=reference_column, n_boot=n_boot)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        return run_study(GenerationStudy(cfg, models=given, progress=not quiet), where, progress=not quiet)


def learnability(models: Any = ("tfidf-lr", "textrnn"), *, perturbations: str | Sequence[str] = "all",
                 data: str = "rotten_tomatoes", text_fields: str | Sequence[str] = (), label_column: str | None = None,
                 perturb_field: str = "both", trials: int = 3, n_train: int = 2000,
                 n_eval: int = 500, ps: Sequence[float] | None = None, workers: int = 2,
                 trainers: Mapping[str, Any] | None = None, out: str | Path | None = None, quiet: bool = False,
                 executor: Any = "local", address: str | None = None, num_cpus: int | None = None,
                 seeds: int | None = None, n_test: int | None = None) -> "LearnabilityResult":
    """Perturbation learnability, robustness and post-augmentation gain (learnability paper,
    Tables 2-3; the ``learnability`` command).

    ``models`` are trainable model names (``tfidf-lr``, ``textrnn``, ``minilm-probe``,
    ``hf-finetune``), or names given a ``fit(texts, labels, seed)`` function in ``trainers``;
    ``perturbations`` a list or ``all`` (the paper's eight) / ``robustness`` / ``every``; ``ps`` the
    perturbation probabilities (default: the paper's grid); ``trials`` training seeds;
    ``n_eval`` evaluation examples. ``workers`` models train at once in threads.
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
    """
    from .measures.learnability import LEARNABILITY_GRID
    from .studies.learnability.study import LearnabilityConfig, LearnabilityStudy

    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a positive integer, got {workers!r}")
    trials = renamed(trials, seeds, 3, "trials", "seeds")
    n_eval = renamed(n_eval, n_test, 500, "n_eval", "n_test")
    cfg = LearnabilityConfig(models=_names(models), perturbations=perturbation_names(perturbations), data=data,
                             n_train=n_train, n_test=n_eval, seeds=trials, ps=list(ps) if ps else LEARNABILITY_GRID,
                             text_fields=_names(text_fields) if text_fields else (), label_column=label_column,
                             perturb_field=perturb_field)
    from .core.driver import run_study
    from .executor import LocalExecutor

    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = LocalExecutor(workers) if executor == "local" else _executor(stack, executor, address, num_cpus)
        study = LearnabilityStudy(cfg, trainers=dict(trainers or {}))
        return run_study(study, where, executor=ex, progress=not quiet)


def selfcheck(models: Any, *, corpus: "str | Any" = "conll2010", benign_corpus: "str | Any | None" = "oanc",
              text_column: str = "text", n: int = 1000, seed: int = 0,
              metrics: str | Sequence[str] = ("negation", "toxicity", "long_range", "word_order", "tokenization",
                                              "entropy"),
              no_ablations: bool = False, max_new_tokens: int = 32, max_sentence_words: int | None = 64,
              negation_rule: str = "paper", chunk: int = 128,
              out: str | Path | None = None, quiet: bool = False) -> "SelfCheckResult":
    """Self-supervised sensitivity scores of language models on any text (*Bring your own data!*;
    the ``selfcheck`` command): negation, toxicity, long-range context, word order, tokenization
    and entropy, with the ablations unless ``no_ablations``.

    ``models`` are language-model specs or :class:`~perturblab.models.lm.LanguageModel` objects;
    ``corpus`` and ``benign_corpus`` corpus names, files or :class:`~perturblab.data.corpus.Corpus`
    objects (``benign_corpus=None`` or ``"none"`` leaves out the normalised negation score).
    Sentences of more than ``max_sentence_words`` whitespace words (``None``: no limit) are left
    out of every metric but long-range context. ``negation_rule`` is ``"paper"`` (Sec. 4's text,
    the default) or ``"byod-code"`` (the authors' released code, for comparisons with the
    published numbers); see :class:`~perturblab.perturb.selfcheck.Negate`.
    ``chunk`` examples are scored and stored together (smaller: less lost to a crash; the scores
    do not depend on it). ``out`` keeps the results store (``None``: a temporary directory).

    Example (the entropy of a tiny random language model on a few sentences)::

        >>> import perturblab as pl, transformers
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> from perturblab.data.corpus import Corpus
        >>> from perturblab.models.lm import HFCausalLM
        >>> texts = ["the cat sat on the warm mat today .", "a dog ran in the big green park .",
        ...          "she read the old book by the window .", "we walked along the quiet river bank ."]
        >>> vocab = {w: i for i, w in enumerate(["<unk>", *sorted({w for t in texts for w in t.split()})])}
        >>> words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tok = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<unk>")
        >>> config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
        ...                                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
        >>> lm = HFCausalLM(transformers.LlamaForCausalLM(config), tok, name="tiny")
        >>> res = pl.selfcheck([lm], corpus=Corpus(texts, [0, 0, 1, 1], name="tiny"), benign_corpus=None,
        ...                    metrics="entropy", n=4, quiet=True)
        >>> [(r["metric"], r["n"]) for r in res.rows]
        [('next_token_entropy', 4), ('token_entropy', 4)]
    """
    from .data.corpus import Corpus
    from .studies.selfcheck.study import METRICS, SelfCheckConfig, SelfCheckStudy

    given: dict[str, Any] = {}
    names = []
    for m in _names(models):
        if isinstance(m, str):
            names.append(m)
        else:
            name = str(getattr(m, "name", "") or f"model{len(names)}")
            names.append(name)
            given[name] = m
    benign = benign_corpus
    if isinstance(benign, str) and benign.strip().lower() in ("", "none"):
        benign = None
    cfg = SelfCheckConfig(models=names, corpus=corpus if isinstance(corpus, str) else getattr(corpus, "name", "corpus"),
                          n=n, seed=seed, metrics=_names(metrics) if metrics else list(METRICS),
                          benign_corpus=benign if isinstance(benign, str) or benign is None
                          else getattr(benign, "name", "benign"),
                          ablations=not no_ablations, max_new_tokens=max_new_tokens, text_column=text_column,
                          chunk=chunk, max_sentence_words=max_sentence_words, negation_rule=negation_rule)
    from .core.driver import run_study

    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        study = SelfCheckStudy(cfg, where, models=given, corpus=corpus if isinstance(corpus, Corpus) else None,
                               benign=benign if isinstance(benign, Corpus) else None, progress=not quiet)
        return run_study(study, where, progress=not quiet)


def similarity(a: Any, b: Any, *, data: str = "rotten_tomatoes", text_column: str | None = None,
               text_fields: str | Sequence[str] = (), n: int = 2000, seed: int = 0,
               measures: str | Sequence[str] = "cka,pwcca,procrustes", pooling: str = "mean",
               pooling_b: str | None = None, chunk_size: int = 1000, out: str | Path | None = None,
               quiet: bool = False) -> "SimilarityResult":
    """Layer × layer representation similarity of two models on the same inputs (the
    ``similarity`` command): CKA, CCA, PWCCA, Procrustes … for every pair of layers.

    ``a`` and ``b`` are encoder specs (encoder or language-model presets, ``.gguf`` files,
    directories, hub ids) or :class:`~perturblab.models.base.Encoder` objects; ``data`` a data set,
    file or corpus (``text_column`` / ``text_fields`` name a file's text column(s)).

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
        >>> res = pl.similarity(Words(), Words(), data=str(path), n=30, measures="cka", quiet=True)
        >>> [round(r["value"], 6) for r in res.rows if r["layer_a"] == r["layer_b"]]
        [1.0, 1.0]
    """
    from .studies.grounding.similarity import SimilarityConfig, SimilarityStudy

    fields = _names(text_fields) if text_fields else ([text_column] if text_column else [])
    if text_column and text_fields:
        raise InputError("--text-fields replaces --text-column; give one of them")
    encoders, names = {}, []
    for role, m in (("a", a), ("b", b)):
        name = m if isinstance(m, str) else str(getattr(m, "name", "") or role)
        if not isinstance(m, str):
            name = name if name not in names else f"{name}-{role}"
            encoders[name] = m
        names.append(name)
    cfg = SimilarityConfig(a=names[0], b=names[1], data=data, n=n, seed=seed, measures=_names(measures),
                           pooling=pooling, pooling_b=pooling_b, chunk_size=chunk_size, text_fields=fields)
    from .core.driver import run_study

    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        return run_study(SimilarityStudy(cfg, encoders=encoders, progress=not quiet), where, progress=not quiet)
