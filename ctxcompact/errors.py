"""One exception family for everything a user can get wrong or a run cannot do.

Each error carries the process exit code the CLI maps it to and a message written for the
person at the terminal. Bugs are *not* wrapped in these: an unexpected exception keeps its
traceback so it gets reported and fixed instead of being shown as "bad input".
"""

from __future__ import annotations

from collections.abc import Callable

from ctxcompact.status import ExitStatus


class CtxcompactError(Exception):
    """Base class: ``exit_code`` is what the CLI exits with, ``str(err)`` what it prints."""

    exit_code: ExitStatus = ExitStatus.WORK_FAILED


class InputError(CtxcompactError):
    """The input (a file, stdin, an option value) is not something we can work with: exit 2."""

    exit_code = ExitStatus.BAD_INPUT


class UsageError(InputError):
    """Options that contradict each other or are out of range: exit 2."""


class WorkFailedError(CtxcompactError):
    """The requested work could not be done (summarizer failed under --on-failure error,
    an archive or offload file could not be written): exit 3. The input is left unchanged."""

    exit_code = ExitStatus.WORK_FAILED


class OptionError(UsageError):
    """An option's value is out of range or contradicts another's. The message names each
    option by its library name (``keep must not be negative.``); the command line names it by
    its flag instead (``--keep must not be negative.``, :meth:`naming`).

    ``template`` holds a ``{name}`` field for each option in ``options`` and may hold fields
    for ``values`` (a user's text is substituted, never parsed as a template).
    """

    def __init__(self, template: str, *options: str, **values: object) -> None:
        self.template = template
        self.options = options
        self.values = values
        super().__init__(self.naming(lambda name: name))

    @classmethod
    def about(cls, option: str, problem: str, **values: object) -> OptionError:
        """``{option} {problem}``: the common one-option message (``keep must not be negative.``)."""
        return cls("{" + option + "} " + problem, option, **values)

    def within(self, place: str) -> OptionError:
        """The same error, said of ``place`` (``t.json: keep must not be negative.``)."""
        escaped = place.replace("{", "{{").replace("}", "}}")
        return OptionError(f"{escaped}: {self.template}", *self.options, **self.values)

    def naming(self, name: Callable[[str], str]) -> str:
        """The message with each option called ``name(option)``."""
        return self.template.format(**{o: name(o) for o in self.options}, **self.values)
