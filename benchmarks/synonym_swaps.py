"""Draws synonym swaps from Rotten-Tomatoes sentences for a reader to judge: candidates under four
settings, or (``--searched``) the swaps SCoPE searches accept under ``--synonyms wordnet`` and ``meaning``.

Settings (the options of :class:`perturblab.perturb.search_settings.SynonymOptions`):

* ``default``     — SCoPE's Synonym-Invariance: WordNet lemmas of the word's part of speech
* ``reinflect``   — the same lemmas in the replaced word's inflection (``reinflect_synonyms``)
* ``similarity``  — default candidates whose text keeps a MiniLM-L6 cosine >= ``--threshold``
                    with the original (``synonym_min_similarity``)
* ``both``        — re-inflected candidates that pass the similarity check

One swap per sentence: sentences are taken in a seeded random order; in each, one eligible word
(the capability's constraints: no stopword, four letters or more, letters only) that has a
default candidate is drawn with ``default_rng([seed, row])``, the same word in every setting; then
one of that setting's candidates is drawn with ``default_rng([seed, row, 1])``. A setting left
with no candidate for the word takes no swap from that sentence (counted as ``refused``). The
draw stops when every setting has ``--n`` swaps. So this measures the candidates the search
chooses from, drawn uniformly, not the swap a particular reference model's search would pick.

``--searched``: a SCoPE synonym search (reference MiniLM-L6, as ``compare`` runs it) on ``--n`` base
samples of the Rotten-Tomatoes test split under each set of synonyms; from each perturbed sample one
of its changed words is drawn with ``default_rng([seed, sample id, 2])`` and put alone into the
original sentence. ``--out`` is then a folder: ``searched_swaps.csv`` (with the set and the swap's
contextual cosine, :class:`~perturblab.perturb.semantics.WordContextSimilarity`) and ``blind.csv`` (the
same swaps in a seeded shuffled order without either, for judging without knowing the set). With
``--judged`` (the keyed columns plus ``acceptable`` = 1/0 and a ``reason`` for each refusal, its
category before a colon) it prints the acceptable share per set with its Wilson 95 % interval and the
refusals per category. The first judged sample is seed 0, the second seed 1 (other base samples)::

    .venv/bin/python benchmarks/synonym_swaps.py --searched --n 150 --out /tmp/searched \\
        --judged docs/synonym_swaps_searched.csv
    .venv/bin/python benchmarks/synonym_swaps.py --searched --n 150 --seed 1 --out /tmp/searched2 \\
        --judged docs/synonym_swaps_searched2.csv

The second sample was drawn with the candidates of :attr:`SynonymSwap.REVISION
<perturblab.perturb.transformations.SynonymSwap.REVISION>` 2; the first with those before it, so
re-running seed 0 today gives other ``meaning`` swaps than the ones judged in the first file.

Otherwise it writes one row per (setting, swap) to ``--out``. With ``--judged`` (a CSV of this script's
columns plus ``acceptable`` = 1/0 filled in by a reader) it reads the judgments, keyed on
(row, word index, replacement), and prints the acceptable share per setting. Usage::

    .venv/bin/python benchmarks/synonym_swaps.py --n 50 --threshold 0.85 \\
        --out /tmp/synonym_swaps.csv --judged docs/synonym_swaps.csv
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

SETTINGS = ("default", "reinflect", "similarity", "both")
COLUMNS = ["setting", "k", "row", "index", "word", "tag", "replacement", "cosine", "original", "perturbed"]


def draw(n: int, threshold: float, seed: int) -> tuple[list[dict], dict[str, int], int]:
    """The swaps per setting (``n`` each), the number of refused sentences per setting, and the
    number of sentences read."""
    from perturblab.data import rotten_tomatoes
    from perturblab.perturb.capabilities import get_capability
    from perturblab.perturb.constraints import eligible_indices
    from perturblab.perturb.semantics import SentenceSimilarity
    from perturblab.perturb.text import WordText
    from perturblab.perturb.transformations import SynonymSwap
    from perturblab.resources.pos import pos_tags

    texts = [ex.text for ex in rotten_tomatoes(hub_fallback=False).examples]
    cap = get_capability("synonym")
    plain, inflected = SynonymSwap(), SynonymSwap(reinflect=True)
    sim = SentenceSimilarity(threshold)
    rows: list[dict] = []
    count = dict.fromkeys(SETTINGS, 0)
    refused = dict.fromkeys(SETTINGS, 0)
    read = 0
    for row in np.random.default_rng(seed).permutation(len(texts)):
        if min(count.values()) >= n:
            break
        read += 1
        x = texts[row]
        wt = WordText.from_text(x)
        if not len(wt):
            continue
        pos, tags = pos_tags(list(wt.words)), pos_tags(list(wt.words), fine=True)
        rng0 = np.random.default_rng(0)  # WordNet candidates are deterministic; the generator is unused
        words = [i for i in eligible_indices(wt, cap.constraints) if plain.candidates(wt, i, pos[i], rng0)]
        if not words:
            continue
        i = words[int(np.random.default_rng([seed, int(row)]).integers(len(words)))]
        for setting in SETTINGS:
            if count[setting] >= n:
                continue
            swap = inflected if setting in ("reinflect", "both") else plain
            cands = swap.candidates(wt, i, pos[i], rng0, tag=tags[i])
            texts_c = [wt.replace(i, c).text for c in cands]
            cos = sim.similarities(x, texts_c) if cands else np.zeros(0)
            if setting in ("similarity", "both"):
                keep = cos >= threshold
                cands, texts_c, cos = [c for c, k in zip(cands, keep) if k], [t for t, k in zip(texts_c, keep) if k], cos[keep]
            if not cands:
                refused[setting] += 1
                continue
            j = int(np.random.default_rng([seed, int(row), 1]).integers(len(cands)))
            rows.append({"setting": setting, "k": count[setting], "row": int(row), "index": i, "word": wt.words[i],
                         "tag": tags[i], "replacement": cands[j], "cosine": f"{cos[j]:.3f}", "original": x,
                         "perturbed": texts_c[j]})
            count[setting] += 1
    return rows, refused, read


# -- the swaps a search accepts (what `compare` shows as evidence) ----------------------------------
SEARCHED = ("wordnet", "meaning")
BLIND_COLUMNS = ["id", "original", "word", "replacement", "perturbed"]


def searched(n: int, seed: int, out_dir: Path) -> tuple[list[dict], dict[str, tuple[int, int]]]:
    """One swap drawn from each perturbed sample of a SCoPE synonym search on ``n`` base samples of
    the Rotten-Tomatoes test split (reference MiniLM-L6, as ``compare``'s invariances run it), under
    each set of ``synonyms``; and per set (samples perturbed, samples searched)."""
    import perturblab as pl
    from perturblab.perturb.search_settings import MEANING_CONTEXT_SIMILARITY
    from perturblab.perturb.semantics import WordContextSimilarity
    from perturblab.perturb.text import WordText

    context = WordContextSimilarity(MEANING_CONTEXT_SIMILARITY)
    rows: list[dict] = []
    coverage: dict[str, tuple[int, int]] = {}
    for setting in SEARCHED:
        res = pl.scope("minilm-l6", "tfidf-lr", capabilities="synonym", synonyms=setting, n=n, trials=1,
                       seed=seed, out=out_dir / f"search-{setting}", quiet=True)
        found = [r for r in res.perturbations if r["capability"] == "synonym"]
        done = [r for r in found if r["perturbed"] is not None and r["changes"]]
        coverage[setting] = (len(done), len(found))
        for r in done:
            i, word, new = r["changes"][int(np.random.default_rng([seed, int(r["sample_id"]), 2]).integers(len(r["changes"])))]
            one = WordText.from_text(r["original"]).replace(int(i), new).text
            cosine = float(context.similarities(r["original"], [one])[0])
            rows.append({"setting": setting, "sample_id": int(r["sample_id"]), "index": int(i), "word": word,
                         "replacement": new, "context_cosine": f"{cosine:.3f}", "original": r["original"],
                         "perturbed": one})
    return rows, coverage


def refusal_category(reason: str) -> str:
    """The category of a judged refusal: its reason up to the first colon (``"grammar: tense"`` -> ``grammar``)."""
    return reason.split(":", 1)[0].strip() or "(no reason given)"


def main_searched(args: argparse.Namespace) -> None:
    """Write the searched swaps, blind (shuffled, no setting) for a reader and keyed, or count judged ones."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, coverage = searched(args.n, args.seed, out)
    order = np.random.default_rng([args.seed, 3]).permutation(len(rows))
    for k, j in enumerate(order):
        rows[int(j)]["id"] = k + 1
    rows.sort(key=lambda r: r["id"])
    with open(out / "searched_swaps.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "setting", "sample_id", "index", "word", "replacement", "context_cosine",
                               "original", "perturbed"])
        w.writeheader()
        w.writerows(rows)
    with open(out / "blind.csv", "w", newline="") as f:
        w = csv.DictWriter(f, BLIND_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    for s in SEARCHED:
        done, total = coverage[s]
        print(f"{s:<8} {done} of {total} samples perturbed; {sum(r['setting'] == s for r in rows)} swaps drawn")
    print(f"written: {out / 'searched_swaps.csv'} and, without the setting, {out / 'blind.csv'}")
    if args.judged:
        from collections import Counter

        from perturblab.measures.stats import wilson_interval

        with open(Path(args.judged), newline="") as f:
            judged = {(r["setting"], r["sample_id"], r["index"], r["replacement"]): r for r in csv.DictReader(f)}
        for s in SEARCHED:
            marks = [judged.get((s, str(r["sample_id"]), str(r["index"]), r["replacement"])) for r in rows
                     if r["setting"] == s]
            marks = [m for m in marks if m is not None and m["acceptable"] in ("0", "1")]
            ok, n = sum(m["acceptable"] == "1" for m in marks), len(marks)
            lo, hi = wilson_interval(ok, n)
            missing = sum(r["setting"] == s for r in rows) - n
            print(f"{s:<8} {ok}/{n} acceptable = {ok / max(n, 1):.2f}" + (f" [Wilson 95 % {lo:.2f}, {hi:.2f}]" if n else "")
                  + (f" ({missing} not judged)" if missing else ""))
            refused = Counter(refusal_category(m.get("reason", "")) for m in marks if m["acceptable"] == "0")
            if refused:
                print("         refused: " + ", ".join(f"{c} {k}" for c, k in refused.most_common()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50, help="swaps per setting")
    ap.add_argument("--threshold", type=float, default=0.85, help="MiniLM-L6 cosine of the similarity settings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="synonym_swaps.csv", help="CSV of the drawn swaps")
    ap.add_argument("--judged", default=None, help="CSV with an 'acceptable' column (1/0) to count")
    ap.add_argument("--searched", action="store_true",
                    help="draw the swaps SCoPE searches accept (one per perturbed sample of --n base samples) under "
                         "--synonyms wordnet and meaning; --out is then a folder")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)  # one thread: the same float32 cosines on every machine of this kind
    if args.searched:
        main_searched(args)
        return
    rows, refused, read = draw(args.n, args.threshold, args.seed)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    print(f"{read} sentences read; {len(rows)} swaps written to {args.out}")
    print("sentences whose drawn word had no candidate left:", ", ".join(f"{s} {refused[s]}" for s in SETTINGS))
    if args.judged:
        with open(Path(args.judged), newline="") as f:
            judged = {(r["row"], r["index"], r["replacement"]): r["acceptable"] for r in csv.DictReader(f)}
        for s in SETTINGS:
            marks = [judged.get((str(r["row"]), str(r["index"]), r["replacement"])) for r in rows if r["setting"] == s]
            ok = sum(m == "1" for m in marks)
            missing = sum(m is None or m == "" for m in marks)
            print(f"{s:<11} {ok}/{len(marks)} acceptable" + (f" ({missing} not judged)" if missing else ""))


if __name__ == "__main__":
    main()
