"""A transformer domain classifier (torch + transformers): fine-tuned from a local checkpoint, or from scratch.

- `checkpoint=PATH`: a local folder with a sequence-classification-capable model and its tokenizer (the
  paper's recipe: DistilBERT, 3 epochs, lr 2e-5, max_len 256). The classification head is re-initialised
  for the K domains (`ignore_mismatched_sizes`). Nothing is downloaded (`local_files_only`).
- no checkpoint: a small DistilBERT-architecture model trained from scratch (the paper's "DistilBERT
  architecture trained from scratch" ablation), with a byte-level BPE tokenizer trained on the *training*
  texts of each fit (a fold model's tokenizer never saw its held-out fold either).

Training: AdamW (weight decay 0.01), linear decay without warm-up (the Hugging Face Trainer default of the
recipe), batch `batch_size`, texts truncated to `max_len` tokens, seeded shuffling and initialisation.
Runs on CUDA when available (`device="auto"`), else CPU. Saved with `save_pretrained` (model + tokenizer)
under `model/` plus backend.json.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ingest.classify.interface import Backend, StepHook, register_backend
from ingest.errors import UserError

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load reports and shard progress bars (our own bar shows progress; the expected
    'classifier head re-initialised' report of a fine-tune is recorded in the classifier's params instead)."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@register_backend
class TransformerBackend(Backend):
    name = "transformer"

    def __init__(self, n_domains: int, seed: int = 0, checkpoint: str | None = None, epochs: int = 3,
                 lr: float | None = None, max_len: int = 256, batch_size: int = 16, weight_decay: float = 0.01,
                 vocab_size: int = 8000, dim: int = 128, n_layers: int = 2, n_heads: int = 2,
                 device: str = "auto"):
        super().__init__(n_domains, seed)
        self.checkpoint = str(Path(checkpoint).expanduser().resolve()) if checkpoint else None
        self.epochs = int(epochs)
        # paper recipe: 2e-5 when fine-tuning; a from-scratch model needs a far larger step
        self.lr = float(lr) if lr is not None else (2e-5 if self.checkpoint else 5e-4)
        self.max_len = int(max_len)
        self.batch_size = int(batch_size)
        self.weight_decay = float(weight_decay)
        self.vocab_size = int(vocab_size)
        self.dim = int(dim)
        self.n_layers = int(n_layers)
        self.n_heads = int(n_heads)
        self.device = str(device)
        if self.checkpoint and not Path(self.checkpoint).is_dir():
            raise UserError(f"--checkpoint {self.checkpoint}: not a folder; give a local model folder "
                            "(config.json, weights, tokenizer files)")
        if self.epochs < 1 or self.max_len < 8 or self.batch_size < 1:
            raise UserError("transformer: epochs >= 1, max_len >= 8 and batch_size >= 1 are required")
        self.model_ = None
        self.tokenizer_ = None

    # -- building ------------------------------------------------------------------------------------------
    def _scratch_tokenizer(self, texts: Sequence[str]):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast

        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=self.vocab_size, special_tokens=SPECIALS, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        # only the start of each text is ever seen by the model: train the vocabulary on that part
        tok.train_from_iterator([t[: self.max_len * 8] for t in texts], trainer)
        return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                       cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                       model_max_length=self.max_len)

    def _build(self, texts: Sequence[str]):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, DistilBertConfig
        from transformers import DistilBertForSequenceClassification

        torch.manual_seed(self.seed)
        labels = {str(i): i for i in range(self.n_domains)}
        if self.checkpoint:
            try:
                with _quiet_transformers():
                    tokenizer = AutoTokenizer.from_pretrained(self.checkpoint, local_files_only=True)
                    model = AutoModelForSequenceClassification.from_pretrained(
                        self.checkpoint, num_labels=self.n_domains, ignore_mismatched_sizes=True,
                        local_files_only=True, id2label={i: str(i) for i in range(self.n_domains)}, label2id=labels)
            except (OSError, ValueError) as exc:
                raise UserError(f"--checkpoint {self.checkpoint}: cannot load a sequence classifier "
                                f"({str(exc).splitlines()[0]})") from None
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
                model.config.pad_token_id = tokenizer.pad_token_id
        else:
            tokenizer = self._scratch_tokenizer(texts)
            cfg = DistilBertConfig(vocab_size=len(tokenizer), max_position_embeddings=self.max_len, dim=self.dim,
                                   n_layers=self.n_layers, n_heads=self.n_heads, hidden_dim=4 * self.dim,
                                   num_labels=self.n_domains, pad_token_id=tokenizer.pad_token_id,
                                   id2label={i: str(i) for i in range(self.n_domains)}, label2id=labels)
            model = DistilBertForSequenceClassification(cfg)
        return tokenizer, model

    def _encode(self, texts: Sequence[str]):
        # characters beyond max_len * 16 can never survive truncation: cut them before tokenising
        return self.tokenizer_([t[: self.max_len * 16] for t in texts], truncation=True, max_length=self.max_len,
                               padding=True, return_tensors="pt")

    def steps(self, n_texts: int) -> int:
        return self.epochs * max(1, -(-n_texts // self.batch_size))

    # -- training and scoring ---------------------------------------------------------------------------
    def fit(self, texts: Sequence[str], labels: np.ndarray, on_step: StepHook = None) -> TransformerBackend:
        import torch
        from transformers import get_linear_schedule_with_warmup

        texts = list(texts)
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        self.tokenizer_, self.model_ = self._build(texts)
        dev = _device(self.device)
        model = self.model_.to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        total = self.steps(len(texts))
        sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=0, num_training_steps=total)
        gen = torch.Generator().manual_seed(self.seed)
        step = 0
        model.train()
        for _ in range(self.epochs):
            order = torch.randperm(len(texts), generator=gen).tolist()
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                enc = self._encode([texts[i] for i in idx]).to(dev)
                out = model(**enc, labels=y[idx].to(dev))
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                step += 1
                if on_step:
                    on_step(step, total)
        model.eval()
        return self

    def logits(self, texts: Sequence[str], on_step: StepHook = None) -> np.ndarray:
        import torch

        if self.model_ is None:
            raise RuntimeError("transformer backend is not fitted")
        dev = _device(self.device)
        model = self.model_.to(dev).eval()
        texts = list(texts)
        out = np.empty((len(texts), self.n_domains))
        bs = max(self.batch_size, 32)
        # sort by length so that a batch pads little; results go back to the input order
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), bs):
                idx = order[start:start + bs]
                enc = self._encode([texts[i] for i in idx]).to(dev)
                out[idx] = model(**enc).logits.float().cpu().numpy()
                if on_step:
                    on_step(min(start + bs, len(texts)), len(texts))
        return out

    def save(self, path: Path) -> None:
        with _quiet_transformers():
            self.model_.save_pretrained(Path(path) / "model")
            self.tokenizer_.save_pretrained(Path(path) / "model")
        self._write_meta(path)

    @classmethod
    def load(cls, path: Path) -> TransformerBackend:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        meta = cls._read_meta(path)
        params = dict(meta["params"])
        ckpt = params.pop("checkpoint", None)
        obj = cls(n_domains=meta["n_domains"], seed=meta["seed"], **params)
        obj.checkpoint = ckpt  # provenance only: the weights come from the saved folder
        with _quiet_transformers():
            obj.tokenizer_ = AutoTokenizer.from_pretrained(Path(path) / "model", local_files_only=True)
            obj.model_ = AutoModelForSequenceClassification.from_pretrained(Path(path) / "model",
                                                                            local_files_only=True)
        obj.model_.eval()
        return obj
