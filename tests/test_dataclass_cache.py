"""The command line's caches: where they live, and the dataclass methods compiled once."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES

from ctxcompact.caches import cache_dir
from ctxcompact.cli.dataclass_cache import DATACLASS_CACHE, CompiledMethods


def test_the_cache_dir_is_the_variable_else_xdg_else_home() -> None:
    assert cache_dir({"CTXCOMPACT_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x"}) == Path("/c")
    assert cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/ctxcompact")
    assert cache_dir({}) == Path(os.path.expanduser("~")) / ".cache" / "ctxcompact"


def _define() -> type:
    @dataclasses.dataclass(frozen=True, slots=True, order=True)
    class Point:
        x: int
        y: list[int] = dataclasses.field(default_factory=list, compare=False)
        label: str = "p"

    return Point


def _behaviour(kind: type) -> tuple[object, ...]:
    a, b = kind(1, [2]), kind(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 3  # type: ignore[attr-defined]
    return (repr(a), a == b, hash(a) == hash(b), a < kind(2), b.y, dataclasses.astuple(a))


def test_cached_methods_behave_as_compiled_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _behaviour(_define())
    path = tmp_path / DATACLASS_CACHE
    first = CompiledMethods(path)
    monkeypatch.setattr(dataclasses, "exec", first.exec, raising=False)
    assert _behaviour(_define()) == expected and first.added >= 5
    first.save()
    again = CompiledMethods(path)  # a later run: every text already compiled
    monkeypatch.setattr(dataclasses, "exec", again.exec, raising=False)
    assert _behaviour(_define()) == expected and again.added == 0 and again.codes.keys() == first.codes.keys()


@pytest.mark.parametrize("content", [b"", b"not marshal", b"\xe9[]"])
def test_a_damaged_cache_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path = tmp_path / DATACLASS_CACHE
    path.write_bytes(content)
    methods = CompiledMethods(path)
    monkeypatch.setattr(dataclasses, "exec", methods.exec, raising=False)
    assert _behaviour(_define()) == _behaviour(_define()) and methods.added >= 5
    methods.save()
    assert CompiledMethods(path).codes.keys() == methods.codes.keys()


def test_the_command_line_fills_the_cache_once_and_prints_the_same(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    env["CTXCOMPACT_CACHE_DIR"] = str(tmp_path)
    argv = [sys.executable, "-m", "ctxcompact", "count", str(SAMPLES / "anthropic-session.json"), "--json"]
    first = subprocess.run(argv, capture_output=True, timeout=60, env=env, cwd=tmp_path)
    cache = tmp_path / DATACLASS_CACHE
    written = cache.stat().st_mtime_ns
    second = subprocess.run(argv, capture_output=True, timeout=60, env=env, cwd=tmp_path)
    assert first.returncode == second.returncode == 0 and first.stdout == second.stdout
    assert cache.stat().st_mtime_ns == written  # nothing new to compile: not rewritten


def test_a_cache_file_others_may_write_is_not_run(tmp_path: Path) -> None:
    """The cache holds code the command runs: a file another user could have written (here:
    world-writable) is ignored, whatever it holds; the same file kept private is used."""
    path = tmp_path / DATACLASS_CACHE
    methods = CompiledMethods(path)
    methods.codes["planted"] = compile("raise SystemExit('planted')", "<string>", "exec")
    methods.added = 1
    methods.save()
    assert "planted" in CompiledMethods(path).codes
    path.chmod(0o666)
    assert CompiledMethods(path).codes == {}


DOCLESS_PROBE = """
import sys
{install}
import dataclasses
before = "inspect" in sys.modules

@dataclasses.dataclass(frozen=True)
class Documented:
    '''Its own docstring.'''
    x: int

documented = "inspect" in sys.modules

@dataclasses.dataclass(frozen=True)
class Docless:
    x: int
    y: str = "a"

print(before, documented, repr(Docless.__doc__), Docless(1) == Docless(1, "a"))
"""


def test_dataclasses_load_inspect_only_for_a_class_without_a_docstring() -> None:
    """The command line imports dataclasses without inspect (~8 ms); a class with no docstring
    still gets the one dataclasses writes from its signature, loading inspect then."""
    install = "from ctxcompact.cli.dataclass_cache import install_dataclass_cache; install_dataclass_cache()"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCOMPACT_")}
    plain, installed = (
        subprocess.run(
            [sys.executable, "-c", DOCLESS_PROBE.format(install=text)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=True,
        ).stdout
        for text in ("", install)
    )
    assert plain == "True True \"Docless(x: int, y: str = 'a')\" True\n"
    assert installed == plain.replace("True True", "False False", 1)


def test_every_dataclass_of_ours_has_a_docstring() -> None:
    """A dataclass without one makes dataclasses load inspect for it (see above): every
    command would pay for it again."""
    import ast

    from conftest import ROOT

    missing = []
    for path in sorted((ROOT / "ctxcompact").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and any("dataclass" in ast.unparse(d) for d in node.decorator_list)
                and ast.get_docstring(node) is None
            ):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert missing == []
