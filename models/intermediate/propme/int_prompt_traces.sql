-- One row per (tracing pass, prompt, kind): what a tracing pass found for a prompt's own text (kind
-- 'prompt', traced as 'prompt:<prompt_id>') or its source sequence, the prompt followed by its true
-- continuation (kind 'source', 'source:<prompt_id>'); only when the traced text is the current one.
with

prompts as (

    select * from {{ ref('stg_prompts') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

prompt_texts as (

    select
        prompt_id,
        setting,
        corpus_id,
        'prompt' as kind,
        'prompt:' || prompt_id as traced_id,
        text
    from prompts
    where text is not null and text <> ''
    union all
    select
        prompt_id,
        setting,
        corpus_id,
        'source' as kind,
        'source:' || prompt_id as traced_id,
        coalesce(text, '') || true_continuation as text
    from prompts
    where true_continuation is not null and true_continuation <> ''

),

span_stats as (

    select
        trace_id,
        generation_id,
        count(*) as n_spans,
        max(length) as longest_span,
        bool_or(is_full) as has_full_match,
        max(count) filter (where is_full) as full_count
    from spans
    where generation_id like 'prompt:%' or generation_id like 'source:%'
    group by trace_id, generation_id

),

final as (

    select
        traced.trace_id,
        prompt_texts.prompt_id,
        prompt_texts.setting,
        prompt_texts.corpus_id,
        prompt_texts.kind,
        traced.n_index_tokens,
        coalesce(span_stats.n_spans, 0) as n_spans,
        coalesce(span_stats.longest_span, 0) as longest_span,
        coalesce(span_stats.has_full_match, false) as has_full_match,
        span_stats.full_count
    from prompt_texts
    inner join traced
        on
            prompt_texts.traced_id = traced.generation_id
            and md5(prompt_texts.text) = traced.text_hash
    left join span_stats
        on traced.trace_id = span_stats.trace_id and traced.generation_id = span_stats.generation_id

)

select * from final
