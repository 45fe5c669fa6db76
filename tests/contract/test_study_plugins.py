"""Studies from installed packages: a package that names a study class in the entry-point
group ``perturblab.studies`` gets its command, its config kind, ``pl.<function>`` and its place in
the report like a built-in study; a broken plugin is left out with one warning line. Each case runs
in a fresh process whose path holds a small package and its metadata (``*.dist-info``), as
``pip install`` leaves them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = '''
"""A study of another package: SCoPE on typos only, under its own command."""
from perturblab.studies.part import CLASSIFIER, Cost, Part
from perturblab.studies.scope.compare import KEYS, sentence
from perturblab.studies.scope.study import ScopeStudy


def compare_options(args, size, plan, target=None):
    return {"reference": args.reference, "targets": ",".join(args.target_names()), "data": args.data, "n": size,
            "trials": 1, "capabilities": "typo", "seed": args.seed, "n_boot": 20}


PART = Part("typos", (CLASSIFIER,), {CLASSIFIER: Cost("n", per_unit=0.5, fixed=5.0, share=0.1, least=6, most=6)},
            KEYS, compare_options, sentence, rates=True)


class TypoScope(ScopeStudy):
    command, function = "typo-scope", "typo_scope"
    help = "SCoPE under typos, registered by another package"
    defaults, part = {"capabilities": "typo"}, PART
    example = dict(reference="tfidf-lr", targets="tfidf-lr", capabilities="typo", n=6, trials=1, n_boot=20)
'''


def _install(site: Path, value: str, module: str = PLUGIN) -> None:
    """A package ``typo_plugin`` and its metadata, with one entry point of ``value``."""
    (site / "typo_plugin.py").write_text(textwrap.dedent(module))
    meta = site / "typo_plugin-1.0.dist-info"
    meta.mkdir(exist_ok=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-plugin\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text(f"[perturblab.studies]\ntypo-scope = {value}\n")


def _run(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def _cli(*argv: str) -> str:
    return f"import sys; from perturblab.cli import main; sys.exit(main({list(argv)!r}))"


#: runs several steps in one fresh process (one start-up, not one per step): a list is a command
#: line of ``perturblab``, a string a Python expression; prints each step's exit status (the
#: expression's value) and output as JSON
STEPS = """
import contextlib, io, json, sys
from perturblab.cli import main
done = []
for step in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(step) if isinstance(step, list) else eval(step)
        except SystemExit as e:
            rc = e.code
    done.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(done, default=repr))
