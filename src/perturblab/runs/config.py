"""Study configs: one YAML file naming models, data and studies, checked before anything runs.

::

    out: runs/compare-minilm          # optional; default runs/<file stem>
    executor: {kind: local, workers: 2}   # or {kind: ray, address: auto, num_cpus: 8}
    models:
      ref: minilm-l6                  # a name for any model source (preset, directory, hub id)
      gpt:                            # an OpenAI-compatible endpoint
        api: {base_url: "https://api.openai.com/v1", model: gpt-3.5-turbo-instruct,
              label_words: {neg: negative, pos: positive}}
    data:
      reviews: {path: reviews.csv, text_column: review, label_column: stars}
      sts: {path: sts.csv, text_fields: [sentence1, sentence2], label_column: score, task: regression}
    studies:
      - name: invariances
        kind: scope                   # any study command: scope, robustness, learnability, ...
        reference: ref
        targets: [minilm-l3, gpt]
        capabilities: [synonym, typo]
        data: reviews

A study's keys are its command's options (``perturblab scope --help``), with ``-`` or ``_``;
lists stand for comma lists, ``true`` for a flag. ``out``, ``quiet`` and the executor are set by
the runner. The schema is the study's options dataclass
(:class:`~perturblab.core.options.StudyArgs`), the one the command's options are generated from,
so a config accepts exactly what the CLI accepts and reads each value as the CLI reads its text.
Every error names the file, the line and the key, and says what is allowed; every error of the
file is reported at once (one line each), and nothing runs until the whole file is valid. Beyond
the schema, each study's values are checked without loading a model
(:meth:`StudyArgs.problems <perturblab.core.options.StudyArgs.problems>`: counts below 1, unknown
capabilities or perturbations, data files that do not exist or whose columns, labels or rows
are wrong). Relative paths in ``models``/``data`` (and a study's ``data`` or
``corpus`` naming an existing file next to the config) are taken from the config's folder.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..models.named import check_definition

#: the keys of a ``data:`` definition: a path and how to read it (the study options they set)
DATA_KEYS = ("path", "text_column", "text_fields", "label_column", "task")

TOP_KEYS = ("out", "executor", "models", "data", "studies", "report")
EXECUTOR_KEYS = ("kind", "workers", "address", "num_cpus")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ConfigError(InputError):
    """A study config that cannot run; the message names the file, line and key (one line per
    error when there are several; :attr:`errors` lists them)."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = list(errors) if errors is not None else [message]


@dataclass
class StudySpec:
    """One study of a config: its command and its options, read as the command line reads them
    (the runner's own options left out); ``defaults`` are the command's defaults of the same options."""

    name: str
    kind: str
    options: dict[str, Any]
    line: int = 0
    defaults: dict[str, Any] = field(default_factory=dict)  # the command's defaults of the same options


@dataclass
class RunConfig:
    """A validated config file."""

    path: Path
    text: str
    base: Path
    out: Path
    executor: dict[str, Any]
    models: dict[str, dict[str, Any]]
    studies: list[StudySpec]
    report: bool = True
    data: dict[str, dict[str, Any]] = field(default_factory=dict)


