"""Generate a large, deterministic Anthropic-dialect agent transcript for benchmarks.

The transcript imitates a long coding-agent session: a leading system message, then many
rounds of user request -> assistant text + tool_use (read_file / run_command / edit_file /
list_dir) -> user tool_result, with an occasional thinking block.  Tool output is built from
a word list and code/log templates so the text is varied (BPE tokenizer speed depends on
variety), and every tool_use is answered by a tool_result in the next user message.  The
transcript always ends with an assistant text message.

Sizes are estimated as (serialized JSON characters) / 4, which is close enough to cl100k
for benchmarking; the default target of 200k tokens produces a file of roughly 800 KB
(measured with cl100k: ~185k tokens of message text, ~227k tokens for the raw JSON file,
whose escapes and keys are denser than the text itself).

Usage:
    python bench/gen_transcript.py OUT.json [--tokens 200000] [--seed 0]

Stdlib only; the same (target_tokens, seed) always produces the same transcript.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
from typing import Any

CHARS_PER_TOKEN = 4


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words(
    """
account active adapter address agent alert archive array asset audit backend backoff balance
batch bucket buffer build bundle cache callback channel checkpoint chunk client cluster column
commit config connection consumer context counter cursor customer dashboard dataset deadline
decoder default delivery delta deploy digest dispatch domain draft driver encoder endpoint entry
event export factory feature fetch field filter flag format frame gateway handler header health
history hook index input invoice item job key label latency layer ledger limit listener loader
lock log manifest mapper marker merge message metric migration mode model module monitor
mutation node notice offset order owner package page parser partition patch payload peer pending
pipeline plan policy pool port price priority probe process producer profile prompt provider
proxy queue quota range rate reader record region registry release replica report request
resource response result retry revision role route rule runner sample schema scope secret
segment sender session shard signal snapshot source span state status storage stream summary
supplier sync table tag target task template tenant thread ticket timeout token topic trace
tracker transfer trigger upload usage user validator value vendor version view volume webhook
window worker writer zone
"""
)

VERBS = _words(
    """
apply build check clean collect compute create decode delete dispatch emit encode ensure
evaluate expire fetch filter flush format handle load lookup merge normalize parse persist
prepare process publish query read refresh register release render reset resolve retry rotate
save schedule select serialize split start stop store submit sync track transform trim update
upsert validate write
"""
)

ADJECTIVES = _words(
    """
active cached current default empty expired failed final initial internal last latest local
missing next open partial pending primary raw remote stale total valid
"""
)

TYPES = [
    "int",
    "str",
    "float",
    "bool",
    "bytes",
    "dict[str, Any]",
    "list[str]",
    "Decimal",
    "datetime",
    "Path",
    "Optional[str]",
    "Sequence[int]",
    "Mapping[str, str]",
]

EXCEPTIONS = [
    "ValueError",
    "KeyError",
    "TypeError",
    "RuntimeError",
    "TimeoutError",
    "PermissionError",
    "FileNotFoundError",
    "ConnectionError",
    "AssertionError",
    "IndexError",
    "AttributeError",
]

PAST = _words(
    """
