"""Cost and growth over time: prices from the bundled table, every recorded call of a session,
its compactions, ``count --timeline``, ``sessions``' cost and ``--since``, ``models``."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_helpers import plain_rows, run_cli
from conftest import CORPUS
from session_builders import SessionBuilder
from test_codex import line, token_count

from ctxcompact.accounting.history import usage_history
from ctxcompact.accounting.prices import TokenUse, call_cost, model_price, price_source, total_cost
from ctxcompact.accounting.sessions import list_sessions, parse_since
from ctxcompact.errors import UsageError
from ctxcompact.output.table import plain_text
from ctxcompact.output.timeline import Timeline, timeline_report

COMPACTED = CORPUS / "claude-code" / "codemie-624a4a58-compact.jsonl"
SMALL_COMPACTED = CORPUS / "claude-code" / "entire-198393f2-compact-small.jsonl"
needs_corpus = pytest.mark.skipif(not COMPACTED.is_file(), reason="corpus not present")


# --- prices ----------------------------------------------------------------------------------


def test_list_prices_come_from_the_bundled_table_cache_priced_as_such() -> None:
    price = model_price("claude-sonnet-4-5-20250929", at="2026-01-07T20:24:53Z")
    assert price is not None
    assert (price.priced_as, price.input, price.output, price.cache_read, price.cache_write) == (
        "claude-sonnet-4-5",
        3.0,
        15.0,
        0.3,
        3.75,
    )
    assert price.tiered  # over 200K prompt tokens Sonnet 4.5 costs more
    # One call: 10 uncached, 50,989 written to the cache, 8 out — each at its own price.
    use = TokenUse(input=10, cache_write=50_989, cache_read=0, output=8)
    assert call_cost(use, "claude-sonnet-4-5") == pytest.approx((10 * 3 + 50_989 * 3.75 + 8 * 15) / 1e6)
    read = TokenUse(input=10, cache_read=50_989, output=8)
    assert call_cost(read, "claude-sonnet-4-5") == pytest.approx((10 * 3 + 50_989 * 0.3 + 8 * 15) / 1e6)
    batch = model_price("claude-haiku-4-5", batch=True)
    assert batch is not None and (batch.input, batch.output) == (0.5, 2.5)
    assert model_price("gpt-5-turbo-xl") is None and call_cost(use, "no-such-model") is None
    assert price_source().startswith("genai-prices ")


def test_calls_without_a_known_price_are_counted_apart() -> None:
    cost = total_cost(
        [
            (TokenUse(input=1_000_000), "claude-haiku-4-5", None),
            (TokenUse(input=5), None, None),
            (TokenUse(input=5), "mystery-model", None),
        ]
    )
    assert (cost.dollars, cost.priced_calls, cost.unpriced_calls, cost.priced_as) == (
        pytest.approx(1.0),
        1,
        2,
        ("claude-haiku-4-5",),
    )


def test_prices_load_with_no_network() -> None:
    """The price data is bundled in the package: pricing works with every connection refused."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network in this test')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from ctxcompact.accounting.prices import model_price\n"
        "print(model_price('gpt-4o').input)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2.5"


# --- the history of a session ----------------------------------------------------------------


def _session() -> SessionBuilder:
    s = SessionBuilder()
    s.user("fix it").assistant("looking", usage=(10, 50_000, 0, 100))
    s.user("more").assistant("done", usage=(5, 2_000, 50_000, 300))
    s.assistant("subagent work", usage=(1, 1_000, 0, 50), isSidechain=True)
    s.assistant("error", usage=(0, 0, 0, 0), model="<synthetic>")
    s.boundary(pre_tokens=52_400)
    s.user("go on").assistant("ok", usage=(3, 9_000, 0, 20))
    return s


def test_every_recorded_call_in_order_compactions_between() -> None:
    history = usage_history(_session().entries)
    assert history.agent == "claude-code"
    assert [c.context for c in history.main] == [50_110, 52_305, 9_023]
    assert [c.sidechain for c in history.calls] == [False, False, True, False]  # synthetic: no call
    [(point, after)] = history.drops()
    assert (point.calls_before, point.pre_tokens, point.trigger, after) == (2, 52_400, "auto", 9_023)
    assert history.tokens == TokenUse(input=19, cache_write=62_000, cache_read=50_000, output=470)
    assert history.model == "claude-sonnet-4-5-20250929"


