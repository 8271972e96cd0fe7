"""Token reduction of the no-LLM strategies on the sample transcripts and the shared corpus.

For every file in ``sample_transcripts/*.json*`` and ``../shared/corpus/{anthropic,openai,
claude-code}/*`` (absent ones are skipped) this runs, with default options:

* ``offload`` (into a temporary directory, removed afterwards),
* ``compact --strategy prune`` (keep 3, the current tool loop protected),
* ``prune`` with the loop protection lifted (``protect_loop=False``, keep 3, thinking keep 1),
* ``compact --strategy clean-tools`` (rounds 2),

counts the prompt tokens (messages + system + tool definitions) before and after with tiktoken
``cl100k_base``, and prints a Markdown table of what is left as a share of the original.

Usage:
    python bench/reduction.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ctxcompact.ir import Message
from ctxcompact.offload import offload_tool_results
from ctxcompact.strategies.clean_tools import clean_tool_calls
from ctxcompact.strategies.prune import prune_tool_outputs
from ctxcompact.tokens import TiktokenCounter, count_tokens
from ctxcompact.transcript import Conversation, load_transcript

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
COUNTER = TiktokenCounter()

Rewrite = Callable[[Sequence[Message]], Sequence[Message]]


def inputs() -> list[Path]:
    files = sorted((ROOT / "sample_transcripts").glob("*.json*"))
    for sub in ("anthropic", "openai", "claude-code"):
        folder = CORPUS / sub
        if folder.is_dir():
            files.extend(sorted(p for p in folder.iterdir() if p.is_file()))
    return files


def tokens(conv: Conversation, messages: Sequence[Message]) -> int:
    return count_tokens(messages, counter=COUNTER, system=conv.system, tools=conv.tools).total


def rewrites(out_dir: Path) -> dict[str, Rewrite]:
    return {
        "offload": lambda m: offload_tool_results(m, out_dir=out_dir, counter=COUNTER).messages,
        "prune": lambda m: prune_tool_outputs(m, counter=COUNTER).messages,
        "prune, loop included": lambda m: (
            prune_tool_outputs(m, counter=COUNTER, protect_loop=False, keep_thinking=1).messages
        ),
        "clean-tools": lambda m: clean_tool_calls(m).messages,
    }


def measure(path: Path, out_dir: Path) -> tuple[int, dict[str, int]]:
    transcript = load_transcript(path)
    before = 0
    after: dict[str, int] = {}
    for conv in transcript.conversations:
        before += tokens(conv, conv.messages)
        for name, rewrite in rewrites(out_dir).items():
            after[name] = after.get(name, 0) + tokens(conv, rewrite(conv.messages))
    return before, after


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> int:
    start = time.perf_counter()
    rows: list[tuple[str, int, dict[str, int]]] = []
    with tempfile.TemporaryDirectory(prefix="ctxcompact-bench-") as tmp:
        for i, path in enumerate(inputs()):
            label = (
                f"../{path.relative_to(ROOT.parent).as_posix()}"
                if CORPUS in path.parents
                else path.relative_to(ROOT).as_posix()
            )
            before, after = measure(path, Path(tmp) / str(i))
            rows.append((label, before, after))
    names = list(rewrites(Path(".")))
    print("| file | tokens | " + " | ".join(f"after {n}" for n in names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for label, before, after in rows:
        print(f"| `{label}` | {before:,} | " + " | ".join(share(after[n], before) for n in names) + " |")
    total = sum(r[1] for r in rows)
    totals = {n: sum(r[2][n] for r in rows) for n in names}
    print(
        f"| **all** | **{total:,}** | " + " | ".join(f"**{share(totals[n], total)}**" for n in names) + " |"
    )
    print(
        f"\nTokens left as a share of the original (tiktoken cl100k_base; messages, system prompt and "
        f"tool definitions); {len(rows)} files in {time.perf_counter() - start:.1f} s.",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