processed synced flushed loaded stored fetched dispatched published rotated merged indexed
exported imported cleaned validated scheduled retried expired rendered resolved
"""
)

THREADS = ["main", "worker-1", "worker-2", "worker-3", "scheduler", "http"]

STATUS_CODES = [200, 200, 201, 204, 400, 404, 409, 500, 503]

COMMIT_TOPICS = ["handling", "support", "tests", "cache", "config", "docs"]

LOG_LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR"]

HTTP = ["GET", "GET", "POST", "PUT", "DELETE", "PATCH"]

STDLIB_IMPORTS = [
    "import json",
    "import logging",
    "import os",
    "import re",
    "import time",
    "import hashlib",
    "import itertools",
    "from pathlib import Path",
    "from dataclasses import dataclass, field",
    "from datetime import datetime, timedelta",
    "from decimal import Decimal",
    "from collections import defaultdict, deque",
    "from functools import lru_cache",
    "from typing import Any, Optional, Sequence, Mapping",
    "from contextlib import contextmanager",
    "import threading",
    "import asyncio",
]

USER_TASKS = [
    "The {a} {n} endpoint returns a 500 when the {n2} list is empty. Can you find out why and fix it?",
    "CI is failing on `{test}` since yesterday's merge. Please investigate and get it green again.",
    (
        "We need `{func}` in `{path}` to support a `{arg}` argument (default {default}). Keep"
        " backwards compatibility."
    ),
    "Can you refactor `{path}` so `{func}` doesn't do the {n} lookup twice? It shows up in the profiler.",
    "Users report that {n} {n2}s sometimes get processed twice after a worker restart. Look into `{path}`.",
    "Please add tests for the {a} {n} path in `{func}`; coverage says it's never exercised.",
    (
        "The nightly job logs a lot of `{exc}` from `{func}`. Figure out whether it's a real "
        "bug or just noise."
    ),
    "Rename `{func}` to `{func2}` everywhere, but keep a deprecated alias for one release.",
    (
        "`{path}` has grown too big. Split the {n} helpers out into their own module without "
        "changing behaviour."
    ),
    (
        "The {n} timeout is hard-coded to {num} seconds in `{path}`. Make it configurable via"
        " the settings file."
    ),
    (
        "Something is off with the {n2} totals in the weekly report: they're about {pct}% too"
        " high. Can you check the aggregation?"
    ),
    "Before the release, can you run the full test suite and the linters and fix whatever comes up?",
]

USER_FOLLOWUPS = [
    "Looks good. Don't change the public API though, other services import `{func}` directly.",
    "Thanks. Can you also add a regression test for that?",
    "OK, but keep the change minimal please, we're close to a release.",
    "Nice. Please also update the docstring and the changelog entry.",
    "Can you double-check that `{func2}` isn't affected by the same problem?",
    "Go with the second option. And run the whole suite afterwards, not just that file.",
]

ASSISTANT_OPENERS = [
    "I'll start by looking at `{path}` to see how `{func}` handles the {n} case.",
    "Let me reproduce the problem first.",
    "Let me check where `{func}` is called from.",
    "I'll read the relevant module and its tests before changing anything.",
    "First I want to see the current test output.",
    "Let me look at the {n} handling in `{path}`.",
    "I'll check the configuration to see which {n} settings are in effect.",
    "Let me search for other uses of `{func}` so the change doesn't break a caller.",
]

ASSISTANT_MIDDLES = [
    "The failure comes from `{func}`: it assumes the {n} is always {a}, which isn't true after a retry.",
    (
        "`{func}` builds the {n} key from the {n2} id only, so two tenants can collide. Let "
        "me look at the caller."
    ),
    "That's the only call site. Now I'll make the edit.",
    "The traceback points at line {num} of `{path}`. Reading the surrounding code.",
    "Good, the tests pass locally. Let me also run the linters.",
    "The {n} cache is never invalidated when the {n2} changes; that explains the stale values.",
    "I see the problem: the loop over {n2}s returns early on the first {a} item.",
    "That edit fixed the first failure, but `{test}` still fails. Checking the fixture.",
]

ASSISTANT_CLOSERS = [
    (
        "Done. `{func}` now handles the {a} {n} case, and I added a regression test "
        "(`{test}`). The full suite passes ({num} passed)."
    ),
    (
        "Fixed. The root cause was in `{path}`: `{func}` returned before flushing the {n2} "
        "buffer. All {num} tests pass and ruff/mypy are clean."
    ),
    "All green now. Summary: updated `{func}` in `{path}`, added `{test}`, no public API changes.",
    (
        "I've made the change in `{path}` and kept `{func}`'s signature unchanged. Tests: "
        "{num} passed, 0 failed."
    ),
    (
        "That's everything: the {n} timeout is configurable, the default is unchanged, and "
        "the new setting is documented."
    ),
]

THOUGHTS = [
    (
        "The user wants {goal}. Before editing I need to know who calls `{func}`; if it's "
        "part of the public API I must keep the signature."
    ),
    (
        "The traceback shows `{exc}` raised inside `{func}`. Either the input is wrong or the"
        " {n} lookup is missing a default. Check the caller first."
    ),
    (
        "Two options: patch `{func}` directly, or fix the {n2} data at the source in "
        "`{path}`. The first is smaller and matches the request for a minimal change."
    ),
    (
        "The test expects {num} but gets {num2}. Difference is small, probably rounding or an"
        " off-by-one in the {n} window."
    ),
    "I should re-run the whole suite, not just `{test}`, since `{func}` is used by the {n2} module too.",
]


class _Gen:
    def __init__(self, seed: int, *, errors: bool = False) -> None:
        self.rng = random.Random(seed)
        self.errors = errors
        self.ids: set[str] = set()
        self.files: dict[str, str] = {}
        self.funcs: list[tuple[str, str]] = []  # (path, function name)
        self.tests: list[str] = []

    # -- small helpers ------------------------------------------------------
    def pick(self, seq: list[Any]) -> Any:
        return self.rng.choice(seq)

    def ident(self, parts: int = 2) -> str:
        words = [self.pick(WORDS) for _ in range(parts)]
        return "_".join(words)

    def func_name(self) -> str:
        return f"{self.pick(VERBS)}_{self.ident(self.rng.randint(1, 2))}"

    def class_name(self) -> str:
        return "".join(w.capitalize() for w in (self.pick(WORDS), self.pick(WORDS)))

    def hexid(self, n: int = 8) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def tool_id(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        while True:
            tid = "toolu_01" + "".join(self.rng.choice(alphabet) for _ in range(22))
            if tid not in self.ids:
                self.ids.add(tid)
                return tid

    def signature(self) -> str:
        raw = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(120, 300)))
        return "EqQBCkYIBxgCKkA" + base64.b64encode(raw).decode()

    def sentence(self, lo: int = 6, hi: int = 16) -> str:
        words = [self.pick(WORDS + VERBS + ADJECTIVES) for _ in range(self.rng.randint(lo, hi))]
        return " ".join(words).capitalize() + "."

    def fill(self, template: str) -> str:
        path, func = self.pick(self.funcs) if self.funcs else ("src/app/core.py", "run")
        _, func2 = self.pick(self.funcs) if self.funcs else ("", "start")
        values = {
            "a": self.pick(ADJECTIVES),
            "n": self.pick(WORDS),
            "n2": self.pick(WORDS),
            "path": path,
            "func": func,
            "func2": func2,
            "test": self.pick(self.tests) if self.tests else "tests/test_core.py::test_run",
            "arg": self.ident(1),
            "default": self.pick(["None", "False", "0", "30", '"auto"']),
            "exc": self.pick(EXCEPTIONS),
            "num": self.rng.randint(2, 480),
            "num2": self.rng.randint(2, 480),
            "pct": self.rng.randint(2, 40),
            "goal": self.pick(
                [
                    "a minimal fix",
                    "a refactor without behaviour changes",
                    "a new option",
                    "the failing tests fixed",
                    "better test coverage",
                ]
            ),
        }
        return template.format(**values)

    # -- code templates -----------------------------------------------------
    def expr(self) -> str:
        r = self.rng.random()
        if r < 0.25:
            return f"{self.ident(1)}.{self.pick(VERBS)}({self.ident(1)})"
        if r < 0.45:
            return f"{self.ident(1)} * {self.rng.randint(2, 1000)} + {self.ident(1)}"
        if r < 0.6:
            return f'{self.ident(1)}.get("{self.ident(1)}", {self.pick(["None", "0", "[]", "{}"])})'
        if r < 0.75:
            return f"[{self.ident(1)} for {self.ident(1)} in {self.ident(2)} if {self.ident(1)}]"
        if r < 0.88:
            return f'f"{self.pick(WORDS)}-{{{self.ident(1)}}}-{self.hexid(4)}"'
        fn, arg = f"{self.pick(VERBS)}_{self.ident(1)}", self.ident(1)
        return f"{fn}({arg}, timeout={self.rng.randint(1, 120)})"

    def statement(self, indent: str, depth: int = 0) -> list[str]:
        r = self.rng.random()
        if r < 0.35 or depth > 1:
            return [f"{indent}{self.ident(self.rng.randint(1, 2))} = {self.expr()}"]
        if r < 0.5:
            return [
                f"{indent}if {self.ident(1)} is None:",
                f"{indent}    raise {self.pick(EXCEPTIONS)}("
                f'f"{self.pick(ADJECTIVES)} {self.pick(WORDS)}: {{{self.ident(1)}!r}}")',
            ]
        if r < 0.65:
            var = self.pick(WORDS)
            body = [f"{indent}for {var} in {self.ident(2)}:"]
            for _ in range(self.rng.randint(1, 3)):
                body += self.statement(indent + "    ", depth + 1)
            return body
        if r < 0.78:
            return [
                f"{indent}logger.{self.pick(['debug', 'info', 'warning'])}("
                f'"{self.sentence(3, 7)[:-1]} %s", {self.ident(1)})'
            ]
        if r < 0.9:
            return [
                f"{indent}try:",
                f"{indent}    {self.ident(1)} = {self.expr()}",
                f"{indent}except {self.pick(EXCEPTIONS)} as exc:",
                f"{indent}    raise {self.class_name()}Error({self.ident(1)}) from exc",
            ]
        return [f"{indent}{self.ident(1)}[{self.ident(1)}] += {self.rng.randint(1, 64)}"]

    def function(self, indent: str = "") -> tuple[str, list[str]]:
        name = self.func_name()
        args = [f"{self.ident(1)}: {self.pick(TYPES)}" for _ in range(self.rng.randint(0, 4))]
        if indent:
            args.insert(0, "self")
        lines = [
            f"{indent}def {name}({', '.join(args)}) -> {self.pick(TYPES)}:",
            f'{indent}    """{self.sentence(5, 12)}"""',
        ]
        for _ in range(self.rng.randint(2, 7)):
            lines += self.statement(indent + "    ")
        lines.append(f"{indent}    return {self.expr()}")
        return name, lines

    def klass(self) -> list[str]:
        name = self.class_name()
        lines = ["@dataclass", f"class {name}:", f'    """{self.sentence(6, 14)}"""', ""]
        defaults = ["None", "0", "field(default_factory=list)", '""']
        for _ in range(self.rng.randint(2, 6)):
            lines.append(f"    {self.ident(1)}: {self.pick(TYPES)} = {self.pick(defaults)}")
        for _ in range(self.rng.randint(1, 3)):
            _, body = self.function("    ")
            lines += ["", *body]
        return lines

    def module(self, path: str) -> str:
        lines = [
            f'"""{self.sentence(6, 14)}',
            "",
            self.sentence(10, 24),
            '"""',
            "",
            "from __future__ import annotations",
            "",
        ]
        lines += sorted(set(self.rng.sample(STDLIB_IMPORTS, self.rng.randint(2, 6))))
        lines += ["", "logger = logging.getLogger(__name__)", ""]
        for _ in range(self.rng.randint(1, 4)):
            lines.append(f"{self.ident(2).upper()} = {self.rng.randint(1, 10000)}")
        for _ in range(self.rng.randint(2, 6)):
            lines += ["", ""]
            if self.rng.random() < 0.3:
                lines += self.klass()
            else:
                name, body = self.function()
                self.funcs.append((path, name))
                lines += body
        return "\n".join(lines) + "\n"

    def test_module(self, path: str, target: str) -> str:
        mod = target.removeprefix("src/").removesuffix(".py").replace("/", ".")
        names = [f for p, f in self.funcs if p == target] or [self.func_name()]
        lines = ["import pytest", "", f"from {mod} import {', '.join(sorted(set(names)))}", ""]
        for _ in range(self.rng.randint(3, 9)):
            tname = f"test_{self.pick(names)}_{self.ident(1)}"
            self.tests.append(f"{path}::{tname}")
            if self.rng.random() < 0.3:
                cases = ", ".join(
                    f"({self.rng.randint(0, 99)}, {self.rng.randint(0, 999)})"
                    for _ in range(self.rng.randint(2, 5))
                )
                lines += [
                    "",
                    f'@pytest.mark.parametrize(("value", "expected"), [{cases}])',
                    f"def {tname}(value, expected):",
                    f"    assert {self.pick(names)}(value) == expected",
                ]
            else:
                lines += [
                    "",
                    f"def {tname}({self.pick(['', 'tmp_path', 'monkeypatch', 'caplog'])}):",
                ]
                for _ in range(self.rng.randint(1, 4)):
                    lines += self.statement("    ", 2)
                lines.append(f"    assert {self.ident(1)} == {self.expr()}")
            lines.append("")
        return "\n".join(lines)

    def config_file(self) -> str:
        lines = [f"# {self.sentence(4, 9)}"]
        for _ in range(self.rng.randint(3, 6)):
            lines += ["", f"[{self.ident(self.rng.randint(1, 2))}]"]
            for _ in range(self.rng.randint(2, 7)):
                value = self.pick(
                    [
                        str(self.rng.randint(0, 5000)),
                        f'"{self.ident(1)}"',
                        "true",
                        "false",
                        f'["{self.pick(WORDS)}", "{self.pick(WORDS)}"]',
                    ]
                )
                lines.append(f"{self.ident(1)} = {value}")
        return "\n".join(lines) + "\n"

    # -- project ------------------------------------------------------------
    def build_project(self) -> None:
        pkg = self.pick(WORDS) + self.pick(["", "_core", "_service", "kit"])
        modules = []
        for _ in range(self.rng.randint(14, 22)):
            sub = self.pick(["", "", "api/", "storage/", "jobs/", "utils/"])
            path = f"src/{pkg}/{sub}{self.ident(1)}.py"
            if path not in self.files:
                self.files[path] = self.module(path)
                modules.append(path)
        for path in modules[: len(modules) * 2 // 3]:
            tpath = "tests/test_" + path.rsplit("/", 1)[1]
            self.files[tpath] = self.test_module(tpath, path)
        for cfg in ["config/settings.toml", "config/workers.toml", "pyproject.toml"]:
            self.files[cfg] = self.config_file()

    # -- command output templates -------------------------------------------
    def timestamp(self) -> str:
        return (
            f"2024-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 28):02d} "
            f"{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}:"
            f"{self.rng.randint(0, 59):02d},{self.rng.randint(0, 999):03d}"
        )

    def log_output(self) -> str:
        lines = []
        for _ in range(self.rng.randint(20, 90)):
            r = self.rng.random()
            level = self.pick(LOG_LEVELS)
            prefix = (
                f"{self.timestamp()} {level:<7} [{self.pick(THREADS)}] {self.pick(WORDS)}.{self.pick(WORDS)}:"
            )
            if r < 0.4:
                lines.append(
                    f"{prefix} {self.pick(PAST)} {self.rng.randint(1, 5000)} "
                    f"{self.pick(WORDS)}s in {self.rng.uniform(0.001, 9.5):.3f}s "
                    f"(batch={self.hexid()})"
                )
            elif r < 0.65:
                lines.append(
                    f"{prefix} {self.pick(HTTP)} /api/v{self.rng.randint(1, 3)}/"
                    f"{self.pick(WORDS)}s/{self.rng.randint(1, 99999)} -> "
                    f"{self.pick(STATUS_CODES)} ({self.rng.randint(1, 2400)} ms)"
                )
            elif r < 0.88:
                lines.append(f"{prefix} {self.sentence(6, 16)} ({self.ident(1)}={self.rng.randint(0, 9999)})")
            else:
                exc = self.pick(EXCEPTIONS)
                path, func = self.pick(self.funcs)
                lines += [
                    f"{prefix} unhandled {exc} in {func}",
                    "Traceback (most recent call last):",
                    f'  File "/srv/app/{path}", line {self.rng.randint(10, 300)}, in {func}',
                    f"    {self.statement('')[0].strip()}",
                    f"{exc}: {self.sentence(3, 8)}",
                ]
        return "\n".join(lines)

    def pytest_output(self, fail: bool) -> str:
        files: dict[str, list[str]] = {}
        for t in self.rng.sample(self.tests, min(len(self.tests), self.rng.randint(15, 60))):
            f, name = t.split("::")
            files.setdefault(f, []).append(name)
        total = sum(len(v) for v in files.values())
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0",
            "rootdir: /home/dev/project",
            "configfile: pyproject.toml",
            f"collected {total} items",
            "",
        ]
        failed = []
        done = 0
        for f, names in files.items():
            marks = []
            for n in names:
                bad = fail and self.rng.random() < 0.12
                marks.append("F" if bad else ".")
                if bad:
                    failed.append(f"{f}::{n}")
            done += len(names)
            lines.append(f"{f} {''.join(marks)}".ljust(73) + f"[{done * 100 // total:>3}%]")
        if fail and not failed:
            failed.append(self.pick(self.tests))
        if failed:
            lines += [
                "",
                "=================================== FAILURES ===================================",
            ]
            excs = []
            for t in failed:
                name = t.split("::")[1]
                path, func = self.pick(self.funcs)
                exc = self.pick(EXCEPTIONS + ["AssertionError"] * 3)
                excs.append(exc)
                lines += [f"{'_' * 20} {name} {'_' * 20}", ""]
                lines += [
                    f"    def {name}():",
                    *self.statement("        "),
                    f">       assert {func}({self.ident(1)}) == {self.rng.randint(0, 999)}",
                    f"E       {exc}: assert {self.rng.randint(0, 999)} == {self.rng.randint(0, 999)}",
                    f"E        +  where {self.rng.randint(0, 999)} = {func}({self.pick(WORDS)!r})",
                    "",
                    f"{path}:{self.rng.randint(10, 300)}: {exc}",
                ]
            lines += ["=========================== short test summary info ============================"]
            lines += [f"FAILED {t} - {exc}: assert ..." for t, exc in zip(failed, excs, strict=True)]
            lines.append(
                f"========================= {len(failed)} failed, {total - len(failed)} passed "
                f"in {self.rng.uniform(0.3, 40):.2f}s ========================="
            )
        else:
            lines.append(
                f"============================== {total} passed "
                f"in {self.rng.uniform(0.3, 40):.2f}s =============================="
            )
        return "\n".join(lines)

    def grep_output(self) -> tuple[str, str]:
        word = self.pick(WORDS)
        hits = []
        for path, text in self.files.items():
            for i, line in enumerate(text.split("\n"), 1):
                if word in line:
                    hits.append(f"{path}:{i}:{line}")
        return f"grep -rn {word} src tests", "\n".join(hits[:200]) or "(no matches)"

    def git_log(self) -> str:
        lines = []
        for _ in range(self.rng.randint(10, 40)):
            lines.append(
                f"{self.hexid(7)} {self.pick(VERBS).capitalize()} {self.pick(ADJECTIVES)} "
                f"{self.pick(WORDS)} {self.pick(COMMIT_TOPICS)} "
                f"({self.pick(['#', 'PROJ-'])}{self.rng.randint(100, 4999)})"
            )
        return "\n".join(lines)

    def listing(self) -> str:
        lines = []
        for path, text in sorted(self.files.items()):
            lines.append(
                f"-rw-r--r-- 1 dev dev {len(text):>7} {self.pick(['Mar', 'Apr', 'May', 'Jun'])} "
                f"{self.rng.randint(1, 28):>2} "
                f"{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d} {path}"
            )
        for _ in range(self.rng.randint(10, 50)):
            lines.append(
                f"-rw-r--r-- 1 dev dev {self.rng.randint(200, 90000):>7} May "
                f"{self.rng.randint(1, 28):>2} 10:{self.rng.randint(0, 59):02d} "
                f".mypy_cache/3.11/{self.ident(1)}.data.json"
            )
        return "\n".join(lines)

    def lint_output(self) -> str:
        lines = []
        codes = [
            "E501 Line too long",
            "F401 imported but unused",
            "B008 Do not perform function call in argument defaults",
            "UP007 Use `X | Y` for type annotations",
            "E711 Comparison to `None`",
            "F841 Local variable is assigned to but never used",
        ]
        for _ in range(self.rng.randint(0, 25)):
            path = self.pick(list(self.files))
            lines.append(f"{path}:{self.rng.randint(1, 200)}:{self.rng.randint(1, 90)}: {self.pick(codes)}")
        lines.append(f"Found {len(lines)} errors." if lines else "All checks passed!")
        return "\n".join(lines)

    def failing_build(self) -> tuple[dict[str, Any], str, bool]:
        """A type check, compile or test run that fails with an error on most lines (the
        error-dense variant): mypy, tsc, gcc and rustc diagnostics, pytest failures with their
        tracebacks, then the tool's count."""
        lines = []
        paths = list(self.files)
        for _ in range(self.rng.randint(30, 120)):
            path = self.pick(paths)
            line, col = self.rng.randint(1, 400), self.rng.randint(1, 80)
            kind = self.rng.random()
            if kind < 0.3:
                lines.append(
                    f"{path}:{line}: error: Incompatible types in assignment (expression has type "
                    f'"{self.pick(TYPES)}", variable has type "{self.pick(TYPES)}")  [assignment]'
                )
            elif kind < 0.45:
                lines.append(
                    f"{path.replace('.py', '.ts')}({line},{col}): error TS2322: Type '{self.ident(1)}' "
                    f"is not assignable to type '{self.class_name()}'."
                )
            elif kind < 0.6:
                lines += [
                    f"error[E0308]: mismatched types: expected `{self.ident(1)}`, found `{self.ident(1)}`",
                    f"  --> {path.replace('.py', '.rs')}:{line}:{col}",
                ]
            elif kind < 0.75:
                lines.append(f"{path.replace('.py', '.c')}:{line}:{col}: error: {self.sentence(4, 9)}")
            else:
                exc = self.pick(EXCEPTIONS)
                test = self.pick(self.tests)
                lines += [
                    f"FAILED {test} - {exc}: {self.sentence(3, 7)}",
                    "Traceback (most recent call last):",
                    f'  File "/home/dev/project/{path}", line {line}, in {self.ident(1)}',
                    f"E       {exc}: {self.sentence(3, 8)}",
                ]
        lines.append(f"Found {len(lines)} errors in {len(paths)} files (checked {len(paths)} source files)")
        cmd = self.pick(["mypy src", "npx tsc --noEmit", "cargo build", "make", "python -m pytest -x"])
        return {"name": "run_command", "input": {"command": cmd}}, "\n".join(lines), True

    # -- transcript ---------------------------------------------------------
    def tool_call(self) -> tuple[dict[str, Any], str, bool]:
        if self.errors and self.rng.random() < 0.5:
            return self.failing_build()
        r = self.rng.random()
        if r < 0.4:
            path = self.pick(list(self.files))
            if path.endswith(".py") and self.rng.random() < 0.04:
                path = path.removesuffix(".py") + "_old.py"
                return (
                    {"name": "read_file", "input": {"path": path}},
                    f"Error: [Errno 2] No such file or directory: '{path}'",
                    True,
                )
            return {"name": "read_file", "input": {"path": path}}, self.files[path], False
        if r < 0.64:
            fail = self.rng.random() < 0.4
            cmd = self.pick(
                [
                    "python -m pytest",
                    "python -m pytest -q",
                    "pytest -x tests",
                    f"python -m pytest {self.pick(self.tests).split('::')[0]}",
                ]
            )
            out = self.pytest_output(fail)
            return (
                {"name": "run_command", "input": {"command": cmd}},
                out + f"\n[exit code: {1 if fail else 0}]",
                False,
            )
        if r < 0.72:
            cmd = self.pick(
                [
                    "tail -n 200 logs/worker.log",
                    "journalctl -u app --since '1 hour ago'",
                    "docker compose logs --tail 150 worker",
                    "cat logs/app.log | tail -120",
                ]
            )
            return {"name": "run_command", "input": {"command": cmd}}, self.log_output(), False
        if r < 0.78:
            cmd, out = self.grep_output()
            return {"name": "run_command", "input": {"command": cmd}}, out, False
        if r < 0.82:
            return (
                {"name": "run_command", "input": {"command": "git log --oneline -40"}},
                self.git_log(),
                False,
            )
        if r < 0.86:
            return (
                {"name": "list_dir", "input": {"path": ".", "recursive": True}},
                self.listing(),
                False,
            )
        if r < 0.89:
            return (
                {"name": "run_command", "input": {"command": "ruff check src tests"}},
                self.lint_output(),
                False,
            )
        path = self.pick([p for p in self.files if p.endswith(".py")])
        lines = self.files[path].split("\n")
        start = self.rng.randrange(0, max(1, len(lines) - 4))
        old = "\n".join(lines[start : start + self.rng.randint(1, 4)])
        if not old.strip() or self.files[path].count(old) != 1:
            return (
                {"name": "edit_file", "input": {"path": path, "old": old or "\n", "new": old}},
                f"Error: `old` must match exactly once in {path} "
                f"(found {self.files[path].count(old)} matches)",
                True,
            )
        new_lines = [*self.statement("    "), old]
        new = "\n".join(new_lines)
        self.files[path] = self.files[path].replace(old, new)
        return (
            {"name": "edit_file", "input": {"path": path, "old": old, "new": new}},
            f"Applied edit to {path} (1 replacement).",
            False,
        )

    def run(self, target_tokens: int) -> list[dict[str, Any]]:
        self.build_project()
        system = (
            "You are a coding agent working in the user's repository at /home/dev/project. "
            "Use the tools read_file, edit_file, list_dir and run_command to inspect and "
            "change the code. Paths are relative to the repository root. Make small, focused "
            "changes, run the tests after editing, never commit, and summarize what you did "
            "at the end."
        )
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        budget = target_tokens * CHARS_PER_TOKEN
        size = len(json.dumps(messages[0]))

        def add(msg: dict[str, Any]) -> None:
            nonlocal size
            messages.append(msg)
            size += len(json.dumps(msg, ensure_ascii=False)) + 2

        first = True
        while size < budget:
            template = self.pick(USER_TASKS if first or self.rng.random() < 0.6 else USER_FOLLOWUPS)
            first = False
            add({"role": "user", "content": self.fill(template)})
            for step in range(self.rng.randint(2, 9)):
                blocks: list[dict[str, Any]] = []
                if step == 0 and self.rng.random() < 0.25:
                    thought = " ".join(self.fill(self.pick(THOUGHTS)) for _ in range(self.rng.randint(2, 4)))
                    blocks.append({"type": "thinking", "thinking": thought, "signature": self.signature()})
                opener = ASSISTANT_OPENERS if step == 0 else ASSISTANT_MIDDLES
                blocks.append({"type": "text", "text": self.fill(self.pick(opener))})
                results = []
                for _ in range(2 if self.rng.random() < 0.15 else 1):
                    call, output, is_error = self.tool_call()
                    tid = self.tool_id()
                    blocks.append({"type": "tool_use", "id": tid, **call})
                    result: dict[str, Any] = {
                        "type": "tool_result",
                        "tool_use_id": tid,
                        "content": output,
                    }
                    if is_error:
                        result["is_error"] = True
                    elif self.rng.random() < 0.2:
                        result["content"] = [{"type": "text", "text": output}]
                    results.append(result)
                add({"role": "assistant", "content": blocks})
                add({"role": "user", "content": results})
                if size >= budget:
                    break
            add(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": self.fill(self.pick(ASSISTANT_CLOSERS))}],
                }
            )
        return messages


def generate(target_tokens: int = 200_000, seed: int = 0, *, errors: bool = False) -> list[dict[str, Any]]:
    """Return a transcript (list of Anthropic-style messages) of about ``target_tokens`` tokens.
    ``errors``: the error-dense variant — half the tool calls are failed builds, type checks or
    test runs whose output has an error on most lines."""
    return _Gen(seed, errors=errors).run(target_tokens)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="-", help="output JSON path ('-' for stdout)")
    parser.add_argument("--tokens", type=int, default=200_000, help="approximate target size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--errors", action="store_true", help="the error-dense variant (see generate)")
    args = parser.parse_args(argv)
    data = json.dumps(generate(args.tokens, args.seed, errors=args.errors), ensure_ascii=False)
    if args.out == "-":
        sys.stdout.write(data + "\n")
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(data + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
