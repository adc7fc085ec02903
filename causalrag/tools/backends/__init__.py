"""LLM backends: peers behind one protocol, chosen by the factory in :mod:`causalrag.tools.llm`.

* :mod:`~causalrag.tools.backends.base` — the :class:`~causalrag.tools.backends.base.LLM` protocol
  (generate, stream, log-prob scoring, yes-probability) and what every backend shares (the yes/no
  word lists, ``truncate_at_stop``, ``reduce_logprobs``, the bundled GGUF file, the device);
* :mod:`~causalrag.tools.backends.transformers` — a local Hugging Face model (the default);
* :mod:`~causalrag.tools.backends.llamacpp` — the GGUF file through llama.cpp (fast on a CPU);
* :mod:`~causalrag.tools.backends.openai` — an OpenAI-compatible server (vLLM, TGI, llama.cpp's server);
* :mod:`~causalrag.tools.backends.chat_model` — LangChain chat models as backends, and backends as
  LangChain chat models.

A backend builds on ``base``, ``causalrag.tools.usage`` (its cost counters) and shared pieces
(``causalrag.tools.coalesce``, ``causalrag.config``, ``causalrag.errors``), never on another backend
or the factory. To add one: write one module here with a class that implements the protocol, and
add one line to :func:`causalrag.tools.llm.load_llm` (plus its name in ``BACKENDS``).
"""
