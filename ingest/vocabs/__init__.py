"""Real tokenizers of the papers' model families, without a model hub: llama.cpp's GGUF vocabularies from the
package registry (`llamacpp.py`) rebuilt as each family's Hugging Face tokenizer (`gguf.py`)."""