"""


def _steps(site: Path, steps: list, cwd: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, "-c", STEPS, json.dumps(steps)], capture_output=True, text=True, env=env,
                         cwd=cwd, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.splitlines()[-1])


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_an_installed_study_has_a_command_a_config_kind_a_function_a_report_section_and_a_part_in_compare(tmp_path):
    """The plugin's study: listed by ``--help``; its command runs with the plugin's own default;
    a config entry of its kind writes the same numbers and its report section; ``pl.typo_scope``
    is its function; its part in ``compare`` runs by its part's name or its command, is planned with
    the built-in studies by default, and its verdict and gate read its headline."""
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "typo_plugin:TypoScope")
    (tmp_path / "c.yaml").write_text("studies:\n  - name: t\n    kind: typo-scope\n    reference: tfidf-lr\n"
                                     "    targets: [tfidf-lr]\n    n: 6\n    trials: 1\n    n-boot: 20\n")
    opts = ["--reference", "tfidf-lr", "--targets", "tfidf-lr", "--n", "6", "--trials", "1", "--n-boot", "20"]
    plan = ("[p.name for p in __import__('perturblab.studies.compare.plan', fromlist=['make_plan']).make_plan("
            "__import__('perturblab.studies.compare.config', fromlist=['CompareArgs']).CompareArgs("
            "reference='tfidf-lr', targets='minilm-l3', out=None)).studies]")
    names = ("[__import__('perturblab.studies.compare.config', fromlist=['CompareArgs']).CompareArgs("
             "reference='tfidf-lr', targets='minilm-l3', studies=s, out=None).study_names() "
             "for s in ('typos', 'typo-scope', 'scope,typos')]")
    function = ("(__import__('perturblab').typo_scope.__study__.__bases__[0].__name__, 'typo_scope' in "
                "__import__('perturblab').__all__, __import__('perturblab.studies.registry', fromlist=['plugin_of'])"
                ".plugin_of('typo-scope'))")
    listing, help_, cmd, run, pl, planned, named, cmp = _steps(site, [
        ["--help"], ["typo-scope", "--help"], ["typo-scope", *opts, "--out", str(tmp_path / "cli"), "--quiet"],
        ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run"), "--quiet"], function, plan, names,
        ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--studies", "typo-scope", "--budget", "30s",
         "--fail-under", "hard_scope:typo=0", "--out", str(tmp_path / "cmp"), "--quiet"]], tmp_path)
    assert listing["rc"] == 0 and "typo-scope" in listing["out"]
    assert help_["rc"] == 0 and "(default: typo)" in _flat(help_["out"])
    assert cmd["rc"] == 0, cmd["err"]
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert {r["capability"] for r in rows} == {"typo"}  # the plugin's default, not scope's synonym,typo
    assert run["rc"] == 0, run["err"]
    assert (tmp_path / "run" / "t" / "results.json").read_text() == (tmp_path / "cli" / "results.json").read_text()
    assert "study-t" in (tmp_path / "run" / "report.html").read_text()  # its section in the run's report
    assert pl["rc"] == ["ScopeStudy", True, "typo-scope = typo_plugin:TypoScope"]
    assert planned["rc"] == ["invariances", "robustness", "typos"]
    assert named["rc"] == [["typos"], ["typos"], ["invariances", "typos"]]
    assert cmp["rc"] == 0, cmp["err"][-2000:]
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [(p["name"], p["kind"], p["options"]["n"]) for p in saved["plan"]] == [("typos", "typo-scope", 6)]
    (verdict,) = saved["verdicts"]
    assert verdict["study"] == "typos" and verdict["sentence"].startswith("minilm-l3 keeps its prediction")
    assert [c["key"] for c in saved["checks"]] == ["hard_scope:typo"] and saved["passed"] is True


@pytest.mark.parametrize("value,why", [("typo_plugin:MISSING", "MISSING"), ("no_such_module:ENTRY", "no_such_module"),
                                        ("typo_plugin:NOT_AN_ENTRY", "expected a Study class")])
def test_a_broken_plugin_is_left_out_with_one_warning(tmp_path, value, why):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, value, PLUGIN + "\nNOT_AN_ENTRY = 42\n")
    out = _run(site, _cli("--help"), tmp_path)
    assert out.returncode == 0 and "typo-scope" not in out.stdout and "scope" in out.stdout
    warnings = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and why in warnings[0] and "perturblab.studies" in warnings[0], out.stderr


def test_a_plugin_cannot_replace_a_built_in_study(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "typo_plugin:TypoScope", PLUGIN.replace('command, function = "typo-scope"',
                                                            'command, function = "scope"'))
    out = _run(site, _cli("--help"), tmp_path)
    (warning,) = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
    assert out.returncode == 0 and "'typo-scope = typo_plugin:TypoScope'" in warning
    assert "its command 'scope' is already registered: perturblab's study 'scope'" in warning


#: studies of other packages that would take names already taken
CLASHING = '''
from perturblab.studies.scope.study import ScopeStudy


class DOCTOR(ScopeStudy):
    command, help = "doctor", "SCoPE under the name of perturblab doctor"


class COMPARE(ScopeStudy):
    command, function, help = "my-compare", "compare", "SCoPE under the function name compare"


class MODELS(ScopeStudy):
    command, function, help = "my-models", "models", "SCoPE under the function name models"
'''


def _twin(site: Path, dist: str) -> None:
    """The distribution ``dist`` with one plugin study named ``twin``, whose help names ``dist``."""
    module = dist.replace("-", "_")
    (site / f"{module}.py").write_text("from perturblab.studies.scope.study import ScopeStudy\n\n\n"
                                       "class TWIN(ScopeStudy):\n"
                                       f"    command, function, help = 'twin', 'twin_{module}', 'the twin of {dist}'\n")
    meta = site / f"{module}-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text(f"[perturblab.studies]\ntwin = {module}:TWIN\n")


def test_plugins_that_take_a_name_are_left_out_with_one_line_each_and_of_two_the_first_by_name_wins(tmp_path):
    """A plugin study named like a command that is no study (``doctor``), one whose function would
    be ``perturblab.compare`` or ``perturblab.models``, and the second of two plugins named ``twin``
    are each left out with one warning line naming the plugin and what it clashes with; every
    command keeps working (``doctor`` is the built-in one), ``pl.compare`` is the built-in
    function, and the twin of ``alpha-plugin`` wins over ``zeta-plugin``'s whichever comes first
    on the path (here zeta's)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "clash_plugin.py").write_text(CLASHING)
    meta = first / "clash_plugin-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: clash-plugin\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[perturblab.studies]\ndoctor = clash_plugin:DOCTOR\n"
                                           "compare = clash_plugin:COMPARE\nmodels = clash_plugin:MODELS\n")
    _twin(first, "zeta-plugin")
    _twin(second, "alpha-plugin")
    python = ("(__import__('perturblab').compare.__module__, sorted(__import__('perturblab.studies.registry', "
              "fromlist=['x']).function_names()), __import__('perturblab.studies.registry', fromlist=['x'])"
              ".entry('twin').help)")
    site = Path(f"{first}{os.pathsep}{second}")
    scope_help, doctor, listing, pl = _steps(site, [["scope", "--help"], ["doctor", "--help"], ["--help"], python],
                                             tmp_path)
    assert scope_help["rc"] == 0 and "--reference" in scope_help["out"]
    warnings = [line for line in scope_help["err"].splitlines() if line.strip()]
    assert len(warnings) == 4 and all(w.startswith("warning: the study plugin ") for w in warnings), warnings
    said = dict(zip(("compare", "doctor", "models", "twin"), warnings))  # read in the order of the names
    assert "'doctor = clash_plugin:DOCTOR' (perturblab.studies, of clash-plugin 1.0)" in said["doctor"]
    assert "its command 'doctor' is already registered: perturblab's command 'doctor', not a study" in said["doctor"]
    assert "'compare = clash_plugin:COMPARE'" in said["compare"]
    assert ("its function 'clash_plugin:COMPARE' would be perturblab.compare, the function of perturblab's study "
            "'compare' (perturblab.studies.compare.function:Compare)") in said["compare"]
    assert "'models = clash_plugin:MODELS'" in said["models"]
    assert "would be perturblab.models, a name the package has already" in said["models"]
    assert "'twin = zeta_plugin:TWIN' (perturblab.studies, of zeta-plugin 1.0)" in said["twin"]
    assert "the study 'twin' of the plugin 'twin = alpha_plugin:TWIN'" in said["twin"]
    assert doctor["rc"] == 0 and doctor["out"].startswith("usage: perturblab doctor [-h]\n")
    assert "--reference" not in doctor["out"] and doctor["err"] == ""  # the built-in command, said once
    assert listing["rc"] == 0 and "twin" in listing["out"]
    assert "my-compare" not in listing["out"] and "my-models" not in listing["out"]
    module, functions, twin = pl["rc"]
    assert module == "perturblab.studies.compare.function"
    assert "twin_alpha_plugin" in functions and not {"models", "twin_zeta_plugin"} & set(functions)
    assert twin == "the twin of alpha-plugin"
    swapped = _run(Path(f"{second}{os.pathsep}{first}"), python.join(["print(", ")"]), tmp_path)
    assert swapped.returncode == 0 and swapped.stdout.strip().endswith("'the twin of alpha-plugin')")


