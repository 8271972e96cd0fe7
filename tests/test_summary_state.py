"""The state the agent stopped in, and what its tools showed (issue 19, measured blind: the
offline summary lost most on "the state at the end" and on findings that live in tool output).

Synthetic transcripts of each dialect's shape: Claude Code file tools, Codex ``exec_command`` and
``apply_patch``, chat-completions tools that report no failure flag, mini-swe-agent's text
actions (a trajectory file read through its dialect), SWE-agent's frame.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CORPUS, requires_corpus
from ir_builders import msg, result, text, use

from ctxcompact.compaction.summarize.extractive import (
    CURRENT_WORK_LABEL,
    FINDINGS_LABEL,
    ExtractiveSummarizer,
)
from ctxcompact.compaction.summarize.scripts import script_edits
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_transcript


def summary(messages: list[Message], max_words: int = 1500) -> str:
    return ExtractiveSummarizer().summarize(messages, max_words=max_words).text


def under(out: str, label: str) -> str:
    """The lines under one label, up to the next label (a line ending in ':' at the margin
    that is not a list item) or heading."""
    after = out.split(label + "\n", 1)[1]
    lines = []
    for line in after.splitlines():
        if line.startswith("## ") or (line.endswith(":") and not line.startswith(("-", " "))):
            break
        lines.append(line)
    return "\n".join(lines)


def test_the_last_calls_show_what_they_returned() -> None:
    """Current work quotes each recent result's meaningful lines under its call: the runner's
    summary of a test run, a failure's error line, the lines the agent talked about after."""
    messages = [
        msg("user", text("Make the parser accept empty input.")),
        msg("assistant", use("g", "Bash", command="grep -rn parse_config src")),
        msg(
            "user",
            result("g", "src/cfg/load.py:12:def parse_config(text):\nsrc/cli.py:40:    parse_config(raw)\n"),
        ),
        msg(
            "assistant",
            text("`parse_config` lives in `src/cfg/load.py`."),
            use("t", "Bash", command="pytest -q"),
        ),
        msg(
            "user",
            result(
                "t",
                "..F.\nFAILED tests/test_load.py::test_empty - ValueError: empty\n1 failed, 3 passed in 0.2s\n",
            ),
        ),
        msg("assistant", use("r", "Bash", command="python -m cfg check")),
        msg(
            "user",
            result("r", "Traceback (most recent call last):\n  File x\nKeyError: 'root'\n", is_error=True),
        ),
    ]
    work = under(summary(messages), CURRENT_WORK_LABEL)
    assert "- Bash(grep -rn parse_config src) → ok:\n    src/cfg/load.py:12:def parse_config(text):" in work
    assert "1 failed, 3 passed in 0.2s" in work and "tests/test_load.py::test_empty" in work
    # A failure's error line is said once, on the call's own line.
    assert "- Bash(python -m cfg check) → failed: KeyError: 'root'" in work
    assert work.count("KeyError: 'root'") == 1


def test_an_edit_shows_its_diff_and_a_read_its_outline() -> None:
    """An edit's own lines (``-`` old, ``+`` new); a file read with nothing referred to shows
    the definitions it holds and its length, not a licence header."""
    source = "# Copyright 2020 Someone\n# Licensed under MIT\n\nimport os\n\n\ndef load(p):\n    return 1\n\n\nclass Store:\n    pass\n"
    messages = [
        msg("user", text("Fix load.")),
        msg("assistant", use("r", "Read", file_path="src/store.py")),
        msg("user", result("r", source)),
        msg(
            "assistant",
            use(
                "e",
                "Edit",
                file_path="src/store.py",
                old_string="    return 1",
                new_string="    return open(p).read()",
            ),
        ),
        msg("user", result("e", "The file src/store.py has been updated.")),
    ]
    work = under(summary(messages), CURRENT_WORK_LABEL)
    assert "def load(p):\n    class Store:" in work and "Copyright" not in work
    assert "src/store.py:\n    - return 1\n    + return open(p).read()" in work


def mini_swe_agent(tmp_path: Path, actions: list[tuple[str, str, str]]) -> list[Message]:
    """A mini-swe-agent trajectory file (thought, command, output per step), read back."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Fix the rounding bug in calc/round.py."},
    ]
    for thought, command, output in actions:
        messages.append({"role": "assistant", "content": f"THOUGHT: {thought}\n\n```bash\n{command}\n```"})
        messages.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}</output>"}
        )
    path = tmp_path / "run.traj.json"
    data = {
        "info": {},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "calc-1",
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return list(load_transcript(path).messages)


EDIT_SCRIPT = """python -c "
p = 'calc/round.py'
s = open(p).read()
s = s.replace('    value = float(x)\\n    return int(value)\\n', '    return round(x)\\n')
open(p, 'w').write(s)
" """


