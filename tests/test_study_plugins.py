"""Studies from installed packages: a package that names a :class:`StudyEntry` in the entry-point
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
from perturblab.studies.registry import StudyEntry
from perturblab.studies.scope.function import scope as typo_scope

ENTRY = StudyEntry("typo-scope", "perturblab.studies.scope.config:ScopeArgs", "typo_plugin:typo_scope",
                   "SCoPE under typos, registered by another package",
                   defaults={"capabilities": "typo"},
                   example=dict(reference="tfidf-lr", targets="tfidf-lr", capabilities="typo", n=6, trials=1,
                                n_boot=20))
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


def test_an_installed_study_has_a_command_a_config_kind_a_function_and_a_report_section(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "typo_plugin:ENTRY")
    listing = _run(site, _cli("--help"), tmp_path)
    assert listing.returncode == 0 and "typo-scope" in listing.stdout, listing.stderr
    help_ = _run(site, _cli("typo-scope", "--help"), tmp_path)
    assert help_.returncode == 0 and "(default: typo)" in help_.stdout.replace("\n", " ").replace("  ", " ")
    # the command (with the plugin's own default), then a config entry of its kind: the same numbers
    opts = ["--reference", "tfidf-lr", "--targets", "tfidf-lr", "--n", "6", "--trials", "1", "--n-boot", "20"]
    cmd = _run(site, _cli("typo-scope", *opts, "--out", str(tmp_path / "cli"), "--quiet"), tmp_path)
    assert cmd.returncode == 0, cmd.stderr
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert {r["capability"] for r in rows} == {"typo"}  # the plugin's default, not scope's synonym,typo
    (tmp_path / "c.yaml").write_text("studies:\n  - name: t\n    kind: typo-scope\n    reference: tfidf-lr\n"
                                     "    targets: [tfidf-lr]\n    n: 6\n    trials: 1\n    n-boot: 20\n")
    run = _run(site, _cli("run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run"), "--quiet"), tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "run" / "t" / "results.json").read_text() == (tmp_path / "cli" / "results.json").read_text()
    assert "study-t" in (tmp_path / "run" / "report.html").read_text()  # its section in the run's report
    # pl.<function>, served from the registry by the entry's function name
    code = ("import perturblab as pl; from perturblab.studies.registry import plugin_of; "
            "print(pl.typo_scope.__wrapped__.__name__, 'typo_scope' in pl.__all__, plugin_of('typo-scope'))")
    py = _run(site, code, tmp_path)
    assert py.returncode == 0 and py.stdout.split() == ["scope", "True", "typo-scope", "=", "typo_plugin:ENTRY"], \
        py.stdout + py.stderr


@pytest.mark.parametrize("value,why", [("typo_plugin:MISSING", "MISSING"), ("no_such_module:ENTRY", "no_such_module"),
                                        ("typo_plugin:NOT_AN_ENTRY", "expected a StudyEntry")])
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
    _install(site, "typo_plugin:ENTRY", PLUGIN.replace('StudyEntry("typo-scope"', 'StudyEntry("scope"'))
    out = _run(site, _cli("--help"), tmp_path)
    assert out.returncode == 0 and "already registered" in out.stderr


def test_the_guides_study_installed_as_a_package_keeps_the_contract_everywhere(tmp_path):
    """docs/adding_a_study.md's study, installed as the package ``mypkg`` with its entry point:
    its command is listed, ``pl.truncation`` is its function, a config runs it, and
    :func:`perturblab.testing.check_study` passes in that fresh process."""
    from test_adding_a_study import GUIDE, study_source

    site = tmp_path / "site"
    (site / "mypkg").mkdir(parents=True)
    (site / "mypkg" / "__init__.py").write_text("")
    (site / "mypkg" / "truncation.py").write_text(study_source(GUIDE.read_text(encoding="utf-8")))
    meta = site / "mypkg-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[perturblab.studies]\ntruncation = mypkg.truncation:ENTRY\n")
    listing = _run(site, _cli("--help"), tmp_path)
    assert listing.returncode == 0 and "truncation" in listing.stdout, listing.stderr
    code = ("import perturblab as pl; from perturblab.testing import check_study; "
            "print(pl.truncation.__module__); r = check_study('truncation', out='chk'); print(len(r.skipped))")
    py = _run(site, code, tmp_path)
    assert py.returncode == 0, py.stderr[-2000:]
    assert py.stdout.split() == ["mypkg.truncation", "0"], py.stdout
    (tmp_path / "c.yaml").write_text("studies:\n  - name: t\n    kind: truncation\n    models: tfidf-lr\n    n: 12\n"
                                     "    n-boot: 50\n")
    run = _run(site, _cli("run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run"), "--quiet"), tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "run" / "t" / "results.json").read_text())[0]["n"] == 12
    assert "study-t" in (tmp_path / "run" / "report.html").read_text()
