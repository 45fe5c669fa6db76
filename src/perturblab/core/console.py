"""What a run prints on the console: perturblab's own progress, and the libraries' only when asked.

* perturblab's progress: a bar with ETA per phase, and one line when a slow step (loading a
  model, training a head) is done (:meth:`~.study.RunContext.step`);
* perturblab's messages go through :mod:`logging`, each module's to its child of the
  ``perturblab`` logger: the lines a run says (the plan, each round, what was recorded) at INFO,
  its warnings at WARNING, the detailed log of each step at DEBUG; what a caller should know
  (a conflict, an old name, a left-out plugin) is a :class:`~perturblab.errors.PerturblabWarning`.
  The command prints them (:func:`command_lines`, :func:`warnings_as_lines`); a Python call
  shows them when the application has configured no logging (:func:`lines_shown`);
* the libraries it calls (Hugging Face's "Loading weights", "Writing model shards", the GGUF
  conversion's bar, their advisory warnings) say nothing while a study runs, unless perturblab's
  log is verbose (``perturblab -v``, or the ``perturblab`` logger at DEBUG in Python):
  :func:`libraries_quiet`, :func:`bars_off`;
* bars drawn inside another bar (a search's, an encoder's hidden states) are drawn only on a
  terminal (:func:`terminal`): elsewhere (a log file, CI) tqdm's cursor moves would be raw
  escape codes in the text;
* a run of several studies (``compare``) names each bar and line by its study
  (:func:`named_by`, :func:`bar_name`);
* a phase's bar moves while a work cell runs, not only when it ends: work that knows how far
  it is (a search: per request of candidates) says so with :func:`advance`, which moves the bar
  of the cell it runs in (:func:`reporting`, set by the driver) by a share of a task; the bar
  (:func:`progress_bar`) counts whole tasks done and estimates the time left from those shares.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

#: the study the bars and progress lines of this thread belong to ("" : the command's one study)
_STUDY: ContextVar[str] = ContextVar("perturblab_bar_study", default="")


@contextmanager
def _within(var: ContextVar, value: Any) -> Iterator[None]:
    """``var`` set to ``value`` while the block runs (in this context only)."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def named_by(study: str) -> Any:
    """Within it, progress bars and lines start with ``study:`` (a comparison's studies)."""
    return _within(_STUDY, study)


def bar_name(what: str) -> str:
    """``what`` (a phase's name, a progress line) with the study it belongs to, when one is named.

    >>> with named_by("invariances"):
    ...     bar_name("searches")
    'invariances: searches'
    >>> bar_name("searches")
    'searches'
    """
    study = _STUDY.get()
    return f"{study}: {what}" if study else what


#: where the work running in this context says how much of it is done (:func:`advance`)
_ADVANCE: ContextVar[Callable[[float], None] | None] = ContextVar("perturblab_advance", default=None)


def reporting(to: Callable[[float], None]) -> Any:
    """Within it, :func:`advance` calls ``to`` (the driver moves a work cell's share of its bar)."""
    return _within(_ADVANCE, to)


def advance(done: float) -> None:
    """Say that ``done`` more tasks (a share of one: a search says each request of its candidates)
    of the work running here are done; nothing outside :func:`reporting` (a search run on its own,
    a cell on a Ray worker, whose bar moves when the cell ends). It moves a bar, nothing else.

    >>> seen = []
    >>> with reporting(seen.append):
    ...     advance(0.25)
    >>> advance(0.5)  # no cell reports here
    >>> seen
    [0.25]
    """
    to = _ADVANCE.get()
    if to is not None and done > 0:
        to(done)


def progress_bar(total: int, desc: str, disable: bool = False) -> Any:
    """A bar with ETA of ``total`` tasks that may move by shares of a task (:func:`advance`): it
    shows the whole tasks done (``3/8``, never rounded up) and estimates the time left from every
    share it moved by."""
    from tqdm.auto import tqdm

    class _Bar(tqdm):  # type: ignore[misc, valid-type]
        @property
        def format_dict(self) -> dict[str, Any]:
            d = dict(super().format_dict)
            d["done"] = int(math.floor((d.get("n") or 0) + 1e-9))
            return d

    return _Bar(total=total, desc=desc, disable=disable, leave=False, file=sys.stderr,
                bar_format="{l_bar}{bar}| {done}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")