def _positions(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """1-based line of every key path (mapping keys and sequence items) in a composed YAML tree."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            out[path + (k.value,)] = k.start_mark.line + 1
            _positions(v, path + (k.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _positions(v, path + (i,), out)
    return out


class _Where:
    """Builds error messages that point at a line of the config."""

    def __init__(self, path: Path, lines: dict[tuple, int]):
        self.path, self.lines = path, lines
        self.errors: list[str] = []  # every error found so far, in file order

    def add(self, error: ConfigError) -> None:
        """Record an error and go on checking."""
        self.errors.extend(error.errors)

    def error(self, keys: tuple, message: str) -> ConfigError:
        line = next((self.lines[keys[:i]] for i in range(len(keys), -1, -1) if keys[:i] in self.lines), 1)
        where = ".".join(str(k) for k in keys) or "(top level)"
        return ConfigError(f"{self.path}:{line}: {where}: {message}")


def _suggest(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"allowed: {', '.join(sorted(allowed))}"


def _study(entry: Any, i: int, where: _Where, models: dict, data: dict, base: Path) -> StudySpec:
    from ..studies.registry import entries

    keys = ("studies", i)
    if not isinstance(entry, dict):
        raise where.error(keys, "each study is a mapping with at least 'kind'")
    kinds = {e.name: e for e in entries(config_only=True)}
    kind = entry.get("kind")
    if kind not in kinds:
        raise where.error(keys + ("kind",), f"unknown study kind {kind!r}; "
                          + _suggest(str(kind), list(kinds)) if kind else "missing 'kind'; one of " + ", ".join(kinds))
    name = str(entry.get("name", f"{i + 1:02d}-{kind}"))
    if not _NAME.match(name):
        raise where.error(keys + ("name",), f"{name!r}: use letters, digits, '.', '_' or '-' (it names a folder)")
    args = kinds[kind].options()
    fields = {f.name: o for f, o in args.fields()}
    defaults = {k: v for k, v in args.cli_defaults(kinds[kind].defaults).items() if not fields[k].runner}
    options = dict(defaults)
    given: dict[str, str] = {}
    origin: dict[str, str] = {}  # options a data definition set -> the key that named it
    before = len(where.errors)
    for key, value in entry.items():
        if key in ("kind", "name"):
            continue
        kk = keys + (key,)
        try:
            try:
                dest = args.key_of(key, kind)
            except InputError as e:
                raise where.error(kk, str(e)) from None
            if fields[dest].runner and not fields[dest].in_config:
                raise where.error(kk, f"not an option of {kind} (set by the runner)")
            if dest in given:
                raise where.error(kk, args.given_twice(dest, [given[dest], str(key)]))
            given[dest] = str(key)
            opt = fields[dest]
            if opt.role is not None:
                value = _models_in(value, kind, dest, opt.role, models, where, kk)
            elif opt.data and isinstance(value, str):
                value, extra = _data_in(value, data, base)
                for column, v in _data_columns(extra, fields, kind, value, where, kk).items():
                    options[column] = _value(args, column, v, where, kk)
                    origin.setdefault(column, str(key))
            options[dest] = _value(args, dest, value, where, kk)
        except ConfigError as e:  # go on with the study's other keys
            where.add(e)
    try:
        args.check_complete(options, kind)
    except InputError as e:  # a required option missing, or one of a group of exclusive options
        where.add(where.error(keys, str(e)))
    if len(where.errors) == before:  # the values are well-formed: check what they name
        from ..models.named import defined

        with defined(models):  # the config's API models, as its run will define them
            _check_values(args, options, {**origin, **given}, where, keys)
    return StudySpec(name, kind, options, where.lines.get(keys, 0), defaults)


def _check_values(args: Any, options: dict[str, Any], given: dict[str, str], where: "_Where", keys: tuple) -> None:
    """Add every problem of a study's values (:meth:`~perturblab.core.options.StudyArgs.problems`:
    each option's rules, the models and data files it names, the rules across options) to
    ``where``, each at the key that set it."""
    names = {f.name for f, _ in args.fields()}
    try:
        read = args(**{k: v for k, v in options.items() if k in names})
        problems = read.given_by(args.old_names_of(given.values(), "config")).problems()
    except InputError as e:
        problems = [("", str(e))]
    found = [(keys + ((given[dest],) if dest in given else ()), message) for dest, message in problems]
    for at, message in sorted(found, key=lambda f: where.lines.get(f[0], 0)):  # in file order
        where.add(where.error(at, message))


def _value(args: Any, dest: str, value: Any, where: "_Where", keys: tuple) -> Any:
    """A config value read as the command line reads its text (see :meth:`StudyArgs.value`)."""
    try:
        return args.value(dest, value)
    except InputError as e:
        raise where.error(keys, str(e)) from None


def _models_in(value: Any, kind: str, dest: str, role: str, models: dict, where: _Where, keys: tuple) -> Any:
    """Replace model names defined in ``models:`` by their sources; API models stay names (the
    loaders find them) and are only allowed where the study calls classifiers or LMs (``role``)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        item = str(item)
        label, eq, ref = item.partition("=")
        ref = ref if eq else item
        spec = models.get(ref)
        if spec is None:
            out.append(item)
        elif "api" in spec:
            if role not in spec["roles"] and not (role == "model" and spec["roles"]):
                raise where.error(keys, f"model {ref!r} is an API {' / '.join(r.replace('_', ' ') for r in spec['roles'])}; {kind} {dest} "
                                  f"needs {'an' if role == 'encoder' else 'a'} {role.replace('_', ' ')} (local weights)")
            out.append(item if not (kind == "robustness" and not eq) else f"{ref}={ref}")
        else:
            src = spec["source"]
            out.append(f"{label if eq else ref}={src}" if kind == "robustness" else src)
    return out if isinstance(value, list) else out[0]


def _data_columns(extra: dict, actions: Any, kind: str, value: str, where: "_Where", keys: tuple) -> dict:
    """The study options a data definition's columns and task set: ``text_fields`` (one or two
    columns; a ``text_column`` becomes it for studies that name columns only that way),
    ``label_column`` and ``task`` (``classification`` is every study's default; ``regression`` needs a
    study with a ``task`` option)."""
    out = {}
    for opt, v in extra.items():
        target = opt
        if opt == "text_column" and opt not in actions and "text_fields" in actions:
            target = "text_fields"
        if opt == "task" and opt not in actions and v == "classification":
            continue
        if target not in actions:
            why = ("it scores classifiers only" if opt == "task" else
                   "give a file whose columns are named text and label")
            raise where.error(keys, f"data {value!r} sets {opt}={v} but {kind} has no {opt.replace('_', '-')} "
                              f"option; {why}")
        out[target] = v
    return out


def _data_in(value: str, data: dict, base: Path) -> tuple[str, dict]:
    spec = data.get(value)
    if spec is not None:
        return spec["source"], {k: v for k, v in spec.items() if k != "source"}
    p = base / value
    if not Path(value).is_absolute() and (p.is_file() or p.is_dir()) and not Path(value).exists():
        return str(p), {}
    return value, {}


def _section(raw: dict, key: str, where: _Where) -> dict:
    v = raw.get(key) or {}
    if not isinstance(v, dict):
        where.add(where.error((key,), "expected a mapping of names to definitions"))
        return {}
    for name in v:
        if not _NAME.match(str(name)):
            where.add(where.error((key, name), "names use letters, digits, '.', '_' or '-'"))
    return {k: d for k, d in v.items() if _NAME.match(str(k))}


def load_config(path: str | Path, *, out: str | Path | None = None, base: str | Path | None = None) -> RunConfig:
    """Read and check a study config (see the module docstring); raises :class:`ConfigError`.

    ``out`` overrides the config's ``out:``; ``base`` is the folder relative paths start from
    (default: the config's own folder)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"study config {path} does not exist; write one (see docs/configs.md) or check the path")
    try:
        raw_bytes = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the study config {path}: {e.strerror or e}; check its permissions") from None
    try:
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw_bytes[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{raw_bytes[e.start]:02x} at offset {e.start}); "
                          "save the config as UTF-8") from None
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {getattr(e, 'problem', e)}") from None
    where = _Where(path, _positions(node) if node is not None else {})
    if not isinstance(raw, dict):
        raise where.error((), "a study config is a mapping with a 'studies' list")
    for key in raw:
        if key not in TOP_KEYS:
            where.add(where.error((key,), "unknown key; " + _suggest(str(key), list(TOP_KEYS))))
    base = Path(base).resolve() if base is not None else path.parent.resolve()
    models = {}
    for name, spec in _section(raw, "models", where).items():
        try:
            models[name] = check_definition(name, spec, base)
        except InputError as e:
            where.add(where.error(("models", name), str(e)))
    data = {}
    for name, spec in _section(raw, "data", where).items():
        spec = {"path": spec} if isinstance(spec, str) else spec
        extra = set(spec) - set(DATA_KEYS) if isinstance(spec, dict) else {"?"}
        if extra or "path" not in spec or ("text_column" in spec and "text_fields" in spec):
            where.add(where.error(("data", name), "expected a name/path or {path, text_column or text_fields, "
                                  "label_column, task}"))
            continue
        p = Path(str(spec["path"]))
        src = str(base / p) if not p.is_absolute() and (base / p).exists() else str(p)
        data[name] = {"source": src, **{k: (",".join(map(str, v)) if isinstance(v, list) else str(v))
                                        for k, v in spec.items() if k != "path"}}
    executor = raw.get("executor") or {"kind": "local"}
    executor = {"kind": executor} if isinstance(executor, str) else executor
    if not isinstance(executor, dict) or set(executor) - set(EXECUTOR_KEYS) \
            or executor.get("kind", "local") not in ("local", "ray"):
        where.add(where.error(("executor",), "expected local, ray or {kind: local|ray, workers, address, num_cpus}"))
        executor = {}
    studies_raw = raw.get("studies")
    studies = []
    if not isinstance(studies_raw, list) or not studies_raw:
        where.add(where.error(("studies",), "expected a non-empty list of studies"))
        studies_raw = []
    for i, e in enumerate(studies_raw):
        try:
            studies.append(_study(e, i, where, models, data, base))
        except ConfigError as err:  # not a study at all (no mapping, an unknown kind or name)
            where.add(err)
    names = [s.name for s in studies]
    for i, n in enumerate(names):
        if n in names[:i]:
            where.add(where.error(("studies", i, "name"), f"study name {n!r} is used twice; names must differ"))
    if where.errors:
        raise ConfigError("\n".join(where.errors), where.errors)
    out_dir = Path(out) if out is not None else Path(raw.get("out") or Path("runs") / path.stem)
    if raw.get("out") and out is None and not out_dir.is_absolute():
        out_dir = base / out_dir
    return RunConfig(path=path, text=text, base=base, out=out_dir, executor={"kind": "local", **executor}, models=models,
                     studies=studies, report=bool(raw.get("report", True)), data=data)