def test_one_response_over_several_entries_is_one_call() -> None:
    s = SessionBuilder().user("hi")
    s.assistant("part one", usage=(10, 100, 0, 1))
    s.entries[-1]["message"]["id"] = "msg_same"
    s.assistant("part two", usage=(10, 100, 0, 250))
    s.entries[-1]["message"]["id"] = "msg_same"
    [call] = usage_history(s.entries).calls
    assert (call.line, call.tokens.output, call.context) == (2, 250, 360)


def test_a_codex_rollout_gives_its_token_counts_once_each_with_the_model() -> None:
    records = [
        line("session_meta", {"id": "s1", "cwd": "/repo"}),
        line("turn_context", {"model": "gpt-5.5"}),
        token_count(20_000),
        token_count(20_000),  # the same totals again: a repeat, not a call
        token_count(30_000),
        line("compacted", {"message": "summary", "replacement_history": []}),
        token_count(4_000),
    ]
    records[4]["payload"]["info"]["total_token_usage"] = {"total_tokens": 50_020}
    history = usage_history(records)
    assert history.agent == "codex" and history.context_window == 258_400
    assert [c.context for c in history.calls] == [20_010, 30_010, 4_010]
    assert {c.model for c in history.calls} == {"gpt-5.5"}
    [(point, after)] = history.drops()
    assert (point.calls_before, point.pre_tokens, after) == (2, 30_010, 4_010)


def test_a_transcript_without_usage_has_an_empty_history() -> None:
    history = usage_history([{"role": "user", "content": "hi"}])
    assert (history.agent, history.calls, history.compactions) == ("none", (), ())


# --- count --timeline ------------------------------------------------------------------------


def test_timeline_piped_is_a_table_of_calls_with_the_compaction_row(tmp_path: Path) -> None:
    path = _session().write(tmp_path / "s.jsonl")
    out = run_cli("count", path, "--timeline")
    assert out.exit_code == 0, out.stderr
    assert "\x1b[" not in out.stdout
    rows = plain_rows(out.stdout, "call ")
    assert [r[0] for r in rows] == ["1", "2", "7", "3"]  # the compaction's row names its line
    assert rows[2][-1] == "compaction (auto): 52,400 → 9,023"
    assert "cost ≈ $" in out.stdout and "genai-prices" in out.stdout
    data = run_cli("count", path, "--timeline", "--json").json()
    [t] = data["timelines"]
    assert [c["context"] for c in t["calls"]] == [50_110, 52_305, 9_023]
    assert len(t["subagent_calls"]) == 1
    assert t["compactions"] == [
        {
            "line": 7,
            "timestamp": t["compactions"][0]["timestamp"],
            "trigger": "auto",
            "after_call": 2,
            "tokens_before": 52_400,
            "tokens_after": 9_023,
        }
    ]
    assert t["cost"]["estimate"] is True and t["cost"]["priced_calls"] == 4
    assert t["cost"]["source"].startswith("genai-prices")


def test_timeline_html_page(tmp_path: Path) -> None:
    path = _session().write(tmp_path / "s.jsonl")
    page = tmp_path / "growth.html"
    out = run_cli("count", path, "--timeline", "--html", page)
    assert out.exit_code == 0, out.stderr
    html = page.read_text()
    assert "<svg" in html and "<polyline" in html and "compaction 52,400 → 9,023" in html
    assert "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no external assets


@pytest.mark.parametrize("width", [60, 80, 120])
def test_timeline_chart_fits_and_marks_the_compaction(tmp_path: Path, width: int) -> None:
    history = usage_history(_session().entries)
    t = Timeline("s.jsonl", history, 200_000, 100_800, history.cost(), price_source())
    lines = plain_text(timeline_report(t, width=width)).splitlines()
    chart = [ln for ln in lines if "┤" in ln or "└" in ln]
    assert chart and all(len(ln) <= width for ln in chart)
    assert "▲" in chart[-1]
    assert "100,800" in "\n".join(chart)  # the threshold row is labelled
    assert any("52,400 → 9,023" in ln for ln in lines)


