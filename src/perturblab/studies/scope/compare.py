"""The parts of the SCoPE studies in ``compare``: shared invariances of classifiers
(``invariances``: synonym and typo, with the target's agreement and accuracy gap on the
unperturbed samples, and fairness when about :data:`FAIRNESS_LEAST` of the planned samples will
have a protected-category word: it is measured on those samples only) and of language models
(``lm-invariances``, when every model gives next-token distributions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..part import ACCURACY_GAP, CLASSIFIER, LANGUAGE_MODEL, SCORE, SHARE, Cost, Key, Part, fmt, level_text, side
from ..part_data import compare_data, corpus_columns, corpus_sentences, data_columns, data_examples

if TYPE_CHECKING:  # pragma: no cover
    from ..compare.config import CompareArgs
    from ..compare.plan import Plan
    from ..compare.verdict import Verdict

#: the headline keys of both (their first parts): Hard-SCoPE and agreement are shares kept (their
#: rates graded, with confidence sequences), Soft-SCoPE a share graded by no level, and the paired
#: accuracy gap on the unperturbed samples
KEYS = (Key("hard_scope", SHARE, 0.0, 1.0, rate_of="invariances of the reference not kept", sequence="share",
            examples=True),
        Key("soft_scope", SCORE, 0.0, 1.0),
        Key("agreement", SHARE, 0.0, 1.0, rate_of="inputs on which the two disagree", sequence="share"),
        ACCURACY_GAP)
#: the fewest samples with a protected-category word that make fairness worth measuring
FAIRNESS_LEAST = 10


def protected_texts(data: Any) -> tuple[int, int]:
    """(texts with a protected-category word, texts) of ``data`` (a data set name or file, or a
    :class:`~perturblab.data.Dataset`): the samples the fairness capability can perturb (SCoPE App. C)."""
    from ...data.loaders import load_dataset
    from ...perturb.text import WordText
    from ...resources.protected import ProtectedCategories

    categories = ProtectedCategories.load()
    examples = (load_dataset(data) if isinstance(data, str) else data).examples
    hits = sum(any(categories.swaps(w) for t in (ex.text, ex.text_b) if t for w in WordText.from_text(t).words)
               for ex in examples)
    return hits, len(examples)


def _capabilities(args: "CompareArgs", n: int, plan: "Plan") -> str:
    """The invariances measured: synonym and typo, and fairness when about :data:`FAIRNESS_LEAST`
    of ``n`` samples will have a protected-category word (the plan says why it is left out)."""
    data = args.data
    hits, total = protected_texts(compare_data(args))
    expected = n * hits / max(total, 1)
    if expected < FAIRNESS_LEAST:
        about = f"{expected:.0f}" if round(expected) < FAIRNESS_LEAST else f"{int(expected * 10) / 10:.1f}"  # not "10 (fewer than 10)"
        plan.left_out.append(f"fairness: {hits} of {total} texts of {data} have a protected-category word, so about "
                             f"{about} of the n = {n} samples would (fewer than {FAIRNESS_LEAST}); "
                             + ("data with such words measures it" if hits == 0 else
                                "a larger --budget, or data with more such words, measures it"))
        return "synonym,typo"
    plan.notes.append(f"fairness: {hits} of {total} texts of {data} have a protected-category word; about "
                      f"{expected:.0f} of the n = {n} samples will, and fairness is measured on those")
    return "synonym,typo,fairness"


def _invariances(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    return {"reference": args.reference, "targets": ",".join(args.target_names()), "data": args.data, "n": size,
            "trials": 1, "seed": args.seed, "capabilities": _capabilities(args, size, plan), "synonyms": args.synonyms,
            "max_text_chars": args.max_text_chars, **data_columns(args)}


def _lm_invariances(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    return {"reference": args.reference, "targets": ",".join(args.target_names()), "corpus": args.corpus, "n": size,
            "trials": 1, "capabilities": "synonym,typo", "seed": args.seed, "synonyms": args.synonyms,
            **corpus_columns(args)}


def _sentence_words() -> tuple[int, int]:
    from .config import SENTENCE_WORDS

    return SENTENCE_WORDS


def _lm_fit(models: list[str], plan: "Plan") -> dict[str, Any] | None:
    """Every model must give next-token distributions (a model behind an API gives none)."""
    from ...models.lm_capabilities import describe_capabilities
    from ...models.spec_check import spec_capabilities
    from .config import METRIC_NEEDS

    need = frozenset().union(*METRIC_NEEDS.values())
    caps = {m: spec_capabilities(m) for m in models}
    lacking = [m for m in models if not need <= caps[m]]
    if not lacking:
        return {}
    common = frozenset.intersection(*caps.values())
    plan.left_out.append(f"lm-invariances: {', '.join(lacking)} do{'es' if len(lacking) == 1 else ''} not give "
                         f"{describe_capabilities(need - common)}")
    return None


def sentence(v: "Verdict", lm: bool = False) -> str:
    """The verdict of shared invariances: Hard-SCoPE per capability with its level, the capabilities
    whose intervals lie apart, and agreement and accuracy gap on the unperturbed inputs; each sentence
    short enough to read at a glance (one clause per estimate)."""
    target, reference, mine = v.target, v.reference_name, v.estimates
    sev = {s.key: s for s in v.severity}
    hard = [e for e in mine if e.key.startswith("hard_scope:")]
    parts = [f"{e.key.split(':', 1)[1]} {fmt(e)}{level_text(sev.get(e.key))}" for e in hard]
    what = "top-1 next token" if lm else "prediction"
    s = f"{target} keeps its {what} where {reference} keeps its own (Hard-SCoPE): " + "; ".join(parts) + "."
    ranked = [e for e in hard if e.value is not None and e.low is not None and "*" not in e.key and not e.flags]
    if len(ranked) > 1:
        lo, hi = min(ranked, key=lambda e: e.value), max(ranked, key=lambda e: e.value)
        if lo.high < hi.low:  # separate sets of examples: the capabilities are compared unpaired
            s += (f" It shares fewer of {reference}'s {lo.key.split(':', 1)[1]} invariances than of its "
                  f"{hi.key.split(':', 1)[1]} ones, beyond both intervals.")
    agree = next((e for e in mine if e.key == "agreement"), None)
    gap = next((e for e in mine if e.key == "accuracy_gap"), None)
    said = []
    if agree is not None:
        said.append((f"top-1 next token {reference}'s on {fmt(agree)}" if lm else
                     f"agreement with {reference} {fmt(agree)}") + level_text(sev.get("agreement")))
    if gap is not None and gap.value is not None:
        said.append(f"{'token ' if lm else ''}accuracy minus {reference}'s {fmt(gap)}{side(gap, sev.get('accuracy_gap'))}")
    if said:
        s += " Unperturbed: " + "; ".join(said) + "."
    return s


#: how many times as long the searches take with every WordNet synonym (``--synonyms
#: wordnet``) as with those that keep the meaning, the default: measured on 2 CPU cores with
#: ``scope --reference minilm-l6 --targets minilm-l3 --capabilities synonym,typo --n 40`` (1.74 s
#: against 1.14 s a sample, the 27 s of loading taken off); more candidates a word, more searches
WORDNET_SLOWER = 1.5


def _slower(args: "CompareArgs") -> float:
    return WORDNET_SLOWER if args.synonyms == "wordnet" else 1.0


#: seconds measured on 2 CPU cores with the packaged models (``compare`` of MiniLM-L6 against its
#: int8 copy and MiniLM-L3, and of SmolLM2-135M against its int8 copy: each study's time over its
#: size): a sample's searches on the reference (synonym, typo and, on about a tenth, fairness); the
#: targets' scoring of what they found is a small part of it. Both figures are those of every
#: WordNet synonym (1.55 s and 14.7 s) over :data:`WORDNET_SLOWER`: the default synonyms keep the
#: meaning (SmolLM2-135M's searches took 8.4 s a sentence with them, on 16 sentences)
#: the searches' own work a sample, whatever the reference (tagging, candidates and the meaning
#: check's MiniLM-L6 on every candidate swap): measured with ``scope --reference tfidf-lr --targets
#: twin=tfidf-lr --capabilities synonym,typo --n 20`` and ``--n 60`` (0.052 s a sample between the
#: two on 2 cores where MiniLM-L6's probe runs 309 texts/s), at the 115 texts/s of the plan's baseline;
#: the rest of the 1.03 s a sample measured with MiniLM-L6 as the reference grows with the reference
SEARCH_OWN = 0.14
INVARIANCES = Part("invariances", (CLASSIFIER,),
                   {CLASSIFIER: Cost("n", per_unit=round(1.55 / WORDNET_SLOWER - SEARCH_OWN, 3), fixed=20.0,
                                     share=0.45, least=20, most=1000, own=SEARCH_OWN, own_model="minilm-l6")},
                   KEYS, _invariances, sentence, rates=True, by_reference=True, grows=True, labels=True,
                   available=lambda args: data_examples(args, 0.25), slower=_slower)
LM_INVARIANCES = Part("lm-invariances", (LANGUAGE_MODEL,),
                      {LANGUAGE_MODEL: Cost("n", per_unit=round(14.7 / WORDNET_SLOWER, 3), fixed=20.0, share=0.45, least=10,
                                            most=500)},
                      KEYS, _lm_invariances, lambda v: sentence(v, lm=True), fit=_lm_fit, rates=True, by_reference=True,
                      available=lambda args: corpus_sentences(args, _sentence_words()), slower=_slower)
