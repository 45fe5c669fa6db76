"""perturblab compare's plan: the studies by the models' kind and what they allow, sizes from the
budget and the models' sizes, what each study detects, and the options' values."""

from __future__ import annotations

import json
import math
import re

import pytest

from perturblab.errors import InputError
from perturblab.studies.compare.config import duration, threshold
from perturblab.studies.compare.model_costs import model_kind
from perturblab.studies.compare.plan import CLASSIFIER, LANGUAGE_MODEL, cost_of, make_plan
from helpers.compare import args_of


def test_the_kind_of_each_packaged_model():
    assert {m: model_kind(m) for m in ("minilm-l6", "minilm-l6-int8", "tfidf-lr")} == dict.fromkeys(
        ("minilm-l6", "minilm-l6-int8", "tfidf-lr"), CLASSIFIER)
    assert model_kind("smollm2-135m") == LANGUAGE_MODEL


def test_classifiers_get_invariances_robustness_and_a_layer_comparison_per_target():
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3"))
    assert plan.kind == CLASSIFIER
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers-minilm-l6-int8", "layers-minilm-l3"]
    assert [p.kind for p in plan.studies] == ["scope", "robustness", "similarity", "similarity"]
    assert plan.studies[0].options["targets"] == "minilm-l6-int8,minilm-l3"
    assert plan.studies[1].options["models"] == "minilm-l6,minilm-l6-int8,minilm-l3"
    assert "plan (classifiers): 4 studies" in plan.table()


def test_a_model_without_hidden_states_leaves_the_layers_out_and_says_why():
    plan = make_plan(args_of(reference="minilm-l6", targets="tfidf-lr"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness"]
    assert plan.left_out == ["layers: tfidf-lr exposes no hidden states"]
    assert "left out: layers: tfidf-lr exposes no hidden states" in plan.table()


def test_a_target_without_hidden_states_leaves_the_layers_out_for_that_target_alone():
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3,tfidf-lr,minilm-l6-int8"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers-minilm-l3",
                                              "layers-minilm-l6-int8"]
    assert [p.options["b"] for p in plan.studies[2:]] == ["minilm-l3", "minilm-l6-int8"]
    assert plan.left_out == ["layers: tfidf-lr exposes no hidden states"]
    # the layers' time is planned for the two targets that run them, not three
    two = make_plan(args_of(reference="minilm-l6", targets="minilm-l3,minilm-l6-int8"))
    assert [p.seconds for p in plan.studies[2:]] == pytest.approx([p.seconds for p in two.studies[2:]], rel=0.05)
    # a reference without hidden states leaves every target's layers out, said once
    none = make_plan(args_of(reference="tfidf-lr", targets="minilm-l3,minilm-l6-int8"))
    assert [p.name for p in none.studies] == ["invariances", "robustness"]
    assert none.left_out == ["layers: tfidf-lr exposes no hidden states (so no target's layers are compared)"]


def test_language_models_get_lm_invariances_selfcheck_and_layers():
    plan = make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8"))
    assert [p.kind for p in plan.studies] == ["scope-lm", "selfcheck", "similarity"]
    assert plan.studies[1].options["no_ablations"] is True


def least_budget(**kw) -> str:
    """The budget a plan refused at 1 s names as covering its least useful sizes."""
    with pytest.raises(InputError, match=r"--budget 1s: even the least useful sizes take about .* or more") as e:
        make_plan(args_of(budget="1s", **kw))
    return re.search(r"give --budget (\S+) or more", str(e.value)).group(1)


def test_sizes_grow_with_the_budget_and_stay_in_each_studys_range():
    small = make_plan(args_of(reference="minilm-l6", targets="minilm-l3",
                              budget=least_budget(reference="minilm-l6", targets="minilm-l3")))
    large = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="2h"))
    mid = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="10m"))
    for s, m, big in zip(small.studies, mid.studies, large.studies):
        cost = cost_of(s.name.split("-")[0] if s.name.startswith("layers") else s.name, CLASSIFIER)
        size = cost.size
        assert cost.least <= s.options[size] <= m.options[size] <= big.options[size]
        assert big.options[size] == min(cost.most, 1000 if size == "n_eval" else cost.most)
        assert cost.least <= m.options[size] <= cost.most
    # robustness holds at the 1,000 examples of the test split and the layers at their largest
    # size; invariances takes the rest of the budget (to one unit)
    inv, others = mid.studies[0], mid.seconds() - mid.studies[0].seconds
    cost = cost_of("invariances", CLASSIFIER)
    assert inv.options["n"] == int((600 - others - cost.fixed) // (cost.per_unit + cost.own))  # MiniLM-L6: 1 each
    assert 600 - cost.per_unit <= mid.seconds() <= 600 + 1e-6


def test_bad_plans_are_refused():
    with pytest.raises(InputError, match="one kind"):
        make_plan(args_of(reference="minilm-l6", targets="smollm2-135m"))
    with pytest.raises(InputError, match="not for classifiers"):
        make_plan(args_of(reference="minilm-l6", targets="minilm-l3", studies="selfcheck"))


def test_option_values():
    assert duration("90s") == 90 and duration("10m") == 600 and duration("1.5h") == 5400 and duration("45") == 45
    assert threshold("hard_scope:typo=0.9") == ("hard_scope:typo", 0.9)
    assert threshold(" relative_robustness:change_char = .95 ") == ("relative_robustness:change_char", 0.95)
    for bad in ("hard_scope", "=0.9", "x=y"):
        with pytest.raises(InputError):
            threshold(bad)


def test_fairness_is_measured_only_when_enough_samples_will_have_a_protected_word(tmp_path):
    from perturblab.studies.scope.compare import FAIRNESS_LEAST, protected_texts

    data = tmp_path / "d.csv"
    data.write_text("text,label\nthe men liked it,1\nthe women hated it,0\na fine film,1\na dull film,0\n")
    assert protected_texts(str(data)) == (2, 4)
    hits, total = protected_texts("rotten_tomatoes")
    small = make_plan(args_of(reference="minilm-l6", targets="minilm-l3",
                              budget=least_budget(reference="minilm-l6", targets="minilm-l3")))
    assert small.studies[0].options["capabilities"] == "synonym,typo"
    assert any(w.startswith(f"fairness: {hits} of {total} texts") for w in small.left_out)
    assert 20 * hits / total < FAIRNESS_LEAST
    full = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="10m"))
    assert full.studies[0].options["capabilities"] == "synonym,typo,fairness"
    assert full.studies[0].options["n"] * hits / total >= FAIRNESS_LEAST