@needs_corpus
def test_timeline_of_a_corpus_session_shows_its_compaction_drop() -> None:
    data = run_cli("count", COMPACTED, SMALL_COMPACTED, "--timeline", "--json").json()
    first, second = data["timelines"]
    [point] = first["compactions"]
    # Claude Code compacted automatically at 155,979 tokens; the next call sent 36,935.
    assert (point["tokens_before"], point["tokens_after"], point["trigger"]) == (155_979, 36_935, "auto")
    contexts = [c["context"] for c in first["calls"]]
    assert contexts[point["after_call"] - 1] > 150_000 > 40_000 > contexts[point["after_call"]]
    [small] = second["compactions"]
    assert small["tokens_before"] > 3 * small["tokens_after"]
    assert first["cost"]["usd"] > 1 and second["cost"]["priced_as"] == ["claude-opus-4-5"]


# --- sessions: model, cost, --since ----------------------------------------------------------


def test_sessions_show_model_and_cost_and_filter_since(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    path = _session().write(root / "-home-u-proj" / "s.jsonl")
    [row] = list_sessions(root)
    expected = total_cost((c.tokens, c.model, c.timestamp) for c in usage_history(_session().entries).calls)
    assert row.model == "claude-sonnet-4-5-20250929"
    assert row.cost is not None and row.cost.dollars == pytest.approx(expected.dollars)
    assert row.cost.priced_calls == 4  # the subagent's call is paid for too
    [data] = run_cli("sessions", root, "--json").json()["sessions"]
    assert data["cost"]["usd"] == pytest.approx(expected.dollars, abs=1e-6)
    assert data["cost"]["estimate"] is True
    # Its last entry is of 2026-01-02: listed since the 1st, not since the 3rd.
    os.utime(path, (datetime(2026, 1, 2, tzinfo=UTC).timestamp(),) * 2)
    assert len(list_sessions(root, since=parse_since("2026-01-01"))) == 1
    assert list_sessions(root, since=parse_since("2026-01-03")) == []
    plain = run_cli("sessions", root, "--since", "2026-01-01")
    assert plain.exit_code == 0 and "cost: estimated at the list prices of genai-prices" in plain.stdout
    [row_cells, footer] = plain_rows(plain.stdout, "agent ")[:2]
    assert row_cells[3] == "claude-sonnet-4-5-20250929" and footer[1].startswith("$")
    bad = run_cli("sessions", root, "--since", "yesterday")
    assert bad.exit_code == 2 and "--since 'yesterday'" in bad.stderr


def test_since_spans_count_back_from_now() -> None:
    now = datetime(2026, 11, 25, 12, tzinfo=UTC)
    assert parse_since("24h", now=now) == datetime(2026, 11, 24, 12, tzinfo=UTC)
    assert parse_since("2w", now=now) == datetime(2026, 11, 11, 12, tzinfo=UTC)
    assert parse_since("2026-11-01T08:00") == datetime(2026, 11, 1, 8, tzinfo=UTC)
    with pytest.raises(UsageError):
        parse_since("soon")


# --- models ----------------------------------------------------------------------------------


def test_models_lists_windows_and_prices_with_their_sources(tmp_path: Path) -> None:
    extra = tmp_path / "models.json"
    extra.write_text('{"models": {"acme-large": 262144}}')
    out = run_cli("models", "--models-file", extra)
    assert out.exit_code == 0, out.stderr
    rows = {r[0]: r for r in plain_rows(out.stdout, "model ")}
    assert rows["claude-haiku-4-5"][1:7] == ["200,000", "built-in", "1", "5", "0.1", "1.25"]
    assert rows["acme-large"][1:3] == ["262,144", str(extra)]
    assert "genai-prices" in out.stdout and "estimates" in out.stdout
    data = run_cli("models", "--json").json()
    assert data["price_source"].startswith("genai-prices")
    gpt4o = next(m for m in data["models"] if m["model"] == "gpt-4o")
    assert gpt4o["context_window"] == 128_000 and gpt4o["price"]["input_per_mtok"] == 2.5