def test_the_guides_study_installed_as_a_package_keeps_the_contract_everywhere(tmp_path):
    """docs/adding_a_study.md's study, installed as the package ``mypkg`` with its entry point:
    its command is listed, ``pl.truncation`` is its function, its entry keeps the contract
    (:func:`perturblab.testing.check_study`; the run contracts run in tests/contract/test_adding_a_study.py),
    a config runs it, and its part in ``compare`` runs alone and is gated on its own key."""
    from test_adding_a_study import GUIDE, study_source

    site = tmp_path / "site"
    (site / "mypkg").mkdir(parents=True)
    (site / "mypkg" / "__init__.py").write_text("")
    (site / "mypkg" / "truncation.py").write_text(study_source(GUIDE.read_text(encoding="utf-8")))
    meta = site / "mypkg-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[perturblab.studies]\ntruncation = mypkg.truncation:Truncation\n")
    (tmp_path / "c.yaml").write_text("studies:\n  - name: t\n    kind: truncation\n    models: tfidf-lr\n    n: 12\n"
                                     "    n-boot: 50\n")
    checked = ("(__import__('perturblab').truncation.__module__, __import__('perturblab.testing', "
               "fromlist=['check_study']).check_study('truncation', out='chk', runs=False).skipped)")
    listing, pl, run, cmp = _steps(site, [
        ["--help"], checked, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run"), "--quiet"],
        ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--studies", "truncation", "--budget", "5s",
         "--fail-under", "kept=0", "--out", str(tmp_path / "cmp"), "--quiet"]], tmp_path)
    assert listing["rc"] == 0 and "truncation" in listing["out"]
    assert pl["rc"] == ["mypkg.truncation", [["its compare part's keys are the example's", "runs=False"],
                                             ["run contracts a-e", "runs=False"]]], pl
    assert run["rc"] == 0, run["err"]
    assert json.loads((tmp_path / "run" / "t" / "results.json").read_text())[0]["n"] == 12
    assert "study-t" in (tmp_path / "run" / "report.html").read_text()
    assert cmp["rc"] == 0, cmp["err"][-2000:]
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [(p["name"], p["kind"], p["options"]["n"]) for p in saved["plan"]] == [("truncation", "truncation", 20)]
    rows = {r["model"]: r for r in json.loads((tmp_path / "cmp" / "truncation" / "results.json").read_text())}
    (check,) = saved["checks"]
    assert (check["target"], check["key"], check["value"]) == ("minilm-l3", "kept", rows["minilm-l3"]["kept"])
    assert saved["verdicts"][0]["sentence"].startswith("kept without the last word ")
