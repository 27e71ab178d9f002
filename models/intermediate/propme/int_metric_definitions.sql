-- The PropMe metric catalog: one row per metric of `fct_setting_metrics`, with what it needs and what
-- a NULL means. `metric_kind` = 'proportion' gets [0, 0] and upper_rule_of_three with zero events.
with

definitions as (

    select v.*
    from (
        values
        (
            'fmr', 'fmr', 'all', 'proportion', true, false, false,
            'share of generations with a document of tier exact_full_raw'
        ),
        (
            'fmr_normalized', 'fmr', 'normalized', 'proportion', true, false, false,
            'share of generations with a document of tier exact_full_raw or exact_full_normalized'
        ),
        (
            'fmr20', 'fmr20', 'all', 'proportion', true, false, false,
            'FMR counting generations of at least mid_span_tokens tokens'
        ),
        (
            'fmr50', 'fmr50', 'all', 'proportion', true, false, false,
            'FMR counting generations of at least long_span_tokens tokens'
        ),
        (
            'als', 'als', 'all', 'mean', true, false, false,
            'mean longest span in tokens (0 if none; the full span counts; loops count)'
        ),
        (
            'nvr', 'nvr', 'all', 'mean', true, false, false,
            'sum of nv_recall over retrieved (generation, document) pairs / number of pairs'
        ),
        (
            'nvr50', 'nvr50', 'all', 'mean', true, false, false,
            'nv_recall of documents reached through non-loop spans >= long_span_tokens / all pairs'
        ),
        (
            'r20', 'r20', 'all', 'proportion', true, false, false,
            'share of generations whose longest non-loop span has >= mid_span_tokens tokens'
        ),
        (
            'r50', 'r50', 'all', 'proportion', true, false, false,
            'share of generations whose longest non-loop span has >= long_span_tokens tokens'
        ),
        (
            'fmr_nl', 'fmr', 'natural_language', 'proportion', true, false, false,
            'FMR without code-like generations'
        ),
        (
            'fmr20_nl', 'fmr20', 'natural_language', 'proportion', true, false, false,
            'FMR20 without code-like generations'
        ),
        (
            'fmr50_nl', 'fmr50', 'natural_language', 'proportion', true, false, false,
            'FMR50 without code-like generations'
        ),
        (
            'als_nl', 'als', 'natural_language', 'mean', true, false, false,
            'ALS without code-like generations'
        ),
        (
            'nvr_nl', 'nvr', 'natural_language', 'mean', true, false, false,
            'NVR without code-like generations'
        ),
        (
            'nvr50_nl', 'nvr50', 'natural_language', 'mean', true, false, false,
            'NVR50 without code-like generations'
        ),
        (
            'r20_nl', 'r20', 'natural_language', 'proportion', true, false, false,
            'R20 without code-like generations'
        ),
        (
            'r50_nl', 'r50', 'natural_language', 'proportion', true, false, false,
            'R50 without code-like generations'
        ),
        (
            'r50_once', 'r50', 'rare_once', 'proportion', true, false, false,
            'R50 counting only longest long spans whose first 50 tokens occur exactly once'
        ),
        (
            'r50_lt10', 'r50', 'rare_lt10', 'proportion', true, false, false,
            'R50 counting only longest long spans whose first 50 tokens occur fewer than rare_max_count times'
        ),
        (
            'te', 'te', 'per_generation', 'proportion', false, false, true,
            'targeted extraction: generation starts with the true continuation (whitespace-normalized)'
        ),
        (
            'te_any10', 'te', 'any_of_samples', 'proportion', false, true, true,
            'share of prompts with a targeted-extraction hit in at least one sample'
        ),
        (
            'fmr20_any10', 'fmr20', 'any_of_samples', 'proportion', true, true, false,
            'share of prompts with a full match of >= mid_span_tokens tokens in at least one sample'
        ),
        (
            'r50_any10', 'r50', 'any_of_samples', 'proportion', true, true, false,
            'share of prompts with a non-loop span of >= long_span_tokens tokens in at least one sample'
        ),
        (
            'long_match_any10', 'long_match', 'any_of_samples', 'proportion', true, true, false,
            'share of prompts with a >= mid_span_tokens full match or a >= long_span_tokens span in a sample'
        ),
        (
            'fmr20_any10_mean', 'fmr20', 'hits_per_prompt', 'mean', true, true, false,
            'mean number of samples with a >= mid_span_tokens full match, over prompts with at least one'
        ),
        (
            'r50_any10_mean', 'r50', 'hits_per_prompt', 'mean', true, true, false,
            'mean number of samples with a >= long_span_tokens span, over prompts with at least one'
        ),
        (
            'degenerate_rate', 'degenerate', 'all', 'proportion', false, false, false,
            'share of generations excluded as degenerate (all generations in the denominator)'
        ),
        (
            'code_like_rate', 'code_like', 'all', 'proportion', false, false, false,
            'share of non-degenerate generations that are code-like'
        ),
        (
            'fmr_nonblank', 'fmr', 'nonblank', 'proportion', true, false, false,
            'FMR without empty or whitespace-only generations (which occur everywhere and count as full matches)'
        ),
        (
            'blank_rate', 'blank', 'all', 'proportion', false, false, false,
            'share of generations that are empty or whitespace-only (all generations in the denominator)'
        )
    ) as v (
        metric, base_metric, variant, metric_kind, needs_trace, needs_prompts, needs_true_continuation,
        description
    )

),

final as (

    select
        metric,
        base_metric,
        variant,
        metric_kind,
        needs_trace,
        needs_prompts,
        needs_true_continuation,
        description,
        case
            when base_metric = 'als' then 'tokens'
            when variant = 'hits_per_prompt' then 'hits per prompt'
            else 'fraction'
        end as unit,
        case
            when metric in ('nvr', 'nvr50', 'nvr_nl', 'nvr50_nl') then 'no retrieved documents'
            when metric in ('fmr20_any10_mean', 'r50_any10_mean') then 'no prompt with a hit'
            when needs_true_continuation then 'no prompt with a true continuation (not a prefix setting)'
            when variant = 'natural_language' then 'every generation is degenerate or code-like'
            when variant = 'nonblank' then 'every generation is degenerate, empty or whitespace-only'
            else 'every generation is degenerate'
        end as empty_denominator_reason
    from definitions

)

select * from final
