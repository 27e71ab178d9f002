-- How well each membership-inference score separates index-labelled members from non-members, per domain and
-- pooled ('all'): AUC with its bootstrap interval and TPR at 1 % and 0.1 % FPR (mimir's numbers).
-- Run: lmaudit sql @sql/mia_benchmark.sql
with

benchmark as (

    select * from fct_mia_benchmark

),

final as (

    select
        corpus,
        model,
        scoring,
        score_name,
        domain,
        n_members,
        n_non_members,
        n_ambiguous,
        round(auc, 3) as auc,
        round(auc_low, 3) as auc_low,
        round(auc_high, 3) as auc_high,
        round(tpr_at_1pct_fpr, 3) as tpr_1pct,
        round(tpr_at_01pct_fpr, 3) as tpr_01pct
    from benchmark
    order by corpus asc, model asc, scoring asc, domain = 'all' desc, domain asc, auc desc nulls last

)

select * from final
