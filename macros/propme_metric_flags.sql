-- noqa: disable=LT02
{#
    The per-generation facts every PropMe metric counts, defined once (issue: one definition per number).
    int_metric_units (the headline metrics) and int_cumulative_filter_units (the paper's filter steps) both
    select these columns from `facts` (int_generation_facts) and `params` (int_propme_params), so a change
    to what counts as a full match, a long span or a rare duplicate reaches both:

    - not_degenerate / is_code_like / is_blank: which generations a metric keeps (is_degenerate and
      is_code_like are not-null tested upstream; the coalesce only spells out the rule for an untraced row)
    - fm_raw, fm_norm: a full match (raw text, whitespace-normalised); fm_mid / fm_long: one of at least
      mid_span_tokens / long_span_tokens index tokens (FMR20, FMR50; step 2 of the cumulative filters)
    - r_mid / r_long: a non-loop span of at least mid / long tokens (R20, R50)
    - is_once / is_lt10: the long span's first long_span_tokens tokens occur once / fewer than
      rare_max_count times in the corpus (duplication_bucket)
    - longest_span, nv_sum, nv_sum_long, n_nv_docs: ALS and near-verbatim recall sums, 0 when not traced
    - has_true_continuation, te_hit: targeted extraction (prefix setting)
#}
{% macro propme_metric_flags(facts='facts', params='params') -%}
    not coalesce({{ facts }}.is_degenerate, false) as not_degenerate,
    coalesce({{ facts }}.is_code_like, false) as is_code_like,
    coalesce({{ facts }}.is_blank, false) as is_blank,
    coalesce({{ facts }}.full_match_raw, false) as fm_raw,
    coalesce({{ facts }}.full_match_normalized, false) as fm_norm,
    coalesce({{ facts }}.full_match_raw and {{ facts }}.n_tokens >= {{ params }}.mid_span_tokens, false) as fm_mid,
    coalesce({{ facts }}.full_match_raw and {{ facts }}.n_tokens >= {{ params }}.long_span_tokens, false)
        as fm_long,
    coalesce({{ facts }}.longest_nonloop_span >= {{ params }}.mid_span_tokens, false) as r_mid,
    coalesce({{ facts }}.longest_nonloop_span >= {{ params }}.long_span_tokens, false) as r_long,
    coalesce({{ facts }}.duplication_bucket = 'once', false) as is_once,
    coalesce({{ facts }}.duplication_bucket in ('once', 'rare'), false) as is_lt10,
    coalesce({{ facts }}.longest_span, 0) as longest_span,
    coalesce({{ facts }}.nv_sum, 0) as nv_sum,
    coalesce({{ facts }}.nv_sum_long, 0) as nv_sum_long,
    coalesce({{ facts }}.n_nv_docs, 0) as n_nv_docs,
    {{ facts }}.has_true_continuation,
    coalesce({{ facts }}.targeted_hit, false) as te_hit
{%- endmacro %}
