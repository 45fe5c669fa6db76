"""The study noun: one class that says what a study is and does.

What it is, declared on the class (:class:`Study`'s class attributes): its command (also its
kind in a study config), its options (``Args``, a :class:`~.options.StudyArgs` built from the
shared option groups), its result (``Result``), its part in ``perturblab compare`` (``part``)
and an example that runs it in seconds. From these the registry makes the command, the config
kind and the Python function ``perturblab.<name>`` (:func:`~.entry.function_of`); the framework
owns the Python boundary: a model or data option takes a spec or an object, and the study is
built from its checked options and the ready objects (:class:`~.boundary.Inputs`, :meth:`Study.of`).

What it does, driven by :func:`perturblab.core.driver.run_study`:

0. :meth:`Study.check` refuses input that cannot run, before the output directory or its
   results store is touched and before any model is loaded;
1. :meth:`Study.prepare` loads the data and models it needs (with progress lines);
2. :meth:`Study.identity` names what the whole run depends on (options, model fingerprints,
   examples), hashed into the run id;
3. :meth:`Study.phases` yields :class:`Phase` objects one after the other; each holds
   content-keyed :class:`Task` objects. The driver computes the tasks whose keys the store does not
   hold (on the executor, batched per group), stores each finished batch in one transaction, and
   fills :attr:`Phase.results` before the study's generator goes on, so a later phase can depend
   on an earlier one's results;
4. :meth:`Study.finish` turns the results into a :class:`StudyResult` (rows, summary, figures),
   whose :meth:`StudyResult.save` writes the study's output files.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Hashable, Iterator, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .headline import Headline
    from .options import StudyArgs
    from .store import ResultStore

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Lazy:
    """A payload made only when its task must be computed (e.g. a perturbed test set, which a
    resumed run whose results are stored never needs)."""

    make: Callable[[], Any]


@dataclass
class Task:
    """One unit of stored work: ``key`` (a content key, :func:`~.keys.content_key`) names its
    result; ``payload`` is what the phase's ``compute`` receives (a :class:`Lazy` one is made
    only when the task runs); tasks of one ``group`` are batched together (never with another
    group's)."""

    key: str
    payload: Any
    group: Hashable = None


@dataclass
class Phase:
    """Tasks the driver computes before the study goes on.

    ``compute(group, payloads)`` returns one JSON-able result per payload, in order; it runs on the
    executor (a thread or a Ray worker), so it must not write the store and must be picklable for
    Ray. ``name`` is the namespace of the results in the store, ``label`` the progress bar's text.
    """

    name: str
    tasks: list[Task]
    compute: Callable[[Hashable, list[Any]], list[Any]]
    batch_size: int = 1
    label: str = ""
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    results: dict[str, Any] = field(default_factory=dict)
    computed: int = 0


class RunContext:
    """What a study sees while the driver runs it: the store, the executor, progress output."""

    def __init__(self, out: Path, store: "ResultStore", executor: Any, progress: bool) -> None:
        self.out, self.store, self.executor, self.progress = out, store, executor, progress
        self.run_id: str | None = None

    def say(self, message: str) -> None:
        """One progress line, logged at INFO (when progress is on; the command prints it on stderr)."""
        if self.progress:
            from .console import bar_name

            log.info(bar_name(message))

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        """One progress line when a step that may take a while (loading a model, training a head)
        is done, with its time (its start is logged at DEBUG, shown with ``-v``)."""
        t0 = time.time()
        log.debug("%s ...", what)
        yield
        self.say(f"{what}: done in {time.time() - t0:.1f} s")


#: the file :meth:`StudyResult.save` writes the headline to
HEADLINE_FILE = "headline.json"


class StudyResult:
    """What a study returns: ``rows`` (one dict per result row), ``summary`` (rows, or a dict of
    tables) and the files :meth:`save` writes. Subclasses add the study's own fields and files."""

    study: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        """Every subclass's :meth:`save` writes all its files or none (a failure part-way, such
        as a full disk, changes no output file), from Python as from the command line."""
        super().__init_subclass__(**kw)
        save = cls.__dict__.get("save")
        if save is not None and not getattr(save, "_all_or_nothing", False):
            @wraps(save)
            def saved(self: "StudyResult", out: str | Path, *a: Any, **k: Any) -> list[Path]:
                from .files import all_or_nothing

                with all_or_nothing():
                    paths = save(self, out, *a, **k)
                    headline = self.headline()
                    if headline is not None:
                        from .files import write_json

                        paths = [*paths, write_json(Path(out) / HEADLINE_FILE, headline.to_json())]
                    return paths

            saved._all_or_nothing = True  # type: ignore[attr-defined]
            cls.save = saved  # type: ignore[method-assign]

    def __init__(self, rows: Sequence[dict[str, Any]], summary: Sequence[dict[str, Any]] | dict[str, Any] = (),
                 run_id: str | None = None) -> None:
        self.rows = list(rows)
        self.summary: Any = dict(summary) if isinstance(summary, dict) else list(summary)
        self.run_id = run_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.rows)} rows, run {self.run_id})"

    #: the numbers of examples the study used, by split (set by studies whose rows carry no ``n``)
    split_sizes: dict[str, int] | None = None

    def sizes(self) -> str:
        """One line naming the number of examples the numbers were computed on: the splits'
        sizes, else the rows' ``n`` (``n = 500``, or a range when rows differ)."""
        if self.split_sizes:
            return "computed on " + ", ".join(f"n_{k} = {v}" for k, v in self.split_sizes.items())
        ns = sorted({int(r["n"]) for r in self.rows if isinstance(r.get("n"), (int, float))})
        if not ns:
            return ""
        return f"computed on n = {ns[0]}" if len(ns) == 1 else f"computed on n = {ns[0]} to {ns[-1]}"

    def console(self) -> str:
        """What the command prints: the console table and the number of examples it was computed
        on (:meth:`sizes`); a study may add lines of its own."""
        table = getattr(self, "table", None)
        lines = [table()] if callable(table) else []
        sizes = self.sizes()
        return "\n".join(lines + ([sizes] if sizes else []))

    def exit_code(self) -> int:
        """The exit status of the study's command when it ran (0; a study whose result can fail a
        check, such as ``compare``'s, says 1 then)."""
        return 0

    def headline(self) -> "Headline | None":
        """The estimates a reader looks at first, each with its interval and n, and a sentence on
        how to read them (:class:`~perturblab.core.headline.Headline`); :meth:`save` writes it
        as ``headline.json`` and the report opens the study's section with it. None for a
        result that has none."""
        return None

    def outcomes(self) -> dict[tuple[str, str], dict[str, float]]:
        """(subject, estimate key) -> example id -> the example's term, for the headline
        estimates that are means of per-example terms; a history of releases compares two
        releases paired on the examples both hold (:mod:`perturblab.history`). Empty for a result
        that keeps none (its estimates are then compared unpaired)."""
        return {}

    def to_pandas(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame (list and dict values kept as Python objects)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def save(self, out: str | Path) -> list[Path]:  # pragma: no cover - overridden
        """Write the study's output files into ``out``; returns their paths."""
        raise NotImplementedError


class Study(ABC):
    """Base class of the studies (see the module docstring). The class docstring of a registered
    study is the docstring of its Python function (the "Options" section is added to it)."""

    #: the name its runs are stored under (part of the run id)
    name: ClassVar[str] = ""
    #: its command and its kind in a study config ("": not registered, as a test's own study)
    command: ClassVar[str] = ""
    #: the command's one line of help
    help: ClassVar[str] = ""
    #: its options: one schema for the command, a config entry and the Python function
    Args: ClassVar["type[StudyArgs]"]
    #: what it returns (the Python function's return annotation)
    Result: ClassVar[type["StudyResult"]]
    #: its part in ``perturblab compare`` (:class:`~perturblab.studies.part.Part`; None: none)
    part: ClassVar[Any] = None
    #: options (beside ``out``) that run it in seconds on the packaged models: the conformance
    #: suite (:func:`perturblab.testing.check_study`) runs every study with them
    example: ClassVar[Mapping[str, Any]] = {}
    #: defaults of its command that differ from the options' (``demo``'s)
    defaults: ClassVar[Mapping[str, Any]] = {}
    #: whether it may be an entry of a study config
    config: ClassVar[bool] = True
    #: the name of its Python function, ``perturblab.<function>`` (default: the command's, ``-`` as ``_``)
    function: ClassVar[str] = ""

    @classmethod
    def function_name(cls) -> str:
        """The name of its Python function (:attr:`function`, else its command's)."""
        return cls.function or cls.command.replace("-", "_")

    @classmethod
    def of(cls, args: Any, inputs: Any) -> "Study":
        """The study to run for the checked options ``args`` and the call's ready objects
        ``inputs`` (:class:`~.boundary.Inputs`; default: ``cls(args, inputs)``; a study whose constructor takes them apart
        says how)."""
        return cls(args, inputs)  # type: ignore[call-arg]

    @classmethod
    def call(cls, args: Any, inputs: Any) -> "StudyResult":
        """Run the study for ``args`` and ``inputs`` in ``inputs.out`` (:meth:`Inputs.run`); a
        study that runs other studies (``compare``) or records its result somewhere says how."""
        return inputs.run(cls.of(args, inputs), args)

    def check(self) -> None:
        """Refuse input that cannot run (a sample larger than the data, …) before anything costly
        or lasting happens: the driver calls it before it takes the output directory, creates the
        results store or loads a model (default: nothing). It may read the data; it loads no
        model and writes nothing."""

    def prepare(self, ctx: RunContext) -> None:
        """Load data and models before the run id is computed (default: nothing)."""

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Everything the run depends on (after :meth:`prepare`): options, model fingerprints,
        fingerprints of the examples used."""

    @abstractmethod
    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        """Yield the phases in order; each one's :attr:`Phase.results` is filled when the
        generator resumes."""

    @abstractmethod
    def finish(self, ctx: RunContext) -> StudyResult:
        """The study's result from the finished phases."""