#: the logger of perturblab's messages: each module logs to its child (``logging.getLogger(__name__)``)
LOGGER = "perturblab"
#: how a command prints the log records that are not perturblab's lines (as :func:`logging.basicConfig` did)
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def is_line(record: logging.LogRecord) -> bool:
    """Whether ``record`` is one of the lines perturblab says (the plan, a round, a step done, what
    was recorded): a record of the ``perturblab`` logger or a child at INFO (its warnings are at
    WARNING, its detailed log at DEBUG)."""
    return (record.name == LOGGER or record.name.startswith(LOGGER + ".")) and \
        logging.INFO <= record.levelno < logging.WARNING


class LineHandler(logging.Handler):
    """Writes each record's message as one plain line on stderr (the stream of the moment) and
    flushes it; a progress bar drawn there is cleared first and drawn again below the line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm.auto import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
            sys.stderr.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


def _left_to_lines(record: logging.LogRecord) -> bool:
    """False for a line (:func:`is_line`) while a :class:`LineHandler` prints perturblab's lines."""
    return not (is_line(record) and any(isinstance(h, LineHandler) for h in logging.getLogger(LOGGER).handlers))


@contextmanager
def command_lines(verbose: bool = False) -> Iterator[None]:
    """What a command prints of the log while the block runs: perturblab's lines (:func:`is_line`)
    as plain lines on stderr (:class:`LineHandler`); every other record at WARNING (with
    ``verbose``, ``-v``: perturblab's DEBUG and the libraries' INFO too) as ``LEVEL name: message``
    through the root logger's handlers. When the root logger has none, it gets one on stderr, as
    :func:`logging.basicConfig` makes it (once for the process), which leaves the lines to the
    line handler."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.addFilter(_left_to_lines)
        root.addHandler(handler)
        root.setLevel(logging.INFO if verbose else logging.WARNING)
    logger = logging.getLogger(LOGGER)
    lines, before = LineHandler(), logger.level
    lines.addFilter(is_line)
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(lines)
        logger.setLevel(before)


_SHOWN = LineHandler()  # a Python call's own handler (lines_shown)
_shown_calls = 0  # how many calls have it on now (only the first puts it on, only the last takes it off)
_shown_lock = threading.Lock()
_shown_propagate = True  # the logger's propagate before the first call put the handler on


def configured() -> bool:
    """Whether the application configured perturblab's log: a level or a handler on the
    ``perturblab`` logger or one of its children."""
    mine = [logging.getLogger(LOGGER)] + [logger for name, logger in logging.Logger.manager.loggerDict.items()
                                          if name.startswith(LOGGER + ".") and isinstance(logger, logging.Logger)]
    return any(logger.level or logger.handlers for logger in mine)


@contextmanager
def lines_shown() -> Iterator[None]:
    """While a study's Python function runs, its log shows as the command's does, unless the
    application configured perturblab's log (:func:`configured`): the ``perturblab`` logger then
    shows INFO and above, each record's message as a plain line on stderr (:class:`LineHandler`:
    the plan, the rounds and what was recorded as the command prints them; a warning as Python's
    last resort would), and passes nothing on to the root logger's handlers, so no line shows
    twice (as the Hugging Face libraries do). A level or a handler on it (or a child) hands its
    records to standard logging: ``logging.getLogger("perturblab").setLevel(logging.WARNING)``
    leaves the warnings only; at INFO the lines go to the application's handlers."""
    global _shown_calls, _shown_propagate
    logger = logging.getLogger(LOGGER)
    with _shown_lock:
        mine = _shown_calls > 0 or not configured()
        if mine:
            if _shown_calls == 0:
                logger.addHandler(_SHOWN)
                logger.setLevel(logging.INFO)
                _shown_propagate, logger.propagate = logger.propagate, False
            _shown_calls += 1
    try:
        yield
    finally:
        if mine:
            with _shown_lock:
                _shown_calls -= 1
                if _shown_calls == 0:
                    logger.removeHandler(_SHOWN)
                    logger.setLevel(logging.NOTSET)
                    logger.propagate = _shown_propagate


@contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Within it, each of perturblab's warnings (:class:`~perturblab.errors.PerturblabWarning`) is
    one line on stderr, ``<label>: <message>`` (``warning: ...``; ``note: ...`` for an old name of
    an option), once for each line and never raised, whatever the filters; other warnings are shown
    as before."""
    from ..errors import PerturblabWarning

    said: set[str] = set()
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
                 line: str | None = None) -> None:
            if not issubclass(category, PerturblabWarning):
                shown(message, category, filename, lineno, file, line)
                return
            text = f"{category.label}: {message}"
            if text not in said:
                said.add(text)
                print(text, file=sys.stderr, flush=True)

        warnings.simplefilter("always", PerturblabWarning)
        warnings.showwarning = show
        yield


#: the environment the Hugging Face libraries read when imported: no bars, errors only
_QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "HF_HUB_VERBOSITY": "error"}
_quiet_depth = 0  # how many libraries_quiet blocks are open (only the outermost one acts)


def verbose() -> bool:
    """Whether perturblab's log is verbose (``-v``: the ``perturblab`` logger at DEBUG)."""
    return logging.getLogger(LOGGER).isEnabledFor(logging.DEBUG)


def terminal() -> bool:
    """Whether stderr is a terminal (where a bar may be drawn inside another one)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


@contextmanager
def libraries_quiet() -> Iterator[None]:
    """The Hugging Face libraries' progress bars and advisory warnings off while the block runs,
    as they were afterwards; nothing changes when perturblab's log is verbose (:func:`verbose`)."""
    global _quiet_depth
    if verbose() or _quiet_depth:  # verbose, or inside another such block (the command's, the driver's)
        yield
        return
    _quiet_depth += 1
    saved_env = {k: os.environ.get(k) for k in _QUIET_ENV}
    before = _hf_state()
    os.environ.update(_QUIET_ENV)  # read by a library imported inside the block
    _set_hf_state((False, logging.ERROR))
    try:
        yield
    finally:
        _quiet_depth -= 1
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _set_hf_state(before or (True, logging.WARNING))  # imported inside the block: its defaults


def _hf_state() -> tuple[bool, int] | None:
    """(progress bars on, verbosity) of transformers when it is imported (None otherwise: it is
    not imported here, which costs a second)."""
    if "transformers" not in sys.modules:
        return None
    from transformers.utils import logging as hf_logging

    return hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()


def _set_hf_state(state: tuple[bool, int]) -> None:
    if "huggingface_hub" in sys.modules:  # its retries of an unreachable hub, said twice otherwise
        from huggingface_hub.utils import logging as hub_logging

        hub_logging.set_verbosity(state[1])
    if "transformers" not in sys.modules:
        return
    from transformers.utils import logging as hf_logging

    bars, verbosity = state
    if not bars:
        hf_logging.disable_progress_bar()
    elif os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") is None:  # the user's own setting wins
        import warnings

        with warnings.catch_warnings():  # a hub imported inside the block keeps its downloads' bars off
            warnings.simplefilter("ignore")
            hf_logging.enable_progress_bar()
    hf_logging.set_verbosity(verbosity)


@contextmanager
def bars_off(module: Any) -> Iterator[None]:
    """The progress bars of a library ``module`` that calls ``tqdm`` directly (not through a switch
    of its own; e.g. the GGUF conversion of transformers) off while the block runs, unless
    perturblab's log is verbose."""
    original = getattr(module, "tqdm", None)
    if verbose() or original is None:
        yield
        return

    def quiet_tqdm(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **{**kwargs, "disable": True})

    module.tqdm = quiet_tqdm
    try:
        yield
    finally:
        module.tqdm = original