def test_an_api_language_model_gets_the_studies_its_capabilities_allow():
    api = "api:m@http://127.0.0.1:9/v1"
    plan = make_plan(args_of(reference="smollm2-135m", targets=api))
    assert plan.kind == LANGUAGE_MODEL and [p.name for p in plan.studies] == ["selfcheck"]
    assert plan.studies[0].options["metrics"] == "negation"
    text = plan.table()
    assert "left out: lm-invariances: " + api + " does not give" in text and "left out: layers" in text
    assert f"{api}: size unknown" in text
    with pytest.raises(InputError, match="cannot tell whether"):
        make_plan(args_of(reference=api, targets=api.replace("m@", "n@")))
    both = make_plan(args_of(reference=api, targets=api.replace("m@", "n@"), studies="selfcheck"))
    assert both.kind == LANGUAGE_MODEL


def test_a_larger_local_model_is_planned_from_its_size(tmp_path):
    from perturblab.studies.compare.model_costs import model_params

    big = tmp_path / "big-lm"
    big.mkdir()
    (big / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 24, "hidden_size": 1024,
        "intermediate_size": 4096, "vocab_size": 50_000}))
    params, source = model_params(str(big))
    # Llama's layers by hand: attention 4 h², a gated MLP 3 h i, two norms; a final norm, the
    # embeddings and an untied output layer
    h, i = 1024, 4096
    assert params * 1e6 == 24 * (4 * h * h + 3 * h * i + 2 * h) + h + 2 * 50_000 * h
    assert source == "its config.json" and model_params("smollm2-135m") == (134.5, "packaged")
    small = make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8", studies="selfcheck"))
    large = make_plan(args_of(reference="smollm2-135m", targets=str(big), studies="selfcheck"))
    ratio = params / 134.5
    assert any(f"planned at {ratio:.1f}x" in n for n in large.notes)
    # the same seconds buy fewer samples: 2 models at (1 + ratio) / 2 each instead of 2 at 1
    cost = cost_of("selfcheck", LANGUAGE_MODEL)
    assert large.studies[0].options["n"] == int((600 - cost.fixed) / (cost.per_unit * (1 + ratio)))
    assert small.studies[0].options["n"] > large.studies[0].options["n"]


