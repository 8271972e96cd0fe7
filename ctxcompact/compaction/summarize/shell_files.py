"""Which files a tool call touched, and how: structured inputs and shell commands alike.

Recognised (deterministic, no shell is run):

* tool inputs ``path``, ``file_path``, ``filename``, ``notebook_path`` — the operation from
  the tool's name (``Edit`` → edited, ``Write`` → written, ``Read`` → read…) or an editor
  tool's ``command`` (``view`` → read, ``create`` → written, else edited);
* shell commands (``command``, ``cmd``, ``script``; a list is joined; a relative path after
  ``cd DIR`` is taken under DIR, so a file written in ``/tmp/x`` stays ``/tmp/x/f``): ``sed -i`` → edited;
  ``>``/``>>`` redirects (``cat > f <<EOF`` included), ``tee [-a] f``, ``touch``, ``cp``/``mv``
  targets → written; ``rm`` → deleted; ``cat``/``head``/``tail``/``less``/``nl``/``sed -n``
  → read; any other path-like argument → mentioned;
* patches (an ``apply_patch`` input or heredoc): ``*** Update File: p`` → edited,
  ``*** Add File: p`` → written, ``*** Delete File: p`` → deleted, ``+++ b/p`` → edited.

A path-like word has a ``/`` or a known file extension; dotted names that are code, not files
(``console.log``, ``self.path``, ``django.conf``), are not paths.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from ctxcompact.compaction.summarize.scripts import python_scripts, script_edits

PATH_FIELDS = ("path", "file_path", "filename", "notebook_path")
COMMAND_FIELDS = ("command", "cmd", "script", "input", "patch")

_EXTENSIONS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|yaml|yml|cfg|ini|sh|rs|go|java|kt|c|h|cc|"
    "cpp|hpp|rb|php|html|css|scss|sql|lock|xml|csv|ipynb|swift|vue|svelte|env|conf|log|patch|diff|bak"
)
_PATH = re.compile(
    r"(?<![\w:/.$-])((?:\.{0,2}/|~/)?(?:[\w.@+-]+/)+[\w.@+-]*\.[A-Za-z]\w{0,7}"
    rf"|[\w-][\w.-]*\.(?:{_EXTENSIONS}))(?![\w/(])"
)
_BARE_PATH = re.compile(rf"^[\w-][\w.-]*\.(?:{_EXTENSIONS})$")
#: Dotted names that read like file names but are code: ``console.log``, ``self.cfg``…
_CODE_STEM_WORDS = (
    "console self this cls os sys logging logger math np pd window document process module "
    "exports django req res ctx obj args kwargs"
)
_CODE_STEMS = frozenset(_CODE_STEM_WORDS.split())
_PATCH_LINE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+)$|^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n(.*?)^\s*\2\s*$", re.DOTALL | re.MULTILINE)
_REDIRECT = re.compile(r"(?<![0-9&<>])>{1,2}\|?\s*([^\s;&|<>()]+)")
#: A redirect of a numbered stream (``2>/dev/null``, ``2>&1``, ``1>>log``, ``&>out``): not an
#: argument of the program, so never one of its files.
_FD_REDIRECT = re.compile(r"(?<![^\s])(?:\d+|&)>{1,2}&?\s*[^\s;&|<>()]*")
_SHELL_WORD = re.compile(r"[^ \t\r\n]+")  # shlex's whitespace: space, tab, CR, LF
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "wc"})
_PATCH_OPS = {"Update": "edited", "Add": "written", "Delete": "deleted"}


def is_code_name(word: str) -> bool:
    """``console.log``-like: a bare dotted name whose stem is a common code object."""
    return "/" not in word and word.split(".", 1)[0].lower() in _CODE_STEMS


def path_mentions(text: str) -> list[str]:
    """Path-like words in ``text``, in order, without duplicates or code names."""
    found: dict[str, None] = {}
    for match in _PATH.finditer(text):
        word = match.group(1).rstrip(".")
        if word and not is_code_name(word) and "://" not in text[max(match.start() - 8, 0) : match.start()]:
            found.setdefault(word, None)
    return list(found)


def file_op(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The operation a structured file tool performs on its ``path``."""
    name = tool.lower()
    command = tool_input.get("command")
    if isinstance(command, str) and ("editor" in name or "edit_tool" in name):
        return {"view": "read", "create": "written"}.get(command, "edited")
    for words, op in (
        (("edit", "replace", "patch", "insert"), "edited"),
        (("write", "create", "save"), "written"),
        (("delete", "remove"), "deleted"),
        (("read", "view", "open"), "read"),
    ):
        if any(w in name for w in words):
            return op
    return "read" if name == "cat" else tool


def command_texts(tool_input: Any) -> list[str]:
    """The shell commands or patch texts of a tool input (a raw string input counts)."""
    if isinstance(tool_input, str):
        return [tool_input]
    if not isinstance(tool_input, (dict, Mapping)):
        return []
    out: list[str] = []
    for key in COMMAND_FIELDS:
        value = tool_input.get(key)
        if value is None:  # most fields of most inputs: no type checks for them
            continue
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out.append(argv_command(value))
    return out


#: ``bash -lc SCRIPT``: an argv that only runs a script in a shell (Codex's legacy ``shell``
#: tool, ``local_shell``) is that script.
_SHELLS = frozenset({"bash", "sh", "zsh"})


def argv_command(argv: list[str]) -> str:
    """A command given as an argv list, as the shell line it runs."""
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-c", "-lc", "-l"):
        return argv[2]
    return shlex.join(argv) if len(argv) > 1 else "".join(argv)


