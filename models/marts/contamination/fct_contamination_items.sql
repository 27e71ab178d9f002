-- One row per (benchmark, tracing pass, item): the longest span of its input and answer found in the corpus,
-- the share of its tokens inside a found n-gram, the share of its n-grams found, and its class under the
-- n-gram rule (docs/contamination.md): clean (no n-gram found), contaminated (at least contaminated_share
-- of its tokens in found n-grams), partly (between). Input and answer are pooled; n-grams never cross them.
with

params as (

    select * from {{ ref('int_contamination_params') }}

),

items as (

    select * from {{ ref('stg_contamination_items') }}

),

spans as (

    select * from {{ ref('stg_contamination_spans') }}

),

parts as (

    select
        benchmark,
        trace_id,
        item_id,
        'input' as part,
        input_tokens as n_tokens
    from items
    union all
    select
        benchmark,
        trace_id,
        item_id,
        'answer' as part,
        answer_tokens as n_tokens
    from items

),

positions as (

    select
        benchmark,
        trace_id,
        item_id,
        part,
        n_tokens,
        unnest(range(n_tokens)) as pos
    from parts

),

-- a token is covered when a found span of at least n tokens holds it; the n-gram starting at a position is
-- found when such a span holds all of it (the spans are maximal, so this is exactly "the n-gram occurs")
flags as (

    select
        positions.benchmark,
        positions.trace_id,
        positions.item_id,
        positions.part,
        positions.pos,
        count(spans.span_row_id) > 0 as covered,
        coalesce(bool_or(positions.pos + params.ngram <= spans.end_tok), false) as ngram_found
    from positions
    cross join params
    left join spans
        on
            positions.benchmark = spans.benchmark
            and positions.trace_id = spans.trace_id
            and positions.item_id = spans.item_id
            and positions.part = spans.part
            and params.ngram <= spans.length
            and positions.pos >= spans.start_tok
            and positions.pos < spans.end_tok
    group by positions.benchmark, positions.trace_id, positions.item_id, positions.part, positions.pos

),

part_flags as (

    select
        benchmark,
        trace_id,
        item_id,
        part,
        count(*) filter (where covered) as covered_tokens,
        count(*) filter (where ngram_found) as ngrams_found
    from flags
    group by benchmark, trace_id, item_id, part

),

part_spans as (

    select
        benchmark,
        trace_id,
        item_id,
        part,
        max(length) as longest_span
    from spans
    group by benchmark, trace_id, item_id, part

),

per_part as (

    select
        parts.benchmark,
        parts.trace_id,
        parts.item_id,
        parts.part,
        parts.n_tokens,
        coalesce(part_spans.longest_span, 0) as longest_span,
        coalesce(part_flags.covered_tokens, 0) as covered_tokens,
        greatest(parts.n_tokens - params.ngram + 1, 0) as n_ngrams,
        coalesce(part_flags.ngrams_found, 0) as ngrams_found
    from parts
    cross join params
    left join part_flags
        on
            parts.benchmark = part_flags.benchmark
            and parts.trace_id = part_flags.trace_id
            and parts.item_id = part_flags.item_id
            and parts.part = part_flags.part
    left join part_spans
        on
            parts.benchmark = part_spans.benchmark
            and parts.trace_id = part_spans.trace_id
            and parts.item_id = part_spans.item_id
            and parts.part = part_spans.part

),

pooled as (

    select
        benchmark,
        trace_id,
        item_id,
        max(longest_span) filter (where part = 'input') as input_longest_span,
        max(longest_span) filter (where part = 'answer') as answer_longest_span,
        max(covered_tokens) filter (where part = 'input') as input_covered_tokens,
        max(covered_tokens) filter (where part = 'answer') as answer_covered_tokens,
        sum(n_tokens) as n_tokens,
        sum(covered_tokens) as covered_tokens,
        sum(n_ngrams) as n_ngrams,
        sum(ngrams_found) as ngrams_found
    from per_part
    group by benchmark, trace_id, item_id

),

final as (

    select
        items.item_row_id,
        items.benchmark,
        items.trace_id,
        items.corpus_id,
        items.item_id,
        md5(items.input_text || chr(31) || items.answer_text) as item_hash,
        items.score,
        items.input_tokens,
        items.answer_tokens,
        pooled.input_longest_span,
        pooled.answer_longest_span,
        greatest(pooled.input_longest_span, pooled.answer_longest_span) as longest_span,
        pooled.input_covered_tokens / nullif(items.input_tokens, 0) as input_covered_share,
        pooled.answer_covered_tokens / nullif(items.answer_tokens, 0) as answer_covered_share,
        pooled.covered_tokens / nullif(pooled.n_tokens, 0) as covered_share,
        cast(pooled.n_ngrams as integer) as n_ngrams,
        cast(pooled.ngrams_found as integer) as ngrams_found,
        pooled.ngrams_found / nullif(pooled.n_ngrams, 0) as ngram_overlap,
        pooled.n_ngrams = 0 as too_short,
        case
            when pooled.ngrams_found = 0 then 'clean'
            when pooled.covered_tokens / pooled.n_tokens >= params.contaminated_share then 'contaminated'
            else 'partly'
        end as status,
        params.ngram,
        params.contaminated_share,
        params.params
    from items
    cross join params
    inner join pooled
        on
            items.benchmark = pooled.benchmark
            and items.trace_id = pooled.trace_id
            and items.item_id = pooled.item_id

)

select * from final
