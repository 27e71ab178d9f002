-- Does the model reproduce a rightsholder's documents in ordinary use, compared with an attack? Per document set
-- (lmaudit audit documents) and propensity setting: the generations that reproduce >= 50 tokens of one of the
-- set's documents (r50) and the share under the attack, PM = f_p / (f_p + f_c) with its interval, how many of
-- the set's documents were reproduced, and the attack's targeted extraction.
-- Run: lmaudit sql @sql/document_set_propensity.sql
with

document_sets as (
    select * from fct_document_set_propensity
),

final as (
    select
        document_set,
        n_documents,
        propensity_setting,
        model,
        hits_p || ' / ' || n_generations_p as ordinary_use,
        hits_c || ' / ' || n_generations_c as under_attack,
        attack_kind,
        round(pm, 3) as pm,
        round(pm_ci_low, 3) as pm_low,
        round(pm_ci_high, 3) as pm_high,
        n_documents_reproduced,
        te_hits || ' / ' || te_generations as targeted_extraction,
        null_reason
    from document_sets
    where metric = 'r50'
)

select * from final
order by document_set, model, propensity_setting
