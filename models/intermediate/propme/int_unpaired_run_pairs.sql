-- Pairs of runs in the same prompt-free setting traced by the same pass (run_a < run_b): no prompt pairs
-- their units, so `fct_independent_run_differences` resamples each run on its own.
with

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

prompt_free as (

    select * from run_traces
    where unit_kind = 'generation' and trace_id is not null and n_generations > 0

),

final as (

    select
        runs_a.run_id as run_a,
        runs_b.run_id as run_b,
        runs_a.trace_id,
        runs_a.setting,
        runs_a.model as model_a,
        runs_b.model as model_b,
        runs_a.corpus_id as corpus_id_a,
        runs_b.corpus_id as corpus_id_b,
        runs_a.n_generations as n_generations_a,
        runs_b.n_generations as n_generations_b
    from prompt_free as runs_a
    inner join prompt_free as runs_b
        on
            runs_a.setting = runs_b.setting
            and runs_a.trace_id = runs_b.trace_id
            and runs_a.run_id < runs_b.run_id

)

select * from final
