"""Fidelity probes: deterministic facts from the compacted-away part, and how they are scored."""

from __future__ import annotations

import copy

from ir_builders import msg, result, text, use

from ctxcompact.evaluation.probes import (
    PROBE_KINDS,
    Probe,
    context_text,
    extract_probes,
    normalise,
    score_probes,
)

SESSION = [
    msg(
        "user",
        text(
            "<system-reminder>You must ignore this.</system-reminder>Speed up `load_config` in "
            "src/config.py; it takes 30 s. You must not change the public API. 必须保留测试。 "
            "See https://example.com/issue/7."
        ),
    ),
    msg(
        "assistant",
        text("I'll read `load_config` first; `load_config` parses YAML."),
        use("a", "Read", file_path="src/config.py"),
    ),
    msg("user", result("a", "def load_config(): ...")),
    msg(
        "assistant", use("b", "Bash", command="sed -i 's/yaml.load/yaml.safe_load/' src/config.py && pytest")
    ),
    msg("user", result("b", "Traceback (most recent call last):\nKeyError: 'path'", is_error=True)),
    msg("user", text("Also never touch the docs.")),
    msg("assistant", text("Fixed the key. Next I will run the benchmark again.")),
]


def kinds(probes: tuple[Probe, ...], kind: str) -> list[str]:
    return [p.text for p in probes if p.kind == kind]


def test_every_kind_is_extracted_and_boilerplate_is_not() -> None:
    probes = extract_probes(SESSION)
    assert kinds(probes, "path") == ["src/config.py"]
    assert kinds(probes, "identifier") == ["load_config"]
    assert kinds(probes, "number") == ["30 s"]
    assert kinds(probes, "error") == ["KeyError"]
    assert kinds(probes, "url") == ["https://example.com/issue/7"]
    assert kinds(probes, "instruction") == [
        "You must not change the public API.",
        "必须保留测试。",
        "Also never touch the docs.",
    ]
    assert kinds(probes, "last_request") == ["Also never touch the docs."]
    assert kinds(probes, "next_step") == ["Next I will run the benchmark again."]
    assert not any("ignore this" in p.text for p in probes)


def test_extraction_is_deterministic_and_leaves_the_input_alone() -> None:
    snapshot = copy.deepcopy([m.content for m in SESSION])
    assert extract_probes(SESSION) == extract_probes(SESSION)
    assert [m.content for m in SESSION] == snapshot


def test_normalisation_ignores_case_quotes_and_separators() -> None:
    assert normalise('Run `Make Test`  in "C:\\Repo\\src"') == "run make test in c:/repo/src"


def test_scores_per_kind_overall_and_lost_probes() -> None:
    probes = extract_probes(SESSION)
    summary = (
        "Task: speed up LOAD_CONFIG in `src/config.py` (30 s); never touch the docs. "
        "Error: keyerror. You must not change the public API."
    )
    report = score_probes(probes, summary)
    assert report.score("path") == 1.0
    assert report.score("error") == 1.0
    assert report.score("url") == 0.0
    assert report.score("next_step") == 0.0
    assert [k.kind for k in report.kinds] == list(PROBE_KINDS)
    assert report.total == len(probes) and report.kept + len(report.lost) == report.total
    assert Probe("url", "https://example.com/issue/7") in report.lost
    assert report.overall == report.kept / report.total


def test_a_restored_file_keeps_its_path_probe() -> None:
    report = score_probes([Probe("path", "src/config.py")], "nothing here", restored=["/repo/src/config.py"])
    assert report.score("path") == 1.0


def test_a_paraphrased_sentence_is_kept_a_lost_one_is_not() -> None:
    probe = Probe("instruction", "You must not change the public API of the loader.")
    assert (
        score_probes([probe], "Constraint: the public API of the loader must not change.").score(
            "instruction"
        )
        == 1.0
    )
    assert score_probes([probe], "Constraint: keep it fast.").score("instruction") == 0.0


def test_context_text_reads_tool_inputs_and_results() -> None:
    out = context_text(SESSION)
    assert "src/config.py" in out and "KeyError" in out and "safe_load" in out


def test_kinds_without_probes_have_no_score() -> None:
    report = score_probes([], "x")
    assert report.overall is None and report.score("path") is None
