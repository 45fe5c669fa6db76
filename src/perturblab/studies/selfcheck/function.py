"""The public function of the self-supervised evaluation, named like its command (``selfcheck``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ...core.entry import run, study_function
from ..given import model_list
from .config import SelfCheckArgs

if TYPE_CHECKING:  # pragma: no cover
    from .result import SelfCheckResult


@study_function(SelfCheckArgs)
def selfcheck(args: "SelfCheckArgs", given: Mapping[str, Any]) -> "SelfCheckResult":
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
    from ...data.corpus import Corpus
    from .study import SelfCheckStudy

    corpus, benign_corpus = given["corpus"], given["benign_corpus"]
    names, models = model_list(given["models"])
    args = replace(
        args, models=",".join(names),
        corpus=corpus if isinstance(corpus, str) else getattr(corpus, "name", "corpus"),
        benign_corpus=benign_corpus if isinstance(benign_corpus, str) or benign_corpus is None
        else getattr(benign_corpus, "name", "benign"))
    study = SelfCheckStudy(args, models=models, corpus=corpus if isinstance(corpus, Corpus) else None,
                           benign=benign_corpus if isinstance(benign_corpus, Corpus) else None,
                           progress=not args.quiet)
    return run(study, given["out"], quiet=args.quiet)
