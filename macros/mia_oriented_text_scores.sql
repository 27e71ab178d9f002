{#- The membership scores of a text_scores row, oriented so that HIGHER means "looks more like training
    data": -loss, -zlib, Min-K%, Min-K%++ and -(loss / reference-model loss), as a list of
    {estimator, member_score} structs to unnest: the one definition of these signs, used by
    int_mixture_mia_scores (LLMSurgeon's baselines) and int_mia_benchmark_scores; text_method_scores rows carry
    member_score already oriented. -#}
{% macro mia_oriented_text_scores(relation) -%}
unnest([
    { 'estimator': 'mia_loss', 'member_score': -{{ relation }}.loss },
    { 'estimator': 'mia_zlib', 'member_score': -{{ relation }}.zlib_loss },
    { 'estimator': 'mia_mink', 'member_score': {{ relation }}.mink },
    { 'estimator': 'mia_minkpp', 'member_score': {{ relation }}.minkpp },
    { 'estimator': 'mia_ref', 'member_score': -({{ relation }}.loss / nullif({{ relation }}.ref_loss, 0)) }
])
{%- endmacro %}
