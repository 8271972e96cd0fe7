"""Context-window registry and the compaction threshold (SPEC §3.3; seed 003 §4.1, App. A)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcompact.accounting.windows import (
    BUILTIN_CONTEXT_WINDOWS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_OUTPUT_RESERVE,
    DEFAULT_RATIO,
    RATIO_RANGE,
    REGISTRY_ENV,
    BudgetCheck,
    ModelInfo,
    decimal_share,
    load_registry,
    make_budget,
    normalize_model_id,
    resolve_model,
    strategy_label,
)
from ctxcompact.errors import InputError, UsageError

# --- lookup ------------------------------------------------------------------------------------


def test_exact_match() -> None:
    info = resolve_model("gpt-4o")
    assert info == ModelInfo("gpt-4o", 128_000, "exact", "gpt-4o")
    assert info.known


def test_prefix_match_for_dated_ids() -> None:
    info = resolve_model("claude-sonnet-4-5-20250929")
    assert (info.context_window, info.match, info.key) == (200_000, "prefix", "claude-sonnet-4-5")


def test_longest_prefix_wins() -> None:
    # "gpt-4" (8K), "gpt-4o" (128K) and "gpt-4o-mini" all prefix "gpt-4o-mini-2024-07-18".
    info = resolve_model("gpt-4o-mini-2024-07-18")
    assert (info.key, info.context_window) == ("gpt-4o-mini", 128_000)
    assert resolve_model("gpt-4-0613").key == "gpt-4"
    assert resolve_model("gpt-4-0613").context_window == 8_192
    assert resolve_model("gpt-4.1-mini-2025-04-14").key == "gpt-4.1-mini"


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),  # Bedrock
        ("anthropic/claude-opus-4-1", "claude-opus-4-1"),  # OpenRouter
        ("openrouter/meta-llama/llama-4-maverick", "llama-4-maverick"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5"),
        ("  GPT-4o  ", "gpt-4o"),
        ("openai/gpt-5-mini", "gpt-5-mini"),
    ],
)
def test_provider_prefixes_and_case_are_normalized(model: str, key: str) -> None:
    info = resolve_model(model)
    assert info.key == key
    assert info.context_window == BUILTIN_CONTEXT_WINDOWS[key]
    assert info.model == model  # the id as given is reported back


def test_normalize_model_id_strips_vendor_prefixes_repeatedly() -> None:
    assert normalize_model_id("global.anthropic.claude-haiku-4-5") == "claude-haiku-4-5"
    assert normalize_model_id("vertex_ai/claude-3-5-sonnet@20240620") == "claude-3-5-sonnet@20240620"


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5",
        "claude-opus-4-6",
        "claude-haiku-4-5",
        "gpt-5",
        "gpt-4.1",
        "gpt-4o",
        "o3",
        "o4-mini",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "deepseek-chat",
        "deepseek-reasoner",
        "qwen3-coder",
        "qwen-plus",
        "llama-3.3-70b-instruct",
        "llama-4-scout",
    ],
)
def test_current_model_families_are_known(model: str) -> None:
    info = resolve_model(model)
    assert info.known, model
    assert info.context_window >= 32_000


def test_unknown_model_gets_the_default_window_and_is_flagged() -> None:
    info = resolve_model("my-local-model-7b")
    assert DEFAULT_CONTEXT_WINDOW == 96_000  # seed 003 FR-3.3
    assert info == ModelInfo("my-local-model-7b", 96_000, "default")
    assert not info.known
    assert resolve_model(None) == ModelInfo(None, 96_000, "default")
    assert resolve_model("").match == "default"


def test_context_window_override_wins() -> None:
    info = resolve_model("gpt-4o", context_window=50_000)
    assert info == ModelInfo("gpt-4o", 50_000, "override")
    assert info.known
    assert resolve_model(None, context_window=1234).context_window == 1234


@pytest.mark.parametrize("bad", [0, -1])
def test_context_window_override_must_be_positive(bad: int) -> None:
    with pytest.raises(UsageError, match="context_window must be from 1 to"):
        resolve_model("gpt-4o", context_window=bad)


def test_user_registry_adds_and_overrides_models() -> None:
    registry = {"my-model": 64_000, "gpt-4o": 100_000, "Vendor/Big-Model": 1_000_000}
    assert resolve_model("my-model", registry=registry) == ModelInfo("my-model", 64_000, "exact", "my-model")
    assert resolve_model("my-model-v2", registry=registry).context_window == 64_000
    assert resolve_model("gpt-4o", registry=registry).context_window == 100_000
    assert resolve_model("big-model", registry=registry).context_window == 1_000_000  # key normalized too


# --- registry files ----------------------------------------------------------------------------


def test_registry_file_json(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"my-model": 64000, "other": {"context_window": 32000}}', encoding="utf-8")
    assert load_registry(path) == {"my-model": 64_000, "other": 32_000}


def test_registry_file_toml(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[models]\n"my-model" = 64000\n"my.dotted-model" = { context_window = 32000 }\n', encoding="utf-8"
    )
    assert load_registry(path) == {"my-model": 64_000, "my.dotted-model": 32_000}


def test_registry_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": {"env-model": 12345}}', encoding="utf-8")
    monkeypatch.setenv(REGISTRY_ENV, str(path))
    assert load_registry() == {"env-model": 12_345}
    monkeypatch.delenv(REGISTRY_ENV)
    assert load_registry() == {}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.json", '{"my-model": 64000,}', r"bad\.json: not valid JSON"),
        ("bad.toml", "my-model = = 1", r"bad\.toml: not valid TOML"),
        ("list.json", "[64000]", r"list\.json: expected a mapping of model id to context window"),
        (
            "neg.json",
            '{"m": -5}',
            r"neg\.json: model 'm': context window must be a whole number from 1 to 100,000,000, got -5",
        ),
        (
            "str.json",
            '{"m": "64k"}',
            r"str\.json: model 'm': context window must be a whole number from 1 to 100,000,000, got '64k'",
        ),
        (
            "bool.json",
            '{"m": true}',
            r"model 'm': context window must be a whole number from 1 to 100,000,000, got True",
        ),
        (
            "float.json",
            '{"m": 64000.5}',
            r"model 'm': context window must be a whole number from 1 to 100,000,000",
        ),
    ],
)
def test_bad_registry_files_are_input_errors(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_registry(path)


def test_missing_registry_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.json: no such file"):
        load_registry(tmp_path / "nope.json")


# --- threshold ---------------------------------------------------------------------------------


def test_seed_003_example() -> None:
    """200,000 − 32,000 = 168,000 usable; × 0.6 = 100,800 (seed 003 "Token 阈值计算示例")."""
    budget = make_budget(resolve_model("claude-3-5-sonnet-20241022"))
    assert (DEFAULT_OUTPUT_RESERVE, DEFAULT_RATIO) == (32_000, 0.6)
    assert budget.output_reserve == 32_000
    assert budget.usable == 168_000
    assert budget.threshold == 100_800
    assert budget.label == "cost-first"


def test_explicit_reserve_and_ratio() -> None:
    budget = make_budget(resolve_model("gpt-4o"), output_reserve=8_000, ratio=0.75)
    assert budget.threshold == int((128_000 - 8_000) * 0.75) == 90_000
    assert budget.label == "balanced"


def test_unknown_model_with_the_seed_reserve() -> None:
    budget = make_budget(resolve_model("mystery"), output_reserve=32_000)
    assert budget.threshold == int((96_000 - 32_000) * 0.6) == 38_400


@pytest.mark.parametrize("ratio", [0.4, 0.9, 0.5, 0.75])
def test_ratio_bounds_are_inclusive(ratio: float) -> None:
    budget = make_budget(resolve_model("gpt-4o"), ratio=ratio)
    assert budget.ratio == ratio


@pytest.mark.parametrize("ratio", [0.39, 0.91, 0.0, 1.0, -0.6])
def test_ratio_outside_04_09_is_rejected(ratio: float) -> None:
    with pytest.raises(UsageError, match=r"threshold must be between 0\.4 and 0\.9"):
        make_budget(resolve_model("gpt-4o"), ratio=ratio)


@pytest.mark.parametrize(
    ("ratio", "label"),
    [
        (0.4, "cost-first"),
        (0.6, "cost-first"),
        (0.61, "balanced"),
        (0.75, "balanced"),
        (0.76, "retention"),
        (0.9, "retention"),
    ],
)
def test_strategy_labels_at_the_boundaries(ratio: float, label: str) -> None:
    assert strategy_label(ratio) == label
    assert make_budget(resolve_model("gpt-4o"), ratio=ratio).label == label


def test_default_reserve_is_capped_for_small_windows() -> None:
    """gpt-4's 8K window: 32,000 would leave nothing, so the default is a quarter of it."""
    budget = make_budget(resolve_model("gpt-4"))
    assert budget.output_reserve == 8_192 // 4 == 2_048
    assert budget.threshold == int((8_192 - 2_048) * 0.6)
    assert budget.threshold > 0
    assert make_budget(resolve_model("gpt-3.5-turbo")).output_reserve == 16_385 // 4
    # Windows of 128K and more get the full 32,000.
    assert make_budget(resolve_model("gpt-4o")).output_reserve == 32_000


