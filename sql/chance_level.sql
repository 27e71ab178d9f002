-- How long do matches get by chance? The prompts' own longest matching spans (prompts are not training
-- text) beside the runs' ALS and R20: the paper's chance-level table.
-- Run: lmaudit sql @sql/chance_level.sql
with

chance as (
    select * from fct_chance_level
),

final as (
    select
        chance.model_name,
        chance.setting,
        chance.n_prompts_traced,
        round(chance.prompt_als, 2) as prompt_als,
        chance.prompt_max_span,
        round(chance.prompt_r20, 4) as prompt_r20,
        round(chance.run_als, 2) as run_als,
        round(chance.run_r20, 4) as run_r20,
        round(chance.prompt_als_share, 3) as prompt_als_share,
        chance.null_reason
    from chance
    order by chance.model_name, chance.setting
)

select * from final