def test_the_plan_states_what_each_study_detects_and_detect_sizes_it():
    from perturblab.studies.compare.power import detectable, needed

    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3"))
    inv = next(p for p in plan.studies if p.name == "invariances")
    assert inv.detects == pytest.approx(detectable(inv.options["n"]))
    assert f"detects {100 * inv.detects:.1f} %" in plan.table()
    # the power the formula claims: d = z²/(n + z²) with z = z(0.975) + z(0.8)
    from scipy import stats
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    n = needed(0.05)
    se = math.sqrt(0.05 * 0.95 / n)
    assert stats.norm.sf(stats.norm.ppf(0.975) - 0.05 / se) == pytest.approx(0.8, abs=0.01)
    assert detectable(n) <= 0.05 < detectable(n - 1) and n == math.ceil(z * z * 0.95 / 0.05)
    sized = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", detect=0.05, budget="30m"))
    assert all(p.options.get("n", p.options.get("n_eval", 0)) >= n for p in sized.studies
               if p.name in ("invariances", "robustness"))
    with pytest.raises(InputError, match=r"--detect 0.02 needs about .* beyond the --budget of 2.0 min: give --budget"):
        make_plan(args_of(reference="minilm-l6", targets="minilm-l3", detect=0.02, budget="2m"))


def test_the_plan_says_what_twice_the_budget_buys_or_why_it_stops_short():
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="10m"))
    note = plan.notes[-1]
    doubled = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="20m"))
    n = next(p.count for p in doubled.studies if p.name == "invariances")
    assert note.startswith("budget: --budget 20m would give ") and f"invariances n = {n} (detects" in note, note
    assert n > next(p.count for p in plan.studies if p.name == "invariances")
    # every study held by a bound: the plan says so instead of promising more
    big = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="3h"))
    assert big.seconds() < 3 * 3600 / 2 and "a larger --budget buys nothing more" in big.notes[-1]
    assert "robustness n-eval = 1000 (the test split of --data rotten_tomatoes)" in big.notes[-1]
    assert "invariances n = 1000 (" in big.notes[-1] and "budget:" in big.table()


def test_what_an_earlier_run_stored_is_named_in_the_plan(tmp_path):
    from perturblab.studies.compare.plan import Planned

    p = Planned("invariances", "scope", {"reference": "a", "n": 200, "seed": 0}, 60.0, "n = 200", size_key="n",
                count=200)
    folder = tmp_path / "invariances"
    assert p.stored(folder) is None  # nothing there
    folder.mkdir()
    def manifest(n, seed=0, finished=True):
        (folder / "study.json").write_text(json.dumps({"name": "invariances", "kind": "scope", "finished": finished,
                                                       "options": {"reference": "a", "n": n, "seed": seed}}))

    manifest(50)
    assert p.stored(folder) is None  # a manifest but no results store: nothing computed yet
    (folder / "results.sqlite").write_bytes(b"")
    assert p.stored(folder) == "invariances: 50 of the 200 stored (read back; the rest computed)"
    manifest(500)
    assert p.stored(folder) == "invariances: all 200 stored (read back)"
    manifest(500, seed=1)
    assert "results of other options are stored" in p.stored(folder)
    # a run stopped before it finished claims nothing it may not have stored
    manifest(500, finished=False)
    assert p.stored(folder) == ("invariances: an unfinished run left results in its store; what this run shares "
                                "with them is read back, the rest computed")


