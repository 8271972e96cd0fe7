"""``models``: the context windows ctxcompact knows and each model's list prices, with sources."""

from __future__ import annotations

import typer

from ctxcompact.cli.common import reports_errors
from ctxcompact.cli.options import Json, ModelsFile
from ctxcompact.cli.streams import streams_for


@reports_errors
def models(ctx: typer.Context, models_file: ModelsFile = None, as_json: Json = False) -> None:
    """Which models do I know? Context windows (built-in or your --models-file) and list prices.

    Prices are USD per million tokens from the genai-prices package (its bundled data, in force
    today): input, output, cache reads and cache writes; a * marks a price that rises for long
    prompts. Windows decide check's threshold; prices only the estimated costs that count
    --timeline and sessions show.

    \b
    Examples:
      ctxcompact models
      ctxcompact models --json | jq '.models[] | select(.model | startswith("claude"))'
    """
    from ctxcompact.accounting.models_table import known_models
    from ctxcompact.accounting.prices import price_source
    from ctxcompact.accounting.windows import load_registry

    streams = streams_for(ctx)
    rows = known_models(load_registry(models_file), models_file=str(models_file) if models_file else None)
    if as_json:
        from ctxcompact.output.json import models_json

        streams.write_json(models_json(rows, source=price_source()))
        return
    from ctxcompact.output.text import models_report

    streams.report(models_report(rows, source=price_source()))
