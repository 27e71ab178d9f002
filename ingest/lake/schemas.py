"""Typed Arrow schemas of the raw tables (the data contract; docs/warehouse.md explains every column).

Only `ingest` writes these tables; dbt staging models read them. A column that is not nullable here is
checked before anything is written, so a broken row never reaches the lake.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")
SETTINGS = ("unconditional", "minimal_cue", "generic", "specific", "prefix")  # PropMe's five settings
MIXTURE_SETTINGS = ("neutral",  # lmaudit's 36 neutral prefixes; below, LLMSurgeon's prompt styles (mixture sampling)
                    "llmsurgeon_neutral", "llmsurgeon_instructional", "llmsurgeon_expository",
                    "llmsurgeon_conversational", "llmsurgeon_coding", "llmsurgeon_category")
ALL_SETTINGS = SETTINGS + MIXTURE_SETTINGS
PURPOSES = ("propme", "mixture", "other")  # what a run is for: PropMe marts read only propme runs


def _f(name: str, typ: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, typ, nullable=nullable)


@dataclass(frozen=True)
class TableSpec:
    name: str
    key: str  # the deterministic key column (hash of `natural_key`)
    natural_key: tuple[str, ...]
    schema: pa.Schema
    description: str


_SPECS = [
    TableSpec("corpora", "corpus_id", ("name",), pa.schema([
        _f("corpus_id", pa.string(), False), _f("name", pa.string(), False),
        _f("tokenizer", pa.string()), _f("token_dtype", pa.string()), _f("vocab_size", pa.int64()),
        _f("eos_token_id", pa.int64()), _f("n_docs", pa.int64()), _f("n_tokens", pa.int64()),
        _f("n_shards", pa.int32()), _f("index_dirs", pa.list_(pa.string())),
        _f("manifest_hash", pa.string()), _f("registered_at", TS),
    ]), "one indexed training corpus"),
    TableSpec("runs", "run_id", ("run_id",), pa.schema([
        _f("run_id", pa.string(), False), _f("model", pa.string(), False), _f("revision", pa.string()),
        _f("corpus_id", pa.string()), _f("setting", pa.string(), False), _f("backend", pa.string()),
        _f("temperature", pa.float64()), _f("top_p", pa.float64()), _f("max_new_tokens", pa.int32()),
        _f("n_samples", pa.int32()), _f("seed_base", pa.int64()), _f("sampling_params", pa.string()),
        _f("source", pa.string()), _f("code_version", pa.string()),
        _f("started_at", TS), _f("finished_at", TS),
        _f("purpose", pa.string()), _f("tokenizer", pa.string()),
    ]), "one generation run (a model, a setting, sampling parameters)"),
    TableSpec("prompts", "prompt_id", ("setting", "text"), pa.schema([
        _f("prompt_id", pa.string(), False), _f("setting", pa.string(), False), _f("language", pa.string()),
        _f("text", pa.string()), _f("source", pa.string()), _f("corpus_id", pa.string()),
        _f("source_doc", pa.string()), _f("true_continuation", pa.string()),
        _f("leakage_outcome", pa.string()), _f("leakage_reason", pa.string()),
        _f("token_ids", pa.list_(pa.int64())), _f("tokenizer", pa.string()),
        _f("prompt_set", pa.string()), _f("created_at", TS),
    ]), "one prompt of a setting"),
    TableSpec("prompt_closeness", "closeness_id", ("prompt_set", "item_group", "item_id", "text"), pa.schema([
        _f("closeness_id", pa.string(), False), _f("prompt_set", pa.string(), False), _f("corpus_id", pa.string()),
        _f("item_group", pa.string(), False), _f("item_id", pa.string(), False), _f("source", pa.string()),
        _f("text", pa.string()), _f("n_tokens", pa.int32()), _f("similarity", pa.float64(), False),
        _f("selection_score", pa.float64()), _f("embedder", pa.string()), _f("n_reference_docs", pa.int64()),
        _f("reference_seed", pa.int64()), _f("created_at", TS),
    ]), "an item's cosine similarity to its nearest document of a training sample (specific-prompt closeness)"),
    TableSpec("generations", "generation_id", ("run_id", "prompt_id", "sample_idx"), pa.schema([
        _f("generation_id", pa.string(), False), _f("run_id", pa.string(), False),
        _f("prompt_id", pa.string()), _f("sample_idx", pa.int32(), False), _f("seed", pa.int64()),
        _f("text", pa.string(), False), _f("n_tokens", pa.int32()), _f("finish_reason", pa.string()),
    ]), "one generated sample (the continuation only, never the prompt)"),
    TableSpec("trace_runs", "trace_id", ("index_dir", "mode", "params"), pa.schema([
        _f("trace_id", pa.string(), False), _f("corpus_id", pa.string()), _f("index_dir", pa.string()),
        _f("mode", pa.string(), False), _f("params", pa.string()), _f("code_version", pa.string()),
        _f("started_at", TS), _f("finished_at", TS),
    ]), "one tracing pass with all tracer parameters"),
    TableSpec("traced_generations", "traced_generation_id", ("trace_id", "generation_id"), pa.schema([
        _f("traced_generation_id", pa.string(), False), _f("trace_id", pa.string(), False),
        _f("generation_id", pa.string(), False), _f("text_hash", pa.string(), False),
        _f("n_index_tokens", pa.int32(), False),
    ]), "a generation a tracing pass covered: the text it traced (hash) and its length in index tokens"),
    TableSpec("spans", "span_id", ("trace_id", "generation_id", "start_tok", "end_tok"), pa.schema([
        _f("span_id", pa.string(), False), _f("trace_id", pa.string(), False),
        _f("generation_id", pa.string(), False), _f("start_tok", pa.int32(), False),
        _f("end_tok", pa.int32(), False), _f("length", pa.int32(), False), _f("count", pa.int64()),
        _f("unigram_logprob", pa.float64()), _f("kept", pa.bool_()), _f("merged", pa.bool_()),
        _f("is_full", pa.bool_()), _f("text", pa.string()),
    ]), "a maximal matching span of a generation"),
    TableSpec("span_documents", "span_document_id", ("span_id", "shard", "doc_ix"), pa.schema([
        _f("span_document_id", pa.string(), False), _f("span_id", pa.string(), False),
        _f("shard", pa.int32(), False), _f("doc_ix", pa.int64(), False), _f("doc_id", pa.string()),
        _f("source", pa.string()), _f("domain", pa.string()), _f("metadata", pa.string()),
        _f("window_text", pa.string()), _f("match_tier", pa.string()), _f("nv_recall", pa.float64()),
        _f("nv_matched_words", pa.int32()), _f("nv_generation_words", pa.int32()),
        _f("nv_document_words", pa.int32()),
    ]), "a training document retrieved for a span"),
    TableSpec("span_counts", "span_id", ("span_id",), pa.schema([
        _f("span_id", pa.string(), False), _f("first50_count", pa.int64()), _f("whole_count", pa.int64()),
        _f("trim_start", pa.int32()), _f("trim_end", pa.int32()),
    ]), "occurrence counts of a long span"),
    TableSpec("reference_docs", "ref_doc_id", ("source", "doc_id"), pa.schema([
        _f("ref_doc_id", pa.string(), False), _f("domain", pa.string(), False), _f("text", pa.string(), False),
        _f("split", pa.string()), _f("fold", pa.int32()), _f("source", pa.string()), _f("doc_id", pa.string()),
    ]), "a labelled reference document for the domain classifier"),
    TableSpec("classifiers", "classifier_id", ("name",), pa.schema([
        _f("classifier_id", pa.string(), False), _f("name", pa.string()), _f("backend", pa.string(), False),
        _f("params", pa.string()), _f("domains", pa.list_(pa.string())), _f("temperature", pa.float64()),
        _f("fitted_on", pa.string()), _f("created_at", TS),
    ]), "a trained domain classifier"),
    TableSpec("classifier_outputs", "output_id", ("classifier_id", "item_id"), pa.schema([
        _f("output_id", pa.string(), False), _f("classifier_id", pa.string(), False),
        _f("item_id", pa.string(), False), _f("item_kind", pa.string(), False), _f("fold", pa.int32()),
        _f("probs", pa.list_(pa.float64())), _f("text_hash", pa.string()),
    ]), "a classifier's posterior for one item (probabilities in the classifier's domain order)"),
    TableSpec("mixtures_documented", "mixture_id", ("model", "domain"), pa.schema([
        _f("mixture_id", pa.string(), False), _f("model", pa.string(), False),
        _f("domain", pa.string(), False), _f("weight", pa.float64(), False), _f("source", pa.string()),
    ]), "a documented training-mixture weight"),
    TableSpec("text_scores", "score_id", ("model", "item_kind", "item_id", "text_hash"), pa.schema([
        _f("score_id", pa.string(), False), _f("model", pa.string(), False), _f("item_id", pa.string(), False),
        _f("item_kind", pa.string(), False), _f("text_hash", pa.string(), False), _f("n_tokens", pa.int32()),
        _f("truncated", pa.bool_()), _f("loss", pa.float64()), _f("zlib_loss", pa.float64()),
        _f("mink", pa.float64()), _f("minkpp", pa.float64()), _f("ref_model", pa.string()),
        _f("ref_loss", pa.float64()), _f("token_logprobs", pa.list_(pa.float32())), _f("params", pa.string()),
    ]), "a text's token log-probabilities under a model and the membership-inference scores built on them"),
    TableSpec("text_method_scores", "method_score_id",
              ("model", "item_kind", "item_id", "text_hash", "method", "scoring"), pa.schema([
                  _f("method_score_id", pa.string(), False), _f("model", pa.string(), False),
                  _f("item_id", pa.string(), False), _f("item_kind", pa.string(), False),
                  _f("text_hash", pa.string(), False), _f("method", pa.string(), False),
                  _f("scoring", pa.string(), False), _f("n_tokens", pa.int32()), _f("raw_score", pa.float64()),
                  _f("member_score", pa.float64()), _f("params", pa.string()),
              ]), "one membership-inference method's score of a text under a model (DC-PDD, ReCaLL, GradNorm, "
              "Joint-Logit, Neighbor: the baselines that need more than token log-probabilities)"),
    TableSpec("tokenizer_mixture_estimates", "estimate_id", ("model", "domain"), pa.schema([
        _f("estimate_id", pa.string(), False), _f("model", pa.string(), False), _f("tokenizer", pa.string()),
        _f("tokenizer_sha256", pa.string()), _f("domain", pa.string(), False), _f("estimate", pa.float64()),
        _f("ci_low", pa.float64()), _f("ci_high", pa.float64()), _f("n_merges_used", pa.int64()),
        _f("n_merges_total", pa.int64()), _f("n_reference_docs", pa.int64()), _f("reference_bytes", pa.int64()),
        _f("n_constraints", pa.int64()), _f("objective", pa.float64()), _f("solver_status", pa.string()),
        _f("n_boot", pa.int64()), _f("n_boot_failed", pa.int64()), _f("seed", pa.int64()),
        _f("ci_level", pa.float64()), _f("reference_source", pa.string()), _f("params", pa.string()),
        _f("created_at", TS),
    ]), "a training-mixture share inferred from a BPE tokenizer's merge list (bpe_merges)"),
    TableSpec("mixture_sweeps", "sweep_row_id", ("study", "model", "axis", "value", "estimator", "domain"), pa.schema([
        _f("sweep_row_id", pa.string(), False), _f("study", pa.string(), False), _f("model", pa.string(), False),
        _f("axis", pa.string(), False), _f("value", pa.string(), False), _f("value_num", pa.float64()),
        _f("estimator", pa.string(), False), _f("domain", pa.string(), False), _f("estimate", pa.float64()),
        _f("truth", pa.float64()), _f("target_domain", pa.string()), _f("run_id", pa.string()),
        _f("backend", pa.string()), _f("n_reference", pa.int64()), _f("n_generations", pa.int64()),
        _f("temperature", pa.float64()), _f("oof_accuracy", pa.float64()), _f("condition_number", pa.float64()),
        _f("solver_status", pa.string()), _f("null_reason", pa.string()), _f("truth_source", pa.string()),
        _f("params", pa.string()), _f("seconds", pa.float64()), _f("created_at", TS),
    ]), "one estimator's share of one domain at one grid point of a mixture ablation (lmaudit mixture sweep / inject)"),
    TableSpec("contamination_items", "item_row_id", ("benchmark", "trace_id", "item_id"), pa.schema([
        _f("item_row_id", pa.string(), False), _f("benchmark", pa.string(), False),
        _f("trace_id", pa.string(), False), _f("corpus_id", pa.string()), _f("item_id", pa.string(), False),
        _f("input_text", pa.string(), False), _f("answer_text", pa.string(), False), _f("score", pa.float64()),
        _f("input_tokens", pa.int32(), False), _f("answer_tokens", pa.int32(), False),
        _f("source", pa.string()), _f("created_at", TS),
    ]), "one benchmark item traced against a corpus (lmaudit contamination): its texts, lengths in index tokens, score"),
    TableSpec("contamination_spans", "span_row_id", ("benchmark", "trace_id", "item_id", "part", "start_tok", "end_tok"),
              pa.schema([
                  _f("span_row_id", pa.string(), False), _f("benchmark", pa.string(), False),
                  _f("trace_id", pa.string(), False), _f("item_id", pa.string(), False),
                  _f("part", pa.string(), False), _f("start_tok", pa.int32(), False),
                  _f("end_tok", pa.int32(), False), _f("length", pa.int32(), False), _f("count", pa.int64()),
                  _f("text", pa.string()),
              ]), "a maximal span of a benchmark item's input or answer found in the corpus (any length)"),
    TableSpec("contamination_attacks", "attack_id", ("benchmark", "item_id", "model"), pa.schema([
        _f("attack_id", pa.string(), False), _f("benchmark", pa.string(), False),
        _f("item_id", pa.string(), False), _f("item_hash", pa.string(), False), _f("model", pa.string(), False),
        _f("continuation", pa.string(), False),
        _f("n_tokens", pa.int32()), _f("max_new_tokens", pa.int32()), _f("prompt_tokens", pa.int32()),
        _f("answer_prefix_share", pa.float64()),
        _f("reproduced", pa.bool_(), False), _f("created_at", TS),
    ]), "a model's greedy continuation of a benchmark item's input, and whether it reproduces the answer"),
    TableSpec("mia_labels", "label_id", ("corpus", "item_kind", "item_id", "text_hash"), pa.schema([
        _f("label_id", pa.string(), False), _f("corpus", pa.string(), False), _f("item_kind", pa.string(), False),
        _f("item_id", pa.string(), False), _f("text_hash", pa.string(), False), _f("text", pa.string(), False),
        _f("domain", pa.string(), False), _f("source", pa.string(), False), _f("label", pa.string(), False),
        _f("reason", pa.string()), _f("n_tokens", pa.int64()), _f("longest_match", pa.int64()),
        _f("n_windows", pa.int64()), _f("n_windows_found", pa.int64()), _f("window_tokens", pa.int64()),
        _f("params", pa.string()), _f("created_at", TS),
    ]), "a membership-inference benchmark candidate labelled member / non_member / ambiguous by exact lookup in a "
        "corpus's index (lmaudit mia-benchmark label)"),
    TableSpec("document_sets", "document_set_row_id", ("document_set", "corpus_id", "doc_ix"), pa.schema([
        _f("document_set_row_id", pa.string(), False), _f("document_set", pa.string(), False),
        _f("corpus_id", pa.string(), False), _f("shard", pa.int32(), False), _f("doc_ix", pa.int64(), False),
        _f("doc_id", pa.string()), _f("source", pa.string()), _f("domain", pa.string()), _f("path", pa.string()),
        _f("metadata", pa.string()), _f("selection", pa.string(), False), _f("prompt_set", pa.string()),
        _f("created_at", TS),
    ]), "a training document of a named document set (a rightsholder's documents; lmaudit audit documents)"),
    TableSpec("document_provenance", "provenance_id", ("corpus_key", "doc_ix"), pa.schema([
        _f("provenance_id", pa.string(), False), _f("corpus_key", pa.string(), False), _f("corpus_id", pa.string()),
        _f("index_dir", pa.string()), _f("shard", pa.int32()), _f("doc_ix", pa.int64(), False),
        _f("doc_id", pa.string()), _f("doc_tokens", pa.int64()), _f("doc_chars", pa.int64()),
        _f("text_hash", pa.string()), _f("source", pa.string()), _f("path", pa.string()), _f("url", pa.string()),
        _f("repository", pa.string()), _f("licence_declared", pa.string()), _f("licence_declared_spdx", pa.string()),
        _f("licence_detected", pa.string()), _f("licence_ids", pa.list_(pa.string())),
        _f("licence_evidence", pa.string()), _f("licence_coverage", pa.float64()),
        _f("licence_text_truncated", pa.bool_()), _f("metadata", pa.string()), _f("detector", pa.string()),
        _f("created_at", TS),
    ]), "a training document reproduced by a span: its metadata and the licence found in its whole text "
        "(lmaudit provenance)"),
    TableSpec("personal_data_scans", "scan_id", ("span_id",), pa.schema([
        _f("scan_id", pa.string(), False), _f("span_id", pa.string(), False), _f("trace_id", pa.string(), False),
        _f("generation_id", pa.string(), False), _f("n_findings", pa.int32(), False), _f("detector", pa.string()),
        _f("created_at", TS),
    ]), "a reproduced span scanned for personal data (lmaudit provenance), with how many findings it has"),
    TableSpec("personal_data_findings", "finding_id", ("span_id", "kind", "start_char"), pa.schema([
        _f("finding_id", pa.string(), False), _f("span_id", pa.string(), False), _f("trace_id", pa.string(), False),
        _f("generation_id", pa.string(), False), _f("kind", pa.string(), False), _f("subtype", pa.string()),
        _f("start_char", pa.int32(), False), _f("end_char", pa.int32(), False), _f("masked", pa.string(), False),
        _f("value_hash", pa.string(), False), _f("created_at", TS),
    ]), "an e-mail address, phone number, key or token in a reproduced span, masked (never stored in full)"),
]

TABLES: dict[str, TableSpec] = {s.name: s for s in _SPECS}


def spec(table: str) -> TableSpec:
    try:
        return TABLES[table]
    except KeyError:
        raise KeyError(f"unknown lake table {table!r}; known: {', '.join(TABLES)}") from None
