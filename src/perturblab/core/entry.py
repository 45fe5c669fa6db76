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
import logging
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .options import StudyArgs
    from .study import Study, StudyResult

log = logging.getLogger(__name__)


def study_function(args: "type[StudyArgs]") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a study's Python function from its options class ``args`` (a
    :class:`~.options.StudyArgs` subclass) and its BODY, a function of ``(args, given)``:

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
      checked already: :func:`run_saved`); ``fn.__study_args__`` is ``args``.

    A body with other parameters (keywords written by hand) is refused with a ``TypeError``
    naming the fix: its keywords come from ``args``.

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
        >>> @study_function(ToyArgs)
        ... def by_hand(models, *, n_boot=1000):
        ...     return n_boot
        Traceback (most recent call last):
        ...
        TypeError: @study_function(ToyArgs) makes ... not by_hand(models, *, n_boot=1000); write it as `def by_hand(args, given)`: ...
    """
    options = _options_class(args)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        _check_body(fn, options)
        return _function_of(fn, options)

    return decorate


def _options_class(args: Any) -> "type[StudyArgs]":
    """``args`` if it is an options class; anything else is a ``TypeError`` naming the fix."""
    from .options import StudyArgs

    if not (isinstance(args, type) and issubclass(args, StudyArgs)):
        raise TypeError(f"@study_function takes the study's options class (a StudyArgs subclass), not {args!r}; "
                        "import the class and give it")
    return args


def _check_body(fn: Callable[..., Any], options: "type[StudyArgs]") -> None:
    """Refuse a body that is not a function of ``(args, given)``, naming the fix."""
    signature = inspect.signature(fn)
    if list(signature.parameters) != ["args", "given"]:
        name, cls = getattr(fn, "__name__", "the function"), options.__name__
        raise TypeError(f"@study_function({cls}) makes a study's function from a body of (args, given), not "
                        f"{name}{signature}; write it as `def {name}(args, given)`: its keywords are generated "
                        f"from {cls}, `args` is the options checked and `given` every keyword as called")


def _function_of(fn: Callable[..., Any], options: "type[StudyArgs]") -> Callable[..., Any]:
    """The study's function of the body ``fn``: its calls checked and placed, its signature and
    docstring generated from ``options`` (see :func:`study_function`)."""
    from .signature import options_doc, signature_of

    signature = signature_of(options, inspect.signature(fn).return_annotation)
    given_of = _binder(signature, options)

    def unchecked(*a: Any, **kw: Any) -> Any:
        given = given_of(a, kw)
        return fn(options.from_python(given), given)

    @functools.wraps(fn)
    def public(*a: Any, **kw: Any) -> Any:
        from .console import lines_shown
        from .placement import placement

        given = given_of(a, kw)
        checked = options.from_python(given)
        checked.check()
        with placement(given.get("device"), given.get("dtype")), lines_shown():
            return fn(checked, given)

    functools.update_wrapper(unchecked, fn)
    unchecked.__signature__ = signature  # type: ignore[attr-defined]
    public.__signature__ = signature  # type: ignore[attr-defined]
    public.__wrapped__ = unchecked  # type: ignore[attr-defined]
    doc = inspect.cleandoc(fn.__doc__ or "")
    public.__doc__ = (doc + "\n\n" if doc else "") + options_doc(options)
    public.__study_args__ = options  # type: ignore[attr-defined]
    return public


def _binder(signature: inspect.Signature,
            options: "type[StudyArgs]") -> Callable[[tuple, dict[str, Any]], dict[str, Any]]:
    """What makes ``given`` of a call's arguments: each keyword of ``signature`` as called, else its
    default (an old name None); an option given by two of its names is refused."""
    old = options.old_names()

    def given_of(a: tuple, kw: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*a, **kw)
        options.check_given_once(k for k, v in bound.arguments.items() if v is not None)
        given = options.python_defaults()
        given.update({n: None for n in old})
        given.update(bound.arguments)
        return given

    return given_of


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
    options' named one where the function takes one. One line (logged at INFO) counts the faults
    of API models (``prefix`` first), also when the study failed."""
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
                log.info(prefix + faults.line(str(out / FAULTS_FILE)))
    return result, list(paths or [])
