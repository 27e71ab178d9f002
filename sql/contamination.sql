-- Is the benchmark in the training corpus, and does the model reproduce it? Per benchmark (and model
-- prefix-attacked): items clean / partly / contaminated under the n-gram rule, the contamination rate, the
-- reproduction rate overall and on contaminated and clean items, and, when the benchmark file had scores,
-- the mean score on clean and contaminated items with the gap and its bootstrap interval.
-- Run: lmaudit sql @sql/contamination.sql
with

benchmarks as (
    select * from fct_contamination_benchmarks
),

scores as (
    select * from fct_contamination_scores
),

final as (
    select
        benchmarks.benchmark,
        benchmarks.model,
        benchmarks.n_items as items,
        benchmarks.n_clean as clean,
        benchmarks.n_partly as partly,
        benchmarks.n_contaminated as contaminated,
        round(100 * benchmarks.contamination_rate, 1) as contaminated_pct,
        round(100 * benchmarks.reproduction_rate, 1) as reproduced_pct,
        round(100 * benchmarks.reproduction_rate_contaminated, 1) as reproduced_contaminated_pct,
        round(100 * benchmarks.reproduction_rate_clean, 1) as reproduced_clean_pct,
        round(scores.score_clean, 3) as score_clean,
        round(scores.score_contaminated, 3) as score_contaminated,
        round(scores.gap, 3) as gap,
        round(scores.gap_lower, 3) as gap_lower,
        round(scores.gap_upper, 3) as gap_upper,
        benchmarks.ngram
    from benchmarks
    left join scores
        on benchmarks.benchmark = scores.benchmark and benchmarks.trace_id = scores.trace_id
)

select * from final
order by benchmark, model
