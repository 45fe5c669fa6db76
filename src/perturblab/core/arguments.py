"""The command line of a study: its options added to an ``argparse`` parser and read back from
the parsed command line, and the parser every command of ``perturblab`` uses.

:class:`CommandLine` is a base of :class:`~.options.StudyArgs` (the schema): each field is one
option (``--n-boot`` for ``n_boot``, old names as aliases, every default shown in ``--help``).
:class:`Parser` is the parser of ``perturblab`` and of each of its commands.
"""

from __future__ import annotations

import argparse
import typing
from typing import Any, Mapping, TypeVar

from .readers import parse_of

C = TypeVar("C", bound="CommandLine")

#: the attribute of a parsed command line that holds, for each option with old names, the
#: option strings the command line gave it by (``{"trials": ["--seeds"]}``)
GIVEN_BY = "_option_strings_given"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default after its help, unless the help names it already or there is
    none to show (a required option, an unset value, a flag)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.required or action.default is None or action.default is False
                or action.default in ([], (), "", argparse.SUPPRESS)
                or "%(default)" in text or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class Parser(argparse.ArgumentParser):
    """argparse with every default shown in ``--help`` and a "did you mean" for a mistyped
    command, choice or option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        import difflib
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)

    def _add_action(self, action: argparse.Action) -> argparse.Action:
        if action.help is None and action.option_strings and not (
                action.required or action.default is None or action.default is False
                or action.default in ([], (), "", argparse.SUPPRESS)):
            action.help = "default: %(default)s"  # an option without help still shows its default
        return super()._add_action(action)

    def options(self) -> list[str]:
        """The long options of this parser."""
        return [o for a in self._actions for o in a.option_strings if o.startswith("--")]


class _GivenBy(argparse.Action):
    """An action of an option with old names that notes which of its option strings the command
    line gave (in the namespace's :data:`GIVEN_BY`), then does what its base does."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, GIVEN_BY, None)
        if given is None:
            given = {}
            setattr(namespace, GIVEN_BY, given)
        strings = given.setdefault(self.dest, [])
        if option_string not in strings:
            strings.append(option_string)
        super().__call__(parser, namespace, values, option_string)


class _Store(_GivenBy, argparse._StoreAction):
    pass


class _StoreTrue(_GivenBy, argparse._StoreTrueAction):
    pass


class _Append(_GivenBy, argparse._AppendAction):
    pass


class CommandLine:
    """The command line of a study's options (a base of :class:`~.options.StudyArgs`, whose
    schema it reads: ``fields()``, ``cli_defaults()``)."""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None) -> None:
        """Add one option per field to ``parser`` (``defaults`` overrides some defaults; an
        option given a default there is no longer required)."""
        hints = typing.get_type_hints(cls)
        over = dict(defaults or {})
        cli_defaults = cls.cli_defaults(over)  # type: ignore[attr-defined]
        groups: dict[str, Any] = {}
        for f, opt in cls.fields():  # type: ignore[attr-defined]
            target: Any = parser
            if opt.one_of is not None:
                if opt.one_of not in groups:
                    groups[opt.one_of] = parser.add_mutually_exclusive_group(required=True)
                target = groups[opt.one_of]
            names = [f"--{f.name.replace('_', '-')}"] + [f"--{a.replace('_', '-')}" for a in opt.aliases]
            kw: dict[str, Any] = {"dest": f.name, "help": opt.help.replace("%", "%%")}  # plain text to argparse
            if opt.flag:
                target.add_argument(*names, action=_StoreTrue if opt.aliases else "store_true", **kw)
                continue
            kw["required"] = opt.required and f.name not in over and opt.one_of is None
            kw["default"] = cli_defaults[f.name]
            parse = parse_of(f, opt, hints)
            if parse is not None:
                kw["type"] = parse
            if opt.choices is not None:
                kw["choices"] = list(opt.choices)
            if opt.metavar:
                kw["metavar"] = opt.metavar
            if opt.repeat:
                kw["action"] = _Append if opt.aliases else "append"
            elif opt.aliases:
                kw["action"] = _Store
            target.add_argument(*names, **kw)

    @classmethod
    def from_cli(cls: type[C], ns: argparse.Namespace) -> C:
        """The options of a parsed command line; an option given by two of its names (``--trials``
        and its old name ``--seeds``) is an :class:`~perturblab.errors.InputError`, as in a config
        and a Python call."""
        given = [s for strings in getattr(ns, GIVEN_BY, {}).values() for s in strings]
        cls.check_given_once(given)  # type: ignore[attr-defined]
        options = cls(**{f.name: getattr(ns, f.name) for f, _ in cls.fields()  # type: ignore[attr-defined]
                         if hasattr(ns, f.name)})
        return options.given_by(cls.old_names_of(given, "cli"))  # type: ignore[attr-defined]