def test_explicit_reserve_is_taken_as_given_but_must_leave_room() -> None:
    assert make_budget(resolve_model("gpt-4"), output_reserve=4_000).output_reserve == 4_000
    assert make_budget(resolve_model("gpt-4o"), output_reserve=0).threshold == int(128_000 * 0.6)
    with pytest.raises(UsageError, match="leaves no room for input"):
        make_budget(resolve_model("gpt-4"), output_reserve=8_192)
    with pytest.raises(UsageError, match="must not be negative"):
        make_budget(resolve_model("gpt-4o"), output_reserve=-1)


def test_budget_check_remaining_and_verdict() -> None:
    budget = make_budget(resolve_model("claude-sonnet-4-5"))  # threshold 100,800
    under = BudgetCheck(100_799, budget)
    at = BudgetCheck(100_800, budget)
    over = BudgetCheck(150_000, budget)
    assert not under.needs_compaction
    assert under.remaining == 1
    assert at.needs_compaction  # reaching the threshold is enough
    assert at.remaining == 0
    assert over.remaining == -49_200
    assert over.usage == pytest.approx(150_000 / 100_800)
    assert over.window_share == pytest.approx(0.75)


def test_default_reserve_is_the_seeds_32000_for_the_unknown_model_window() -> None:
    budget = make_budget(resolve_model("some-private-model"))
    assert (budget.model.context_window, budget.output_reserve, budget.threshold) == (96_000, 32_000, 38_400)


@pytest.mark.parametrize(
    "model", ["meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1:8b", "ollama/llama3.3:70b"]
)
def test_hugging_face_and_ollama_ids_find_their_family(model: str) -> None:
    info = resolve_model(model)
    assert info.known and info.context_window == 131_072


@given(
    amount=st.integers(min_value=0, max_value=10**8),
    ratio=st.floats(min_value=RATIO_RANGE[0], max_value=RATIO_RANGE[1])
    | st.decimals("0.4", "0.9", places=4).map(float),
)
def test_the_threshold_is_exact_decimal_arithmetic(amount: int, ratio: float) -> None:
    """⌊amount × ratio⌋ with the ratio read as it prints (0.7 is 7/10), as Fraction computes it."""
    assert decimal_share(amount, ratio) == math.floor(Fraction(amount) * Fraction(repr(ratio)))
    assert decimal_share(168_000, 0.7) == 117_600