def tool_file_ops(tool: str, tool_input: Any, *, follow_cd: bool = True) -> Iterator[tuple[str, str]]:
    """``(path, operation)`` for every file a call touches; ``mentioned`` for the rest.
    ``follow_cd=False``: shell paths as the command wrote them, not under a ``cd`` directory."""
    if isinstance(tool_input, (dict, Mapping)):
        for key in PATH_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                yield value.strip(), file_op(tool, tool_input)
                break
    for text in command_texts(tool_input):
        if len(text) <= REMEMBERED_COMMAND_CHARS:
            yield from _remembered_file_ops(text, follow_cd)
        else:
            yield from shell_file_ops(text, follow_cd=follow_cd)


#: A command this short has its file operations read once per process (:func:`shell_file_ops`
#: is a function of the text alone): a session runs the same test, build and git commands
#: again and again. Longer ones (a heredoc with a file in it) are read each time, not kept.
REMEMBERED_COMMAND_CHARS = 2_000


@lru_cache(maxsize=512)
def _remembered_file_ops(command: str, follow_cd: bool) -> tuple[tuple[str, str], ...]:
    return tuple(shell_file_ops(command, follow_cd=follow_cd))


def shell_file_ops(command: str, *, follow_cd: bool = True) -> Iterator[tuple[str, str]]:
    """``(path, operation)`` pairs for one shell command or patch (see the module docstring)."""
    known: set[str] = set()
    for match in _PATCH_LINE.finditer(command):
        if match.group(2):
            known.add(match.group(2).strip())
            yield match.group(2).strip(), _PATCH_OPS[match.group(1)]
        elif match.group(3) and match.group(3) != "/dev/null":
            known.add(match.group(3))
            yield match.group(3), "edited"
    body_free = _HEREDOC.sub("\n", command)
    cwd = ""
    mentions: list[str] = []
    for segment in _SEGMENT.split(body_free):
        moved = _cd_target(segment) if follow_cd else None
        if moved is not None:
            cwd = _under(cwd, moved) if moved else ""
            continue
        for path, op in _segment_ops(segment):
            path = _under(cwd, path)
            known.add(path)
            yield path, op
        mentions.extend(_under(cwd, p) for p in path_mentions(segment))
    for script in python_scripts(command):
        for path, _how, old, _new in script_edits(script):
            path = path_after(command, path)
            known.add(path)
            yield path, "edited" if old is not None else "written"
    for path in dict.fromkeys(mentions):
        if path not in known:
            yield path, "mentioned"


def path_after(prefix: str, path: str) -> str:
    """``path`` as a command uses it after ``prefix`` (the command up to it): under the
    directory the last ``cd`` in ``prefix`` moved to (see :func:`shell_file_ops`)."""
    cwd = ""
    for segment in _SEGMENT.split(_HEREDOC.sub("\n", prefix)):
        moved = _cd_target(segment)
        if moved is not None:
            cwd = _under(cwd, moved) if moved else ""
    return _under(cwd, path)


def _cd_target(segment: str) -> str | None:
    """The directory a ``cd`` segment moves to (``""`` for one the summary cannot follow:
    ``cd``, ``cd -``, ``cd $VAR``), ``None`` for any other segment."""
    words = segment.split()
    if not words or words[0] != "cd":
        return None
    where = words[1].strip("'\"") if len(words) > 1 else ""
    return where if where and where != "-" and not any(c in where for c in "$`~") else ""


def _under(cwd: str, path: str) -> str:
    """``path`` as written, or under ``cwd`` when a ``cd`` moved the shell and it is relative:
    a file written after ``cd /tmp/x`` is ``/tmp/x/file``, not a repository file."""
    if not cwd or path.startswith(("/", "~")):
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


def _segment_ops(segment: str) -> Iterator[tuple[str, str]]:
    for match in _REDIRECT.finditer(segment):
        target = match.group(1).strip("'\"")
        if target and not target.startswith(("/dev/", "&")) and _looks_like_file(target):
            yield target, "written"
    words = _shell_words(_FD_REDIRECT.sub(" ", _REDIRECT.sub(" ", segment)))
    if not words:
        return
    program = words[0].rsplit("/", 1)[-1]
    args = [w for w in words[1:] if not w.startswith("-")]
    files = [a for a in args if _looks_like_file(a)]
    if program == "sed":
        if not any(w in ("-e", "-f") or w.startswith(("--expression", "--file")) for w in words[1:]):
            files = [a for a in args[1:] if _looks_like_file(a)]  # the first is the script
        op = "edited" if any(w.startswith("-i") or w == "--in-place" for w in words[1:]) else "read"
        yield from ((f, op) for f in files)
    elif program in _READERS:
        yield from ((f, "read") for f in files)
    elif program == "tee" or program == "touch":
        yield from ((f, "written") for f in files)
    elif program in ("cp", "mv") and len(files) >= 2:
        yield files[-1], "written"
        if program == "mv":
            yield from ((f, "deleted") for f in files[:-1])
    elif program == "rm":
        yield from ((f, "deleted") for f in files)


def _shell_words(text: str) -> list[str]:
    """``shlex.split(text)`` (its whitespace split where it cannot parse). Without quotes or
    backslashes shlex only splits at spaces, tabs and line ends: that split is done directly,
    as shlex is slow (a tenth of an extractive summary's time before)."""
    if "'" in text or '"' in text or "\\" in text:
        try:
            return shlex.split(text, comments=False)
        except ValueError:
            return text.split()
    return _SHELL_WORD.findall(text)


def _looks_like_file(word: str) -> bool:
    if not word or "://" in word or any(c in word for c in "$*?{}`=()"):
        return False
    if "/" in word:
        return bool(re.search(r"[\w-]", word.rsplit("/", 1)[-1])) and not word.endswith("/")
    return bool(_BARE_PATH.match(word)) and not is_code_name(word)