def test_a_python_c_edit_script_shows_what_it_replaced_and_the_lines_it_dropped(tmp_path: Path) -> None:
    """mini-swe-agent edits with scripts: the file is listed as edited, the change reads
    old → new with the line count that changed, and Current work shows the dropped lines."""
    messages = mini_swe_agent(
        tmp_path,
        [
            (
                "Look at the function.",
                "cat calc/round.py",
                "def r(x):\n    value = float(x)\n    return int(value)\n",
            ),
            ("Replace the body.", EDIT_SCRIPT, ""),
        ],
    )
    out = summary(messages)
    assert re.search(r"- edited(, read)?: `calc/round\.py`", out)
    assert (
        "- `calc/round.py` (python .replace): value = float(x) return int(value) → return round(x) (2 lines → 1)"
        in out
    )
    work = under(out, CURRENT_WORK_LABEL)
    assert "calc/round.py:\n    - value = float(x)\n    - return int(value)\n    + return round(x)" in work


LINE_SCRIPT = """python -c "
with open('app/ops.py') as f:
    lines = f.readlines()
for i, line in enumerate(lines):
    if 'if old == name:' in line:
        lines.insert(i, '    was_pk = field.primary_key\\n')
        lines[i + 1] = '    if name is None and was_pk:\\n'
        lines[i + 2] = '    if old == name or was_pk:\\n'
        break
with open('app/ops.py', 'w') as f:
    f.writelines(lines)
print('Fix applied!')
" """


def test_a_script_that_rewrites_a_file_line_by_line_shows_the_lines_it_put_and_replaced(
    tmp_path: Path,
) -> None:
    """A script that edits a list of the file's lines (insert, assign by index) prints only
    "Fix applied!": the summary shows the lines it inserted and the places it overwrote, so a
    line overwritten by mistake (seen on a real run: the line after the condition, holding the
    assignment the fix needed, was replaced) can be seen for what it is."""
    messages = mini_swe_agent(
        tmp_path,
        [
            (
                "Look at it.",
                "cat app/ops.py",
                "def f(old, name, field):\n    if old == name:\n        field.name = name\n",
            ),
            ("Apply the fix.", LINE_SCRIPT, "Fix applied!"),
        ],
    )
    out = summary(messages)
    assert re.search(r"- edited(, read)?: `app/ops\.py`", out)
    work = under(out, CURRENT_WORK_LABEL)
    assert "+ was_pk = field.primary_key" in work
    assert "- lines[i + 2] (as it was)" in work and "+ if old == name or was_pk:" in work
    # A script that sets a key of a dictionary it then dumps is not editing lines.
    assert not [
        e for e in script_edits("c = {}\nc['a'] = 'x'\nopen('c.json', 'w').write(str(c))") if e[2] is not None
    ]


def test_a_heredoc_script_run_in_the_same_command_is_read(tmp_path: Path) -> None:
    command = (
        "cat > /tmp/fix.py <<'EOF'\nimport re\nfrom pathlib import Path\npath = Path('calc/round.py')\n"
        "t = path.read_text()\nPath('calc/round.py').write_text(re.sub(r'int\\(value\\)', 'round(value)', t))\n"
        "EOF\npython /tmp/fix.py && echo done"
    )
    messages = mini_swe_agent(tmp_path, [("Patch it with a script.", command, "done\n")])
    out = summary(messages)
    assert "- `calc/round.py` (python re.sub): int\\(value\\) → round(value)" in out


def test_a_script_that_writes_a_file_without_a_readable_change_names_the_file() -> None:
    command = "python3 - <<'EOF'\nlines = open('a/b.py').readlines()\ndel lines[3]\nopen('a/b.py', 'w').writelines(lines)\nEOF"
    messages = [
        msg("user", text("Drop the stray line.")),
        msg("assistant", use("c", "exec_command", cmd=command)),
        msg("user", result("c", "Process exited with code 0\nOutput:\n")),
    ]
    out = summary(messages)
    assert "`a/b.py`" in out.split("## Tool Calls")[0].split("## File Operations")[1]
    assert "(written by the script; what changed is not in its text)" in out


def test_a_codex_patch_shows_the_lines_it_removed() -> None:
    patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 1\n+    return 2\n*** End Patch\n"
    messages = [
        msg("user", text("Return 2.")),
        msg("assistant", use("p", "apply_patch", input=patch)),
        msg("user", result("p", '{"output":"Success."}')),
    ]
    out = summary(messages)
    assert "- `app.py` (apply_patch): return 1 → return 2" in out
    assert "app.py:\n    - return 1\n    + return 2" in under(out, CURRENT_WORK_LABEL)


