-- The mixture research parameters (dbt vars `mixture_*`, defaults here) as one typed row, plus all of
-- them as JSON (`params`). The mixture models read their parameters from here and write them into their rows.
{% set default_estimators = ["direct", "cc", "acc", "pacc", "llmsurgeon_code", "emq", "bbse", "rlls"] %}
{% set estimators = var("mixture_estimators", default_estimators) %}
{% set resample = var("mixture_bootstrap_resample", ["generations", "reference"]) %}
{% set domain_aliases = var("mixture_domain_aliases", {"CommonCrawl": "Web", "C4": "Web"}) %}
with

vars as (

    select
        cast('{{ estimators | tojson }}' as json) as estimators_json,
        cast({{ var('mixture_bootstrap_resamples', 200) }} as integer) as bootstrap_resamples,
        cast({{ var('mixture_bootstrap_seed', 0) }} as bigint) as bootstrap_seed,
        cast({{ var('mixture_ci_level', 0.95) }} as double) as ci_level,
        cast('{{ resample | tojson }}' as json) as resample_json,
        cast('{{ domain_aliases | tojson }}' as json) as domain_aliases,
        cast('{{ var("mixture_model_aliases", {}) | tojson }}' as json) as model_aliases,
        cast({{ var('mixture_max_uncovered_weight', 0.05) }} as double) as max_uncovered_weight,
        cast({{ var('mixture_span_min_tokens', 50) }} as integer) as span_min_tokens,
        cast('{{ var("mixture_mia_aggregation", "authors") }}' as varchar) as mia_aggregation,
        cast('{{ var("mixture_mia_scoring", "authors") }}' as varchar) as mia_scoring

),

final as (

    select
        cast(from_json(estimators_json, '["VARCHAR"]') as varchar[]) as estimators,
        bootstrap_resamples,
        bootstrap_seed,
        ci_level,
        cast(from_json(resample_json, '["VARCHAR"]') as varchar[]) as bootstrap_resample,
        domain_aliases,
        model_aliases,
        max_uncovered_weight,
        span_min_tokens,
        mia_aggregation,
        mia_scoring,
        cast(json_object(
            'estimators', estimators_json,
            'bootstrap_resamples', bootstrap_resamples,
            'bootstrap_seed', bootstrap_seed,
            'ci_level', ci_level,
            'bootstrap_resample', resample_json,
            'domain_aliases', domain_aliases,
            'model_aliases', model_aliases,
            'max_uncovered_weight', max_uncovered_weight,
            'span_min_tokens', span_min_tokens,
            'mia_aggregation', mia_aggregation,
            'mia_scoring', mia_scoring
        ) as varchar) as params
    from vars

)

select * from final
