-- Which runs are in the warehouse, and how many generations and prompts does each have?
-- Run: lmaudit sql @sql/generations_per_run.sql
select
    runs.run_id,
    runs.model,
    runs.setting,
    runs.backend,
    count(generations.generation_id) as n_generations,
    count(distinct generations.prompt_id) as n_prompts,
    avg(length(generations.text)) as mean_chars
from stg_runs as runs
left join stg_generations as generations
    on runs.run_id = generations.run_id
group by all
order by runs.run_id
