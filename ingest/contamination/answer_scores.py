"""A per-item score of a model for a sampled benchmark: the mean log-probability of the answer's tokens
given the input (higher is better), as likelihood-based harnesses score an answer. The input is cut to its
last tokens when input and answer do not fit the model's context together. Used by
`lmaudit contamination-sample --model`, so the sandbox recipe has scores to compare on clean and
contaminated items (fct_contamination_scores)."""

from __future__ import annotations

from dataclasses import replace

from ingest.contamination.items import BenchItem
from ingest.errors import UserError


def score_items(model: str, items: list[BenchItem]) -> list[BenchItem]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(model)
        lm = AutoModelForCausalLM.from_pretrained(model).eval()
    except (OSError, ValueError) as e:
        raise UserError(f"cannot load model {model!r} ({str(e).splitlines()[0]}); pass a local folder "
                        "written by save_pretrained") from None
    ctx = getattr(lm.config, "n_positions", None) or getattr(lm.config, "max_position_embeddings", None) or 2048
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    out = []
    with torch.inference_mode():
        for it in items:
            a = tok.encode(it.answer, add_special_tokens=False)[:ctx - 2]
            i = tok.encode(it.input, add_special_tokens=False)[-(ctx - 1 - len(a)):]
            ids = torch.tensor([[start, *i, *a]])
            logits = lm(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
            logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)
            target = ids[0, 1:]
            lp = logp[torch.arange(len(target)), target][-len(a):]
            out.append(replace(it, score=float(lp.mean())))
    return out
