"""What a Python script run from the shell does to files, read from its text (nothing is run).

Agents edit files with scripts as often as with edit tools: ``python -c "…"``, ``python3 - <<'EOF'
… EOF``, or a script written with a heredoc and run in the same command. Such a script is parsed
(:mod:`ast`, never executed) and read for:

* the files it writes: ``open(P, "w" | "a" | "r+" …)``, ``Path(P).write_text(…)`` /
  ``.write_bytes(…)`` — ``P`` a string literal, or a name bound once to one;
* the replacements it makes: ``.replace(OLD, NEW)``, ``re.sub(PATTERN, NEW, …)`` with literal
  arguments — the old and new text as written;
* what it writes whole: ``.write(LITERAL)`` / ``.write_text(LITERAL)``;
* the lines it puts into a list of the file's lines: ``LINES.insert(I, LITERAL)`` (a line
  added) and ``LINES[I] = LITERAL`` (the line at ``I`` replaced — the old text is not in the
  script, so it is named by its place: ``LINES[i+1] (as it was)``), as a script that rewrites a
  file line by line does; a line it overwrites by mistake shows as one replaced.

:func:`script_edits` gives ``(path, how, old, new)`` per replacement (the new text ``""`` when a
replacement deletes), or one ``(path, how, None, "")`` for a file written without a readable
change: the file is named as changed, and nothing is made up about how. A script that does not
parse (a shell variable inside it, a syntax error) yields nothing.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator

#: ``python``, ``python3``, ``python3.11``, ``/usr/bin/python3``: the interpreters recognised.
_PYTHON = r"(?:^|[\s;&|(])(?:\S*/)?python(?:3(?:\.\d+)?)?"
_INLINE = re.compile(_PYTHON + r"((?:\s+-[A-Za-z]+)*?)\s+-c\s+")
_STDIN_HEREDOC = re.compile(
    _PYTHON + r"(?:\s+-[A-Za-z]+)*(?:\s+-)?\s*<<-?\s*(['\"]?)(\w+)\1[^\n]*\n(.*?)^\s*\2\s*$",
    re.DOTALL | re.MULTILINE,
)
_FILE_HEREDOC = re.compile(
    r"(?:cat|tee)[^\n<>|]*?>{1,2}\s*['\"]?([^\s'\";&|]+\.py)['\"]?\s*<<-?\s*(['\"]?)(\w+)\2[^\n]*\n(.*?)^\s*\3\s*$",
    re.DOTALL | re.MULTILINE,
)
_WRITE_MODES = re.compile(r"[wax+]")
#: The most a script's text is parsed: a larger one is not an edit script.
MAX_SCRIPT_CHARS = 100_000


def python_scripts(command: str) -> Iterator[str]:
    """The Python scripts a shell command runs, as text: ``python -c SCRIPT``, a script on
    standard input by heredoc, a ``.py`` file written by heredoc and run in the same command."""
    if "python" not in command:
        return
    for match in _INLINE.finditer(command):
        script = _first_shell_word(command[match.end() :])
        if script:
            yield script
    for match in _STDIN_HEREDOC.finditer(command):
        yield match.group(3)
    for match in _FILE_HEREDOC.finditer(command):
        name = match.group(1).rsplit("/", 1)[-1]
        if re.search(_PYTHON + r"(?:\s+-[A-Za-z]+)*\s+\S*" + re.escape(name), command[match.end() :]):
            yield match.group(4)


def _first_shell_word(text: str) -> str:
    """The first word of ``text`` as the shell reads it (quotes removed), ``""`` if unreadable."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return lexer.get_token() or ""
    except ValueError:
        return ""


