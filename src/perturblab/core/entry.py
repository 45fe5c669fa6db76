"""The one entry of every study: its values checked once, then run in a workspace, then saved.

Three ways start a study — its command, an entry of a study config (``perturblab run``) and its
Python function (``pl.<study>``) — and they share this module, so they cannot disagree:

* :func:`study_function` makes a study's Python function from its options class
  (:class:`~.options.StudyArgs`): every call's plain values are checked by
  :meth:`~.options.StudyArgs.check` before the body runs (nothing locked, loaded or written);
* :func:`run` is the body's last step: it owns the temporary directory (``out=None``), the
  executor's lifetime (made from its name, shut down afterwards) and hands the study to the
  driver (:func:`~.driver.run_study`: lock, store, resume, progress, faults);
* :func:`run_saved` is what the command and the config runner do: check the options, hold the
  output directory's lock, record the faults of API models, call the function and save its
  files (all or nothing, as every :meth:`~.study.StudyResult.save`).
"""

from __future__ import annotations

import functools
import inspect
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .options import StudyArgs
    from .study import Study, StudyResult

F = TypeVar("F", bound=Callable[..., Any])


def study_function(args: "type[StudyArgs] | str") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a study's Python function from its options class ``args`` (a
    :class:`~.options.StudyArgs` subclass, or ``module:Class``) and its BODY, a function of
    ``(args, given)``:

    * the function's signature is generated from the fields
      (:func:`~.signature.signature_of`: the options marked ``positional`` first, every other
      field keyword-only with its default, the Python-only fields and the old names last), and its
      docstring is the body's followed by the "Options" section generated from them
      (:func:`~.signature.options_doc`), so no option is declared twice;
    * a call binds its arguments to that signature (an option given by two of its names, such as
      ``trials=`` and its old name ``seeds=``, is refused as on the command line and in a config:
      :meth:`~.readers.Readers.check_given_once`); ``given`` is every keyword as called (its
      default when not given; objects too: models, data sets, corpora, hooks), ``args`` the options
      read from its plain values (:meth:`~.options.StudyArgs.from_python`: objects and Python-only
      keywords left at their defaults) and checked (:meth:`~.options.StudyArgs.check`) before the
      body runs, nothing locked, loaded or written; the body names what it was given as objects
      (``dataclasses.replace(args, reference=name)``);
    * ``device=`` and ``dtype=`` (fields of every study's options: ``--device`` / ``--dtype``)
      place the models it loads (:func:`perturblab.core.placement.placement`);
    * ``fn.__wrapped__`` takes the same keywords and runs the body unchecked (for callers that
      checked already: :func:`run_saved`).

    A function written the old way, its keywords by hand (anything but ``(args, given)``), keeps
    working: its call's plain values are checked the same way before it runs, and the contract
    (:func:`perturblab.testing.check_signature`) checks that its keywords are the options'.

    Example::

        >>> import inspect
        >>> from dataclasses import dataclass
        >>> from perturblab.core.options import StudyArgs, option
        >>> @dataclass(kw_only=True)
        ... class ToyArgs(StudyArgs):
        ...     models: str | None = option(required=True, positional=True, python="str | Sequence[Any]",
        ...                                 help="models")
        ...     n_boot: int = option(1000, min=1, help="bootstrap resamples")
        >>> @study_function(ToyArgs)
        ... def toy(args, given):
        ...     \"\"\"A toy study.\"\"\"
        ...     return args.n_boot, given["models"]
        >>> toy(["a", "b"], n_boot=5)
        (5, ['a', 'b'])
        >>> list(inspect.signature(toy).parameters)
        ['models', 'n_boot', 'out', 'quiet', 'device', 'dtype']
        >>> toy("a", n_boot=0)
        Traceback (most recent call last):
        ...
        perturblab.errors.InputError: --n-boot: must be at least 1, got 0
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        from .signature import options_doc, signature_of

        if list(inspect.signature(fn).parameters) != ["args", "given"]:
            return _old_style(fn, args)
        options = import_object(args) if isinstance(args, str) else args
        signature = signature_of(options, inspect.signature(fn).return_annotation)
        old = options.old_names()

        def given_of(a: tuple, kw: dict[str, Any]) -> dict[str, Any]:
            bound = signature.bind(*a, **kw)
            options.check_given_once(k for k, v in bound.arguments.items() if v is not None)
            given = options.python_defaults()
            given.update({n: None for n in old})
            given.update(bound.arguments)
            return given

        def unchecked(*a: Any, **kw: Any) -> Any:
            given = given_of(a, kw)
            return fn(options.from_python(given), given)

        @functools.wraps(fn)
        def public(*a: Any, **kw: Any) -> Any:
            from .placement import placement

            given = given_of(a, kw)
            checked = options.from_python(given)
            checked.check()
            with placement(given.get("device"), given.get("dtype")):
                return fn(checked, given)

        functools.update_wrapper(unchecked, fn)
        unchecked.__signature__ = signature  # type: ignore[attr-defined]
        public.__signature__ = signature  # type: ignore[attr-defined]
        public.__wrapped__ = unchecked  # type: ignore[attr-defined]
        doc = inspect.cleandoc(fn.__doc__ or "")
        public.__doc__ = (doc + "\n\n" if doc else "") + options_doc(options)
        public.__study_args__ = options  # type: ignore[attr-defined]
        return public

    return decorate


def _old_style(fn: F, args: "type[StudyArgs] | str") -> F:
    """A study function written the old way (its keywords by hand): a call's plain values are
    checked by ``args`` before it runs; ``device=`` and ``dtype=`` are added where it lacks them."""
    from .options import PLACEMENT

    signature = inspect.signature(fn)
    extra = [n for n in PLACEMENT if n not in signature.parameters]

    @functools.wraps(fn)
    def checked(*a: Any, **kw: Any) -> Any:
        from .placement import placement

        place = {n: kw.pop(n, None) for n in extra}
        bound = signature.bind(*a, **kw)
        options = import_object(args) if isinstance(args, str) else args
        options.check_given_once(k for k, v in bound.arguments.items() if v is not None)
        options.from_python({**bound.arguments, **place}).check()
        with placement(place.get("device"), place.get("dtype")):
            return fn(*a, **kw)

    # every study function takes device= and dtype= (--device / --dtype): where its models run
    params = list(signature.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params[at:at] = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | None")
                     for n in extra]
    checked.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return checked  # type: ignore[return-value]


def import_object(where: str) -> Any:
    """The object ``module:name`` names (imported now)."""
    import importlib

    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def check_out(out: str | Path) -> Path:
    """``out`` as a directory path; an empty one is refused (it would write into the current
    directory)."""
    if not str(out).strip():
        raise InputError("--out is empty; give an output directory (it is created if missing)")
    return Path(out)


@contextmanager
def workspace(out: str | Path | None, executor: Any = "local", *, address: str | None = None,
              num_cpus: int | None = None, workers: int = 1) -> Iterator[tuple[Path, Any]]:
    """The output directory (a temporary one, removed afterwards, when ``out`` is None) and the
    executor: one given as an object is used as it is; one named (``local``, ``threads``, ``ray``)
    is made here and shut down when the block ends, also when it fails."""
    if out is not None:
        check_out(out)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = executor
        if isinstance(executor, str) or executor is None:
            from .executor import make_executor

            ex = make_executor(executor or "local", workers=workers, address=address, num_cpus=num_cpus)
            if hasattr(ex, "shutdown"):
                stack.callback(ex.shutdown)
            if address and hasattr(ex, "start"):
                ex.start()  # an unreachable cluster is refused before any model loads or file is written
        yield where, ex


def run(study: "Study", out: str | Path | None = None, *, executor: Any = "local", address: str | None = None,
        num_cpus: int | None = None, workers: int = 1, quiet: bool = False) -> "StudyResult":
    """Run (or resume) ``study`` in :func:`workspace` ``out`` on ``executor``; returns its result
    (the caller saves its files)."""
    from .driver import run_study

    with workspace(out, executor, address=address, num_cpus=num_cpus, workers=workers) as (where, ex):
        return run_study(study, where, executor=ex, progress=not quiet)


def run_saved(function: Callable[..., "StudyResult"], options: "StudyArgs", *, out: str | Path,
              what: str, executor: Any = None, prefix: str = "") -> tuple["StudyResult", list[Path]]:
    """Check ``options``, then, under ``out``'s lock and with the faults of API models recorded,
    call the study ``function`` (its unchecked body) with them and save the result's files all or
    nothing; returns the result and the paths written. ``executor`` (an object) replaces the
    options' named one where the function takes one. One line on stderr counts the faults of API
    models (``prefix`` first), also when the study failed."""
    from .faults import FAULTS_FILE, FaultRecorder
    from .lock import output_lock

    options.check()
    out = check_out(out)
    body = getattr(function, "__wrapped__", function)
    kwargs = {**options.kwargs(), "out": out}
    if executor is not None and "executor" in inspect.signature(body).parameters:
        kwargs["executor"] = executor
    from .placement import placement

    with output_lock(out, what=what), FaultRecorder() as faults, placement(*options.placement()):
        try:
            result = body(**kwargs)
            paths = result.save(out)  # all or nothing (StudyResult.save)
        finally:
            if faults.used:
                print(prefix + faults.line(str(out / FAULTS_FILE)), file=sys.stderr)
    return result, list(paths or [])
