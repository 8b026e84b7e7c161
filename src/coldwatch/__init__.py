"""coldwatch: watch an LLM server's cold start until it is ready, failed or stuck."""

__version__ = "0.1.0"