def test_every_wordnet_synonym_is_planned_as_the_slower_search_it_is():
    from perturblab.studies.compare.plan import cost_of
    from perturblab.studies.scope.compare import WORDNET_SLOWER

    meaning = args_of(reference="minilm-l6", targets="minilm-l3", studies="invariances", budget="4m")
    wordnet = args_of(reference="minilm-l6", targets="minilm-l3", studies="invariances", budget="4m", synonyms="wordnet")
    assert cost_of("invariances", CLASSIFIER, wordnet).per_unit == pytest.approx(
        WORDNET_SLOWER * cost_of("invariances", CLASSIFIER, meaning).per_unit)
    assert cost_of("robustness", CLASSIFIER, wordnet) == cost_of("robustness", CLASSIFIER, meaning)
    fast, slow = make_plan(meaning).studies[0], make_plan(wordnet).studies[0]
    assert slow.options["synonyms"] == "wordnet" and fast.options["synonyms"] == "meaning"
    # the same seconds buy about 1/1.5 the samples (the fixed 20 s aside)
    assert slow.count == pytest.approx(fast.count / WORDNET_SLOWER, abs=2)


def test_a_directory_that_is_no_saved_classifier_is_refused_before_any_model_is_timed(tmp_path, capsys):
    from perturblab.cli import main

    empty = tmp_path / "empty"
    empty.mkdir()
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    for target, said in ((empty, "has no config.json, so it is not a saved Hugging Face model"),
                         (bare, "is not a fine-tuned sequence classification model (its config.json names BertModel")):
        code = main(["compare", "--reference", "tfidf-lr", "--targets", f"candidate={target}", "--out",
                     str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == 2 and said in err and "timing" not in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "out").exists()
    head = tmp_path / "head"
    head.mkdir()
    (head / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    assert model_kind(f"candidate={head}") == CLASSIFIER
    (head / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    assert model_kind(str(head)) == LANGUAGE_MODEL


@pytest.mark.parametrize("n", [20, 113, 385, 1000])
def test_medium_from_is_the_rate_the_exact_level_test_shows_above_five_percent_with_80_percent_power(n):
    from scipy import stats

    from perturblab.studies.compare.power import levelled

    k = next(k for k in range(n + 2) if stats.binom.sf(k - 1, n, 0.05) <= 0.05)  # the least count it rejects at
    r = levelled(n, 0.05)
    assert stats.binom.sf(k - 1, n, r) == pytest.approx(0.80, abs=1e-6)
    assert stats.binom.sf(k - 1, n, r - 0.002) < 0.80  # the least such rate
    from perturblab.studies.compare.power import detectable

    assert n < 100 or r > detectable(n)  # a level asks more than a detected difference (the normal
    # approximation behind detectable is loose at n = 20)


def test_the_plan_says_from_which_rate_a_finding_is_levelled_medium():
    from perturblab.studies.compare.power import levelled

    plan = make_plan(args_of(reference="tfidf-lr", targets="twin=tfidf-lr", studies="invariances", budget="2m"))
    inv = plan.studies[0]
    assert inv.medium_from == pytest.approx(levelled(inv.count, 0.05))
    table = plan.table()
    assert f"medium from {100 * inv.medium_from:.1f} %" in table
    assert "when the changes all go one way (changes both ways need more)" in table


def test_a_part_giving_an_option_its_study_lacks_is_one_error_naming_both(tmp_path):
    """A part's options are the study's: one the study does not take ends the comparison in an
    InputError naming the part's folder, the study and the option, not in a TypeError."""
    from perturblab.errors import InputError
    from perturblab.studies.compare.plan import Planned

    good = Planned("invariances", "scope", {"reference": "tfidf-lr", "targets": "minilm-l3", "n": 20}, 60.0)
    assert good.study_args(tmp_path / "a", quiet=True).n == 20
    bad = Planned("invariances", "scope", {"reference": "tfidf-lr", "sample_size": 20, "nope": 1}, 60.0)
    with pytest.raises(InputError) as e:
        bad.study_args(tmp_path / "b", quiet=True)
    assert str(e.value).startswith("invariances: the study 'scope''s part in compare gives options it does not "
                                   "take (nope, sample_size)")
