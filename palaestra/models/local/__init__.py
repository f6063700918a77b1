"""The embedded model: a GGUF file run in this process by llama.cpp (the ``local`` backend).

``model`` holds the asyncio-facing ``LocalModel``; ``engine`` the llama.cpp side (imported on
first load, never here); ``prompt`` the ChatML tool-calling prompt and ``request`` the reading
of request bodies. Importing this package does not import llama_cpp.
"""

from __future__ import annotations

from palaestra.models.local.model import LocalModel, default_model_path, model_name

__all__ = ["LocalModel", "default_model_path", "model_name"]
