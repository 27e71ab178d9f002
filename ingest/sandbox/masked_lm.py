"""A tiny masked language model for the Neighbor baseline's masked-LM neighbours (`lmaudit score --methods
neighbor --neighbor-model PATH`) on the sandbox, where no BERT can be downloaded.

Why its own model: the Neighbor paper (Mattern et al., 2023) fills masked words with a masked LM; a test or
a sandbox run needs one that loads through `AutoModelForMaskedLM` / `AutoTokenizer` like a real BERT, in
seconds on a CPU. A word-level vocabulary (whitespace words of the given texts, most frequent first) keeps
each masked word one token, and a few hundred MLM steps on those texts make its fills depend on context.
It is a stand-in for plumbing and tests, not a model whose neighbours mean much.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_masked_lm(texts: Sequence[str], out_dir: str | Path, vocab_size: int = 2000, steps: int = 200,
                    seed: int = 0, max_length: int = 128) -> Path:
    """Train a 1-layer BertForMaskedLM (hidden size 32) on `texts` for `steps` batches of 8 (15% masking)
    and save it with its tokenizer (save_pretrained) under `out_dir`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    counts = Counter(w for t in texts for w in t.split())
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:max(vocab_size - len(SPECIALS), 0)]
    vocab = {w: i for i, w in enumerate(SPECIALS + words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                  sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_length)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=max_length)
    model = BertForMaskedLM(cfg)
    enc = [tok(t, truncation=True, max_length=max_length)["input_ids"] for t in texts if t.split()]
    if enc and steps > 0:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        gen = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(steps):
            pick = torch.randint(len(enc), (8,), generator=gen).tolist()
            width = max(len(enc[i]) for i in pick)
            ids = torch.tensor([enc[i] + [vocab["[PAD]"]] * (width - len(enc[i])) for i in pick])
            attn = (ids != vocab["[PAD]"]).long()
            special = ids < len(SPECIALS)
            chosen = (torch.rand(ids.shape, generator=gen) < 0.15) & ~special
            if not chosen.any():  # nothing to predict: the loss would be NaN
                continue
            labels = torch.where(chosen, ids, torch.full_like(ids, -100))
            loss = model(input_ids=ids.masked_fill(chosen, vocab["[MASK]"]), attention_mask=attn, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    model.save_pretrained(out)
    return out
