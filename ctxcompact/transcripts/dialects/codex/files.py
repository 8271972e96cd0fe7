"""The files a Codex session read or wrote, from its tool calls (for ``restore-files``).

Codex has no ``read_file`` tool: it reads through shell commands and writes with
``apply_patch``. Recognised, in a shell call's command (``exec_command`` ``cmd``, ``shell`` /
``shell_command`` / ``local_shell`` ``command`` — a ``bash -lc SCRIPT`` argv counts as its
script), in every part of ``&&`` / ``||`` / ``;`` / ``|`` chains:

* ``cat FILE…``, ``nl [-ba] FILE…``, ``head [-n N] FILE…``, ``tail [-n N] FILE…``,
  ``sed -n 'A,Bp' FILE…`` (a sed without ``-i``), ``less``/``more FILE``;
* ``rg [OPTIONS] PATTERN PATH…`` / ``grep …`` — only paths whose last part has an extension
  (a search of a directory restores nothing);
* ``apply_patch`` (the custom tool's ``input``, or a heredoc in a shell command): the files of
  ``*** Add File:``, ``*** Update File:`` and ``*** Move to:`` lines;
* ``cd DIR && …`` and the call's ``workdir`` make relative paths relative to that directory.

Paths come back as written (joined to ``workdir``/``cd``), in the order they appear; the
caller makes them relative to the session's ``cwd`` (:func:`relative_to`).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.ir import Block

_READERS = frozenset({"cat", "nl", "head", "tail", "less", "more", "bat"})
_SEARCHERS = frozenset({"rg", "grep"})
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&"})
_PUNCTUATION = frozenset("();<>|&")
_PATCH_LINE = re.compile(r"^\*\*\* (?:Add File|Update File|Move to): (.+?)\s*$", re.MULTILINE)
#: Options of the readers that take a value (``head -n 20``, ``rg -g '*.py'``).
_VALUE_OPTIONS = frozenset({"-n", "-c", "-e", "-f", "-g", "-t", "-m", "-A", "-B", "-C", "--glob", "--type"})


def touched_files(block: Block) -> list[str]:
    """The files a ``tool_use`` block of a Codex session read or patched, in order."""
    name = str(block.get("name") or "")
    tool_input = block.get("input")
    if not isinstance(tool_input, Mapping):
        return []
    if name == "apply_patch":
        return patch_files(str(tool_input.get("input") or tool_input.get("patch") or ""))
    script = _script(tool_input)
    if script is None:
        return []
    workdir = tool_input.get("workdir") or tool_input.get("working_directory")
    return command_files(script, workdir if isinstance(workdir, str) else None)


def _script(tool_input: Mapping[str, Any]) -> str | None:
    for key in ("cmd", "command"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-lc", "-c", "-l"):
                return str(value[-1])
            return shlex.join(value)
    return None


def patch_files(patch: str) -> list[str]:
    """The files an ``apply_patch`` patch adds, updates or moves to."""
    return [m.group(1) for m in _PATCH_LINE.finditer(patch)]


def command_files(script: str, workdir: str | None = None) -> list[str]:
    """The files a shell script reads with the recognised commands (module docstring)."""
    if "*** Begin Patch" in script:
        return [_join(workdir, p) for p in patch_files(script)]
    found: list[str] = []
    base = workdir
    for argv in _commands(script):
        while argv and "=" in argv[0] and not argv[0].startswith("-"):
            argv = argv[1:]  # VAR=value prefixes
        if not argv:
            continue
        if argv[0] == "cd" and len(argv) == 2:
            base = _join(base, argv[1])
            continue
        found.extend(_join(base, p) for p in _read_args(argv))
    return found


def _commands(script: str) -> list[list[str]]:
    """The simple commands of ``script``: split at newlines and ``&&`` ``||`` ``;`` ``|``
    ``&``, redirections and their targets dropped. A line shlex cannot read is skipped."""
    commands: list[list[str]] = []
    for text in script.splitlines():
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            continue
        argv: list[str] = []
        skip = False
        for k, token in enumerate(tokens):
            if skip:
                skip = False
            elif token in _OPERATORS:
                commands.append(argv)
                argv = []
            elif token and set(token) <= _PUNCTUATION:
                skip = True  # a redirection: its target is not read by the command
            elif token.isdigit() and k + 1 < len(tokens) and set(tokens[k + 1]) <= _PUNCTUATION:
                continue  # the "2" of "2>&1"
            else:
                argv.append(token)
        commands.append(argv)
    return [c for c in commands if c]


def _read_args(argv: Sequence[str]) -> list[str]:
    command = posixpath.basename(argv[0])
    args = list(argv[1:])
    if command == "sed":
        if "-i" in args or not any(a == "-n" or a.startswith("-n") for a in args):
            return []
        has_script_option = any(a in ("-e", "-f") for a in args)
        positional = _positional([a for a in args if a != "-n"])
        return positional if has_script_option else positional[1:]  # else the first is the script
    if command in _READERS:
        return [a for a in _positional(args) if not a.startswith("+")]
    if command in _SEARCHERS:
        positional = _positional(args)
        return [p for p in positional[1:] if _looks_like_file(p)]
    return []


def _positional(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in _VALUE_OPTIONS:
            skip = True
            continue
        if arg.startswith("-") and arg != "-":
            continue
        out.append(arg)
    return out


def _looks_like_file(path: str) -> bool:
    name = posixpath.basename(path.rstrip("/"))
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem and ext) and not any(c in path for c in "*?[")


def _join(base: str | None, path: str) -> str:
    path = posixpath.expanduser(path) if path.startswith("~") else path
    if base is None or posixpath.isabs(path):
        return posixpath.normpath(path)
    return posixpath.normpath(posixpath.join(base, path))


def relative_to(path: str, cwd: str | None) -> str:
    """``path`` relative to the session's ``cwd`` when it lies inside it, else unchanged: so a
    session recorded on another machine restores from the checkout ``--work-dir`` names."""
    if cwd and posixpath.isabs(path):
        root = posixpath.normpath(cwd)
        if path == root:
            return "."
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return path
