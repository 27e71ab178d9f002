"""Bring data made elsewhere (e.g. existing vLLM outputs) into the lake."""
