"""The one entry of every study: its values checked once, then run in a workspace, then saved.

Three ways start a study — its command, an entry of a study config (``perturblab run``) and its
Python function (``pl.<study>``) — and they share this module, so they cannot disagree:

* :func:`function_of` makes a study's Python function from its class
  (:class:`~.study.Study`): every call is read once into checked options and ready objects
  (:func:`~.boundary.read_call`) before the study is built (nothing locked, loaded or written);
* :func:`run` (of :mod:`.running`) is a study's last step (:meth:`~.boundary.Inputs.run`): it
  owns the temporary directory (``out=None``), the executor's lifetime (made from its name, shut
  down afterwards) and hands the study to the driver (:func:`~.driver.run_study`: lock, store,
  resume, progress, faults);
* :func:`run_saved` is what the command and the config runner do: check the options, hold the
  output directory's lock, record the faults of API models, run the study and save its
  files (all or nothing, as every :meth:`~.study.StudyResult.save`).
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .running import check_out, run, workspace

__all__ = ["function_of", "run_saved", "run", "workspace", "check_out", "import_object"]

if TYPE_CHECKING:  # pragma: no cover
    from .options import StudyArgs
    from .study import Study, StudyResult

log = logging.getLogger(__name__)


def function_of(study: "type[Study]") -> Callable[..., Any]:
    """The Python function of the study class ``study`` (``perturblab.<name>``), generated from
    its declarations:

    * its signature comes from ``study.Args`` (:func:`~.signature.signature_of`: the options
      marked ``positional`` first, every other field keyword-only with its default, the
      Python-only fields and the old names last; the return annotation is ``study.Result``), its
      docstring is the class's followed by the "Options" section generated from the same fields
      (:func:`~.signature.options_doc`), so no option is declared twice;
    * a call binds its arguments to that signature (an option given by two of its names, such as
      ``trials=`` and its old name ``seeds=``, is refused as on the command line and in a config:
      :meth:`~.readers.Readers.check_given_once`), reads them once into the checked options and the
      ready objects (:func:`~.boundary.read_call`: nothing locked, loaded or written before the
      check) and runs ``study.call(args, inputs)``;
    * ``device=`` and ``dtype=`` (fields of every study's options: ``--device`` / ``--dtype``)
      place the models it loads (:func:`perturblab.core.placement.placement`).

    Example::

        >>> import inspect
        >>> from dataclasses import dataclass
        >>> from perturblab.core.options import StudyArgs, option
        >>> from perturblab.core.study import Study, StudyResult
        >>> @dataclass(kw_only=True)
        ... class ToyArgs(StudyArgs):
        ...     models: str | None = option(required=True, positional=True, role="classifier", many=True,
        ...                                 python="str | Sequence[Any]", help="models")
        ...     n_boot: int = option(1000, min=1, help="bootstrap resamples")
        >>> class Toy(Study):
        ...     \"\"\"A toy study.\"\"\"
        ...     command, Args, Result = "toy", ToyArgs, StudyResult
        ...     @classmethod
        ...     def call(cls, args, inputs):
        ...         return args.models, args.n_boot, sorted(inputs.models)
        >>> class Model:
        ...     fingerprint = "toy-model"
        >>> toy = function_of(Toy)
        >>> toy(["tfidf-lr", Model()], n_boot=5)
        ('tfidf-lr,model1', 5, ['model1'])
        >>> list(inspect.signature(toy).parameters)
        ['models', 'n_boot', 'out', 'quiet', 'device', 'dtype']
        >>> toy("tfidf-lr", n_boot=0)
        Traceback (most recent call last):
        ...
        perturblab.errors.InputError: --n-boot: must be at least 1, got 0
    """
    from .boundary import read_call
    from .signature import options_doc, signature_of

    options = _options_class(study)
    result = getattr(study, "Result", None)
    signature = signature_of(options, result.__name__ if isinstance(result, type) else inspect.Signature.empty)
    values_of = _binder(signature, options)

    def function(*a: Any, **kw: Any) -> Any:
        from .console import lines_shown
        from .placement import placement

        values = values_of(a, kw)
        args, inputs = read_call(options, values)
        with placement(values.get("device"), values.get("dtype")), lines_shown():
            return study.call(args, inputs)

    function.__name__ = function.__qualname__ = study.function_name()
    function.__module__ = study.__module__
    doc = inspect.cleandoc(study.__doc__ or "")
    function.__doc__ = (doc + "\n\n" if doc else "") + options_doc(options)
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__study__ = study  # type: ignore[attr-defined]
    return function


def _options_class(study: Any) -> "type[StudyArgs]":
    """The options class of the study class ``study``; anything else is a ``TypeError`` naming
    the fix."""
    from .options import StudyArgs

    args = getattr(study, "Args", None)
    if not (isinstance(args, type) and issubclass(args, StudyArgs)):
        name = getattr(study, "__name__", repr(study))
        raise TypeError(f"the study class {name} declares no options: give it `Args = <its StudyArgs subclass>`")
    return args


def _binder(signature: inspect.Signature,
            options: "type[StudyArgs]") -> Callable[[tuple, dict[str, Any]], dict[str, Any]]:
    """What makes a call's values of its arguments: each keyword of ``signature`` as called, else
    its default (an old name None); an option given by two of its names is refused."""
    old = options.old_names()

    def values_of(a: tuple, kw: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*a, **kw)
        options.check_given_once(k for k, v in bound.arguments.items() if v is not None)
        values = options.python_defaults()
        values.update({n: None for n in old})
        values.update(bound.arguments)
        return values

    return values_of


def import_object(where: str) -> Any:
    """The object ``module:name`` names (imported now)."""
    import importlib

    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def run_saved(study: "type[Study]", options: "StudyArgs", *, out: str | Path, what: str, executor: Any = None,
              prefix: str = "") -> tuple["StudyResult", list[Path]]:
    """Check ``options``, then, under ``out``'s lock and with the faults of API models recorded,
    run the study class ``study`` with them (:meth:`~.study.Study.call`) and save the result's
    files all or nothing; returns the result and the paths written. ``executor`` (an object)
    replaces the options' named one where the study takes one. One line (logged at INFO) counts
    the faults of API models (``prefix`` first), also when the study failed."""
    from .boundary import Inputs
    from .faults import FAULTS_FILE, FaultRecorder
    from .lock import output_lock
    from .placement import placement

    options.check()
    out = check_out(out)
    with output_lock(out, what=what), FaultRecorder() as faults, placement(*options.placement()):
        try:
            result = study.call(options, Inputs(out=out, executor=executor))
            paths = result.save(out)  # all or nothing (StudyResult.save)
        finally:
            if faults.used:
                log.info(prefix + faults.line(str(out / FAULTS_FILE)))
    return result, list(paths or [])
