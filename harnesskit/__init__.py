"""harnesskit: trustworthy JSONL session ledgers for LLM agent harnesses."""

__version__ = "0.1.0"
