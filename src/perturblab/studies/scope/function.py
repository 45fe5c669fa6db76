"""The public functions of the SCoPE studies, named like their commands: ``scope``, ``scope-lm``
and ``checkpoints``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ...core.entry import run, study_function
from ...errors import InputError, warn
from ..given import models_of, names_of, search_splits
from .config import CheckpointsArgs, LMScopeArgs, ScopeArgs

if TYPE_CHECKING:  # pragma: no cover
    from .checkpoints import CheckpointResult
    from .lm import LMScopeResult
    from .result import ScopeResult

log = logging.getLogger(__name__)


@study_function(ScopeArgs)
def scope(args: "ScopeArgs", given: Mapping[str, Any]) -> "ScopeResult":
    """Shared invariances of ``targets`` with ``reference`` (SCoPE; the ``scope`` command).

    ``reference`` and ``targets`` are model specs (``"minilm-l6"``, a directory, a hub id; targets
    also as one comma-separated string) or classifier objects (``labels``, ``predict_proba``,
    ``fingerprint``). ``out`` keeps the results store and prediction cache, so calling again
    resumes and computes only what changed (``None``: a temporary directory). Nothing but the
    store is written until you call ``.save(dir)``. Eligible words follow SCoPE Sec. 3.2 (no
    stopwords, none shorter than four, none changed twice) and our alphabetic-only constraint;
    ``allow_non_alphabetic=True`` (as in :func:`scope_lm` and :func:`checkpoints`) drops the latter.
    ``synonym_min_similarity`` (a cosine, e.g. 0.85) and ``reinflect_synonyms`` keep synonym swaps'
    meaning and grammar (:class:`~perturblab.perturb.search_settings.SynonymOptions`; both off by default,
    as in the paper). ``search_order="saliency"`` walks the words by leave-one-out saliency instead
    of scoring every candidate first (``"best-swap"``): fewer model calls, other perturbations.

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
    from .study import ScopeStudy

    ref_name, tgt_names, models, specs = models_of(given["reference"], given["targets"])
    models.update(given["models"] or {})
    data = given["data"]
    data_name = data if isinstance(data, str) else getattr(data, "name", None) or "data"
    args = replace(args, reference=ref_name, targets=",".join(tgt_names), data=str(data_name))
    splits = search_splits(data, text_column=args.text_column, text_fields=args.text_fields,
                           label_column=args.label_column, perturb_field=args.perturb_field, seed=args.seed,
                           test_size=args.test_size)
    study = ScopeStudy(args, models=models, splits=splits, progress=not args.quiet, specs=specs)
    return run(study, given["out"], executor=given["executor"], address=args.address, num_cpus=args.num_cpus,
               quiet=args.quiet)


@study_function(LMScopeArgs)
def scope_lm(args: "LMScopeArgs", given: Mapping[str, Any]) -> "LMScopeResult":
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
    from .lm import LMScopeStudy

    ref_name, tgt_names, models, specs = models_of(given["reference"], given["targets"])
    args = replace(args, reference=ref_name, targets=",".join(tgt_names))
    study = LMScopeStudy(args, models=models, sentences=given["sentences"], progress=not args.quiet, specs=specs)
    return run(study, given["out"], quiet=args.quiet)


@study_function(CheckpointsArgs)
def checkpoints(args: "CheckpointsArgs", given: Mapping[str, Any]) -> "CheckpointResult":
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
    from ...models.finetune import FinetuneConfig
    from .checkpoints import Checkpoint, CheckpointStudy, checkpoints_from_dirs, finetune_checkpoints

    checkpoints, finetune, data = given["checkpoints"], given["finetune"], given["data"]
    if (checkpoints is None) == (finetune is None):
        raise InputError("give either checkpoints (--checkpoints DIR,DIR,...) or a model to fine-tune "
                         "(--finetune BASE), not both and not neither")
    listed = None if checkpoints is None else names_of(checkpoints)
    objects = listed is not None and any(isinstance(c, Checkpoint) for c in listed)
    args = replace(args, checkpoints=None if objects or listed is None else ",".join(map(str, listed)),
                   data=data if isinstance(data, str) else getattr(data, "name", None) or "data")
    splits = search_splits(data, text_column=args.text_column, text_fields=args.text_fields,
                           label_column=args.label_column, perturb_field=args.perturb_field, seed=args.seed,
                           test_size=args.test_size)
    if finetune is not None:
        train = splits[0] if args.n_train is None else splits[0].sample(args.n_train, seed=args.seed)
        ft = FinetuneConfig(epochs=args.epochs, max_seconds=args.max_seconds, lr=args.lr)
        cks = finetune_checkpoints(finetune, train, seed=args.seed,
                                   fractions=[float(x) for x in names_of(given["fractions"])], config=ft,
                                   progress=not args.quiet)
    else:
        cks = listed if objects else checkpoints_from_dirs(listed)
    study = CheckpointStudy(args, cks, splits=splits, progress=not args.quiet)
    if args.history:  # a label stored with other checkpoints is refused before any work
        from ...history.store import check_labels

        check_labels(args.history, {f"{args.release}/{c.name}": {comp: c.name for comp in args.comparison_list()
                                                                  if comp == "vs_final" or i > 0}
                                    for i, c in enumerate(study.checkpoints)})
    result = run(study, given["out"], quiet=args.quiet)
    if args.history:
        from ...history.store import ReleaseConflictWarning, append_releases

        added, conflicts = append_releases(args.history, result.releases(args.release or "", args.study_options()))
        for c in conflicts:
            warn(c, ReleaseConflictWarning)
        if not args.quiet:
            from ...core.faults import hide_password

            log.info(f"history: {sum(added)} of {len(added)} checkpoints appended to {hide_password(args.history)} "
                     f"as {args.release}/<checkpoint>")
    return result