def script_edits(script: str) -> Iterator[tuple[str, str, str | None, str]]:
    """``(path, how, old or None, new)`` for each change ``script`` makes (module docstring)."""
    if len(script) > MAX_SCRIPT_CHARS or not ("open" in script or "write_" in script):
        return
    try:
        tree = ast.parse(script)
    except (SyntaxError, ValueError):
        return
    names: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            key = node.targets[0].id
            value = _literal(node.value, {})
            # A name bound twice (or to something else) is not known.
            names[key] = value if key not in names else None
    written: list[str] = []
    replacements: list[tuple[str, str, str]] = []
    contents: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and node.args:
            path = _literal(node.args[0], names)
            mode = _mode(node)
            if path and mode and _WRITE_MODES.search(mode) and path not in written:
                written.append(path)
        elif isinstance(func, ast.Attribute):
            if func.attr in ("write_text", "write_bytes") and isinstance(func.value, ast.Call):
                inner = func.value
                if inner.args and _callee(inner) in ("Path", "pathlib.Path", "PurePath"):
                    path = _literal(inner.args[0], names)
                    if path and path not in written:
                        written.append(path)
            if func.attr in ("write", "write_text") and node.args:
                content = _literal(node.args[0], names)
                if content:
                    contents.append(content)
            if func.attr == "replace" and len(node.args) >= 2:
                old, new = _literal(node.args[0], names), _literal(node.args[1], names)
                if old and new is not None:
                    replacements.append(("python .replace", old, new))
            elif (
                func.attr in ("sub", "subn")
                and _callee(node) in ("re.sub", "re.subn")
                and len(node.args) >= 3
            ):
                old, new = _literal(node.args[0], names), _literal(node.args[1], names)
                if old and new is not None:
                    replacements.append(("python re.sub", old, new))
    replacements.extend(_line_edits(tree, names))
    if not written:
        return
    # Replacements are made in the text that is written back: with several files written, the
    # first is the one named (a script edits one file far more often than several).
    target = written[0]
    for how, old, new in replacements:
        yield target, how, old, new
    if not replacements:
        for path in written:
            yield path, "python script", None, contents[0] if len(written) == 1 and contents else ""
    else:
        for path in written[1:]:
            yield path, "python script", None, ""


def _line_edits(tree: ast.Module, names: dict[str, str | None]) -> list[tuple[str, str, str]]:
    """``(how, old, new)`` for the lines a script puts into a list of a file's lines (a name
    bound to ``.readlines()`` / ``.splitlines()`` / ``.split(…)``): ``insert(I, TEXT)`` adds a
    line (old ``""``), ``LINES[I] = TEXT`` replaces the line there (old: its place)."""
    lists = {
        node.targets[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr in ("readlines", "splitlines", "split")
    }
    found: list[tuple[tuple[int, int], tuple[str, str, str]]] = []  # by place in the script
    for node in ast.walk(tree) if lists else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "insert"
            and len(node.args) == 2
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in lists
            and (line := _literal(node.args[1], names))
        ):
            found.append(((node.lineno, node.col_offset), ("python list insert", "", line)))
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(slot := node.targets[0], ast.Subscript)
            and isinstance(slot.value, ast.Name)
            and slot.value.id in lists
            and not isinstance(slot.slice, ast.Slice)
            and (line := _literal(node.value, names))
        ):
            edit = ("python line replaced", f"{_source(slot) or 'a line'} (as it was)", line)
            found.append(((node.lineno, node.col_offset), edit))
    return [edit for _, edit in sorted(found)]


def _callee(call: ast.Call) -> str:
    return _source(call.func)


def _source(node: ast.expr) -> str:
    """``node`` as the script spells it (``""`` if it cannot be spelled)."""
    try:
        return ast.unparse(node)
    except (ValueError, TypeError):  # pragma: no cover - unparse of a parsed tree
        return ""


def _mode(call: ast.Call) -> str | None:
    if len(call.args) >= 2:
        return _literal(call.args[1], {})
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return _literal(keyword.value, {})
    return "r"


def _literal(node: ast.expr, names: dict[str, str | None]) -> str | None:
    """A string literal's value (bytes decoded), or a name's bound literal; else ``None``."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return node.value
        if isinstance(node.value, bytes):
            return node.value.decode("utf-8", "replace")
        return None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return None
