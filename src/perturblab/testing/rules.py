"""Every declared rule of a study's options, refused alike by the command, a study config and
the Python function."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .common import _captured, _command, _fail, _require, _text, command_line

if TYPE_CHECKING:  # pragma: no cover
    from ..studies.registry import StudyEntry


#: a valid value for each role of a required model option (packaged models; nothing is loaded)
ROLE_VALUES = {"classifier": "tfidf-lr", "language_model": "smollm2-135m", "encoder": "minilm-l3", "model": "tfidf-lr"}


def required_values(entry: "StudyEntry") -> tuple[dict[str, Any] | None, str]:
    """Values for the study's required options (and one of each group of exclusive options): the
    entry's ``example`` value where it gives one, else a packaged model of the option's ``role``
    (:data:`ROLE_VALUES`). Returns (values, "") or (None, why) when a required option has neither."""
    out: dict[str, Any] = {}
    groups: dict[str, list[tuple[str, Any]]] = {}
    for f, opt in entry.options().fields():
        if opt.runner or f.name in entry.defaults:
            continue
        if opt.one_of is not None:
            groups.setdefault(opt.one_of, []).append((f.name, opt))
        elif opt.required:
            if f.name in entry.example:
                out[f.name] = entry.example[f.name]
            elif opt.role in ROLE_VALUES:
                out[f.name] = ROLE_VALUES[opt.role]
            else:
                return None, (f"the required option {f.name} has no role and the entry no example value for it, "
                              "so no valid command can be made")
    for group, members in groups.items():
        given = [(n, entry.example[n]) for n, _ in members if n in entry.example]
        roled = [(n, ROLE_VALUES[o.role]) for n, o in members if o.role in ROLE_VALUES]
        if not (given or roled):
            return None, f"no member of the exclusive options {group} ({', '.join(n for n, _ in members)}) has a value"
        n, v = (given or roled)[0]
        out[n] = v
    return out, ""


@dataclass(frozen=True)
class RuleCase:
    """One declared rule of one option and a value just outside it (``kind``: ``bound`` for
    min/above/below/max, ``choice`` for ``choices``)."""

    entry: "StudyEntry"
    name: str
    bad: Any
    kind: str

    @property
    def id(self) -> str:
        return f"{self.entry.name}:{self.name}" + (":choice" if self.kind == "choice" else "")


def _outside(opt: Any) -> Any:
    """A value just outside the option's declared bounds (None: it declares none)."""
    if opt.min is not None:
        return opt.min - 1 if float(opt.min).is_integer() else opt.min - 0.5
    if opt.above is not None:
        return opt.above
    if opt.below is not None:
        return opt.below
    if opt.max is not None:
        return opt.max + 1
    return None


def rule_cases(entry: "StudyEntry") -> list[RuleCase]:
    """A value just outside each declared rule of the study's own options (not the runner's): one
    per bounded option, one per option with text ``choices``."""
    args = entry.options()
    hints = typing.get_type_hints(args)
    out = []
    for f, opt in args.fields():
        if opt.runner:
            continue
        bad = _outside(opt)
        if bad is not None:
            kind = str(hints[f.name])
            if "list" in kind:  # a list option: one bad item
                bad = [bad]
            elif "int" in kind and "float" not in kind:
                bad = int(math.floor(bad))
            out.append(RuleCase(entry, f.name, bad, "bound"))
        if opt.choices and not opt.repeat and all(isinstance(c, str) for c in opt.choices):
            out.append(RuleCase(entry, f.name, "no-such-" + f.name.replace("_", "-"), "choice"))
    return out


def _rule_values(case: RuleCase) -> dict[str, Any]:
    values, why = required_values(case.entry)
    if values is None:
        raise ValueError(f"{case.entry.name}: {why}")
    return values


def check_rule_by_command(case: RuleCase, where: str | Path) -> None:
    """``perturblab <name> --<option> BAD --out WHERE/out`` exits with 2, its stderr has one
    ``error:`` line naming the option (a bound: the line is ``error: --<option>: ...``), no
    traceback, and nothing is written."""
    from ..core.readers import option_name

    out = Path(where) / "out"
    entry, flag = case.entry, option_name(case.name)
    argv = command_line(entry.name, {**_rule_values(case), case.name: case.bad}, out)
    rc, _, err = _command(argv)
    contract = f"{flag} {_text(case.bad)} refused by the command"
    _require(rc == 2, entry.name, contract, f"exit status {rc}, not 2; stderr: {err[-500:]!r}")
    _require("Traceback" not in err, entry.name, contract, f"a traceback: {err[-500:]!r}")
    errors = [line for line in err.strip().splitlines() if "error:" in line]
    _require(len(errors) == 1, entry.name, contract, f"not one error line: {err.strip().splitlines()}")
    if case.kind == "bound":
        lines = err.strip().splitlines()
        _require(len(lines) == 1 and lines[0].startswith(f"error: {flag}: "), entry.name, contract,
                 f"not one line 'error: {flag}: ...': {lines}")
    else:  # argparse's own: usage, then 'perturblab NAME: error: argument --x: invalid choice: ...'
        _require(flag in errors[0], entry.name, contract, f"the error does not name {flag}: {errors[0]!r}")
    _require(not out.exists(), entry.name, contract, f"{out} was written")


def check_rule_by_function(case: RuleCase, where: str | Path) -> None:
    """The Python function called with ``<option>=BAD`` raises an
    :class:`~perturblab.errors.InputError` ``--<option>: ...`` before anything runs (its ``out``
    is not created)."""
    from ..core.readers import option_name
    from ..errors import InputError

    out = Path(where) / "out"
    entry, flag = case.entry, option_name(case.name)
    contract = f"{case.name}={case.bad!r} refused by the Python function"
    kwargs = {k: v for k, v in {**entry.defaults, **_rule_values(case)}.items() if k != "out"}
    kwargs.update({case.name: case.bad, "out": str(out), "quiet": True})
    try:
        with _captured():
            entry.load_function()(**kwargs)
    except InputError as e:
        _require(str(e).startswith(f"{flag}: "), entry.name, contract, f"the error does not start {flag}: {e}")
    else:
        raise _fail(entry.name, contract, "no InputError: the study ran")
    _require(not out.exists(), entry.name, contract, f"{out} was written before the value was refused")


def check_rules_by_config(cases: Sequence[RuleCase], where: str | Path) -> None:
    """One study config with an entry per case (studies that may be config entries),
    ``perturblab run CONFIG --check``: exit status 2, one ``error:`` line per case naming its
    option, nothing written."""
    where = Path(where)
    cases = [c for c in cases if c.entry.config]
    if not cases:
        return
    run = where / "run"
    studies = []
    for i, c in enumerate(cases):
        studies.append({"name": f"rule-{i}", "kind": c.entry.name, **_rule_values(c), c.name: c.bad})
    import yaml

    path = where / "rules.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"out": str(run), "studies": studies}, sort_keys=False))
    rc, _, err = _command(["run", str(path), "--check"])
    names = sorted({c.entry.name for c in cases})
    study = names[0] if len(names) == 1 else ", ".join(names)
    contract = "rules refused by a config check"
    _require(rc == 2, study, contract, f"exit status {rc}, not 2; stderr: {err[-500:]!r}")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    _require(len(errors) == len(cases), study, contract,
             lambda: f"{len(errors)} error lines for {len(cases)} broken rules: {errors}")
    for c, line in zip(cases, errors):
        _require(c.name in line or c.name.replace("_", "-") in line, c.entry.name, contract,
                 f"the error for {c.name} does not name it: {line!r}")
    _require(not run.exists(), study, contract, f"{run} was written")


