"""Generation: the five PropMe settings on pluggable backends (transformers on CPU, vLLM on GPU)."""