def test_findings_quote_the_result_lines_the_agent_named() -> None:
    """A finding that lives in tool output: the agent's sentence and the result line holding
    the name it wrote in backticks — wherever in the session it was found."""
    messages = [
        msg("user", text("Where is OPENCODE_CONFIG set?")),
        msg("assistant", use("g", "exec_command", cmd="rg -n OPENCODE_CONFIG src")),
        msg(
            "user",
            result(
                "g",
                "Process exited with code 0\nOutput:\nsrc/agents/opencode.ts:88:  env.OPENCODE_CONFIG = buildOpenCodeConfig(opts)\n",
            ),
        ),
        msg("assistant", text("The env var is built by `buildOpenCodeConfig` in the opencode agent.")),
        msg("user", text("Thanks. Now add a test for it.")),
        msg(
            "assistant",
            use("w", "Write", file_path="tests/opencode.test.ts", content="test('x', () => {})\n"),
        ),
        msg("user", result("w", "File created.")),
    ]
    out = summary(messages)
    findings = under(out, FINDINGS_LABEL)
    assert (
        "- The env var is built by `buildOpenCodeConfig` in the opencode agent. — exec_command(rg -n "
        "OPENCODE_CONFIG src) showed: `src/agents/opencode.ts:88: env.OPENCODE_CONFIG = buildOpenCodeConfig(opts)`"
    ) in findings
    # Not repeated under the conclusions (the turn's report still has it).
    assert "The env var is built by" not in out.split(FINDINGS_LABEL)[0]
    assert "- (request 1) The env var is built by" in out


def test_a_finding_several_results_hold_is_written_once_with_each_result() -> None:
    """The agent read a name in a grep and in a file, then wrote one sentence about it: the
    sentence comes once, followed by what each result showed (not once per result)."""
    messages = [
        msg("user", text("Why does reconnect send initialize twice?")),
        msg("assistant", use("g", "Bash", command="grep -n setTimeout src/stream.ts")),
        msg("user", result("g", "1861:    setTimeout(() => {\n")),
        msg("assistant", use("r", "Read", file_path="src/stream.ts")),
        msg("user", result("r", "1860→  // retry\n1861→    setTimeout(() => {\n1863→      sendInit(ws);\n")),
        msg(
            "assistant", text("The handle of `setTimeout` is never stored, so a reconnect can fire it twice.")
        ),
        msg("user", text("Fix it.")),
    ]
    findings = under(summary(messages), FINDINGS_LABEL)
    assert findings.count("The handle of `setTimeout` is never stored") == 1
    assert (
        "- The handle of `setTimeout` is never stored, so a reconnect can fire it twice. — "
        "Bash(grep -n setTimeout src/stream.ts) showed: `1861: setTimeout(() => {`; "
        "Read(src/stream.ts) showed: `1861→ setTimeout(() => {`"
    ) in findings


def test_swe_agents_frame_is_not_what_a_command_returned() -> None:
    frame = "\n(Open file: /repo/calc/round.py)\n(Current directory: /repo)\nbash-$"
    messages = [
        msg("user", text("Run the script.")),
        msg("assistant", use("c", "bash", command="python reproduce.py")),
        msg("user", result("c", "Result: 3" + frame)),
    ]
    work = under(summary(messages), CURRENT_WORK_LABEL)
    assert "- bash(python reproduce.py) → ok:\n    Result: 3" in work and "bash-$" not in work


def test_the_newest_results_are_kept_first_within_the_budget() -> None:
    """Current work over its room keeps the newest calls with their lines and counts the rest."""
    messages: list[Message] = [msg("user", text("Probe the service."))]
    for n in range(8):
        body = "\n".join(f"line {n}.{i} " + "word " * 10 for i in range(12))
        messages += [
            msg("assistant", use(f"c{n}", "Bash", command=f"probe {n}")),
            msg("user", result(f"c{n}", body)),
        ]
    for max_words in (150, 300, 1500):
        out = summary(messages, max_words=max_words)
        assert len(out.split()) <= max_words
        assert "Bash(probe 7)" in out  # the newest call is always there
    small = under(summary(messages, max_words=150), CURRENT_WORK_LABEL)
    assert "earlier calls" in small and "Bash(probe 0)" not in small


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize(
    "name",
    [
        "claude-code/kimicli-8f3c3e6d-progress-zh.jsonl",
        "other/codex-rollout-019e1695-desktop.jsonl",
        "other/sweagent-marshmallow-1867-function-calling.traj",
    ],
)
def test_real_sessions_carry_what_their_last_calls_returned(name: str) -> None:
    """On real sessions of three dialects every recent call with a result shows lines of it,
    within the default budget."""
    messages = list(load_transcript(CORPUS / name).messages)
    out = summary(messages)
    assert len(out.split()) <= 1500
    work = under(out, CURRENT_WORK_LABEL)
    calls = [line for line in work.splitlines() if line.startswith("- ") and "earlier call" not in line]
    assert calls
    for call in calls:
        if "result not seen yet" not in call and "→ failed: " not in call:
            assert call.endswith(":"), call  # its result lines follow (a failure's is on its line)


@requires_corpus
@pytest.mark.corpus
def test_a_real_session_quotes_the_commit_its_agent_reported() -> None:
    messages = list(load_transcript(CORPUS / "claude-code/kimicli-8f3c3e6d-progress-zh.jsonl").messages)
    findings = under(summary(messages), FINDINGS_LABEL)
    assert "a6cc549" in findings and "showed:" in findings
