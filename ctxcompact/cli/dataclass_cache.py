"""The dataclasses' methods compiled once per cache, not at every start of a command.

Python 3.11's :mod:`dataclasses` writes each method it generates (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, a frozen class's ``__setattr__``…) as source text and compiles it, at
every start: a small ``count`` creates ~50 dataclasses (~270 methods, ~20 ms of compiling),
``compact`` ~100 (~45 ms). The command line installs a cache that keeps the code compiled from
each text in one ``marshal`` file in the cache directory (:func:`ctxcompact.caches.cache_dir`),
keyed by the exact text (and the file by the interpreter's version); a text it does not hold is
compiled as before, and the file is rewritten at exit. It changes nothing but the time: the
code is what compiling the same text gives. A file that is missing, unreadable or not what was
written, or that another user owns or may write (:func:`ctxcompact.caches.check_own_cache_file`),
is ignored. The library leaves its host's :mod:`dataclasses` alone: only the command line
installs it.

It also imports :mod:`dataclasses` without the :mod:`inspect` module that dataclasses imports
at its top (with ``ast``, ``dis``, ``tokenize``…: ~8 ms, a tenth of a small ``count``) and uses
only to write the docstring of a class that has none: dataclasses gets a stand-in that imports
the real module the first time it is used, so such a class gets the same docstring. This
module imports no dataclass itself, so every dataclass a command makes goes through the cache.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import sys
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

#: The file, in the cache directory: marshal's format and the code it holds are the interpreter's.
DATACLASS_CACHE = f"dataclass-methods-v2-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"


class CompiledMethods:
    """The code compiled from each method text :mod:`dataclasses` generates, read from and
    saved to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: text -> its code, marshaled: a run unmarshals only the texts it meets.
        self.codes: dict[str, bytes] = {}
        self.added = 0
        from ctxcompact.caches import read_own_cache_file

        try:
            loaded = marshal.loads(read_own_cache_file(path))
            if isinstance(loaded, dict):
                self.codes = loaded
        except (OSError, EOFError, ValueError, TypeError):
            pass

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """``exec`` as :mod:`dataclasses` calls it, the text's code taken from the cache."""
        if isinstance(source, str):
            source = self._code(source)
        if globals is None:  # exec's own default: the calling module's, dataclasses'
            globals = vars(sys.modules["dataclasses"])
        builtins.exec(source, globals, locals)

    def _code(self, text: str) -> CodeType:
        blob = self.codes.get(text)
        if isinstance(blob, bytes):
            try:
                code = marshal.loads(blob)
                if isinstance(code, CodeType):
                    return code
            except (EOFError, ValueError, TypeError):
                pass
        # As exec() compiles a text: no __future__ flags (dataclasses has none).
        code = compile(text, "<string>", "exec", dont_inherit=True)
        self.codes[text] = marshal.dumps(code)
        self.added += 1
        return code

    def save(self) -> None:
        """Write the file again when this run compiled a text it did not hold."""
        if not self.added:
            return
        from ctxcompact.transcripts.fileio import replace_cache_file

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_cache_file(self.path, marshal.dumps(self.codes))
        except (OSError, ValueError):
            pass


def install_dataclass_cache(environ: Mapping[str, str] | None = None) -> CompiledMethods | None:
    """Have :mod:`dataclasses` compile each method text once per cache (see the module); None
    when it is already installed or this interpreter's dataclasses builds no method from text."""
    dataclasses = _import_dataclasses()
    if "exec" in vars(dataclasses) or not hasattr(dataclasses, "_create_fn"):
        return None
    from ctxcompact.caches import cache_dir

    methods = CompiledMethods(cache_dir(environ) / DATACLASS_CACHE)
    dataclasses.exec = methods.exec  # type: ignore[attr-defined]  # its _create_fn's name for exec
    atexit.register(methods.save)
    return methods


class _Inspect(ModuleType):
    """What :mod:`dataclasses` holds as ``inspect`` until it uses it: the real module is
    imported then, put in dataclasses' place and asked."""

    def __getattr__(self, name: str) -> Any:
        import inspect  # the real one: the stand-in is in sys.modules only during the import

        dataclasses = sys.modules.get("dataclasses")
        if dataclasses is not None and vars(dataclasses).get("inspect") is self:
            dataclasses.inspect = inspect  # type: ignore[attr-defined]
        return getattr(inspect, name)


def _import_dataclasses() -> ModuleType:
    """:mod:`dataclasses`, imported (if it is not yet) with a stand-in for :mod:`inspect`
    (see the module), unless something has already loaded inspect."""
    if "dataclasses" not in sys.modules and "inspect" not in sys.modules:
        stand_in = _Inspect("inspect")
        sys.modules["inspect"] = stand_in
        try:
            import dataclasses
        finally:
            if sys.modules.get("inspect") is stand_in:
                del sys.modules["inspect"]
    import dataclasses

    return dataclasses
