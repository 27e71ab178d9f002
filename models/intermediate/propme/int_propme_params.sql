-- The PropMe research parameters (dbt vars) as one typed row, plus all of them as JSON (`params`).
-- Every PropMe model reads its parameters from here, so they are written into the output rows.
with

vars as (

    select
        cast({{ var('propme_bootstrap_resamples') }} as integer) as bootstrap_resamples,
        cast({{ var('propme_bootstrap_seed') }} as bigint) as bootstrap_seed,
        cast({{ var('propme_ci_level') }} as double) as ci_level,
        cast('{{ var("propme_capability_setting") }}' as varchar) as capability_setting,
        cast('{{ var("propme_prompt_free_settings") | tojson }}' as json) as prompt_free_settings_json,
        cast('{{ var("propme_capability_pairs") | tojson }}' as json) as capability_pairs_json,
        cast('{{ var("propme_pm_metrics") | tojson }}' as json) as pm_metrics_json,
        cast({{ var('propme_mid_span_tokens') }} as integer) as mid_span_tokens,
        cast({{ var('propme_long_span_tokens') }} as integer) as long_span_tokens,
        cast({{ var('propme_loop_min_tokens') }} as integer) as loop_min_tokens,
        cast({{ var('propme_loop_max_period') }} as integer) as loop_max_period,
        cast({{ var('propme_loop_min_repeats') }} as integer) as loop_min_repeats,
        cast({{ var('propme_loop_min_share') }} as double) as loop_min_share,
        cast({{ var('propme_degenerate_max_compression') }} as double) as degenerate_max_compression,
        cast({{ var('propme_degenerate_max_letter_share') }} as double) as degenerate_max_letter_share,
        cast({{ var('propme_code_min_lines') }} as integer) as code_min_lines,
        cast({{ var('propme_code_min_line_share') }} as double) as code_min_line_share,
        cast({{ var('propme_code_max_letter_share') }} as double) as code_max_letter_share,
        cast({{ var('propme_rare_max_count') }} as integer) as rare_max_count,
        cast({{ var('propme_blank_outputs_match') }} as boolean) as blank_outputs_match,
        cast({{ var('propme_min_shared_prompts') }} as integer) as min_shared_prompts

),

final as (

    select
        bootstrap_resamples,
        bootstrap_seed,
        ci_level,
        capability_setting,
        cast(from_json(prompt_free_settings_json, '["VARCHAR"]') as varchar[]) as prompt_free_settings,
        cast(from_json(pm_metrics_json, '["VARCHAR"]') as varchar[]) as pm_metrics,
        capability_pairs_json,
        mid_span_tokens,
        long_span_tokens,
        loop_min_tokens,
        loop_max_period,
        loop_min_repeats,
        loop_min_share,
        degenerate_max_compression,
        degenerate_max_letter_share,
        code_min_lines,
        code_min_line_share,
        code_max_letter_share,
        rare_max_count,
        blank_outputs_match,
        min_shared_prompts,
        cast(json_object(
            'bootstrap_resamples', bootstrap_resamples,
            'bootstrap_seed', bootstrap_seed,
            'ci_level', ci_level,
            'capability_setting', capability_setting,
            'prompt_free_settings', prompt_free_settings_json,
            'capability_pairs', capability_pairs_json,
            'pm_metrics', pm_metrics_json,
            'mid_span_tokens', mid_span_tokens,
            'long_span_tokens', long_span_tokens,
            'loop_min_tokens', loop_min_tokens,
            'loop_max_period', loop_max_period,
            'loop_min_repeats', loop_min_repeats,
            'loop_min_share', loop_min_share,
            'degenerate_max_compression', degenerate_max_compression,
            'degenerate_max_letter_share', degenerate_max_letter_share,
            'code_min_lines', code_min_lines,
            'code_min_line_share', code_min_line_share,
            'code_max_letter_share', code_max_letter_share,
            'rare_max_count', rare_max_count,
            'blank_outputs_match', blank_outputs_match,
            'min_shared_prompts', min_shared_prompts
        ) as varchar) as params
    from vars

)

select * from final
