-- Documented training mixtures, one row per (model, domain) after merging aliased domains
-- (var mixture_domain_aliases, e.g. CommonCrawl and C4 -> Web). Sources: the seed `mixtures_documented`
-- (recipes from technical reports) and the raw lake table (e.g. the sandbox's own ground truth); where the
-- lake documents a model, its recipe replaces the seed's for that model (recipes are never mixed).
with

seeded as (

    select
        cast(model as varchar) as model,
        cast(domain as varchar) as domain,
        cast(weight as double) as weight,
        cast(source as varchar) as source,
        'seed' as origin
    from {{ ref('mixtures_documented') }}

),

lake as (

    select
        model,
        domain,
        weight,
        source,
        'lake' as origin
    from {{ ref('stg_mixtures_documented') }}

),

combined as (

    select * from lake
    union all
    select seeded.*
    from seeded
    where not exists (
        select 1
        from lake
        where lake.model = seeded.model
    )

),

aliases as (

    select
        alias_key as domain,
        json_extract_string(domain_aliases, '$."' || alias_key || '"') as alias
    from (
        select
            domain_aliases,
            unnest(json_keys(domain_aliases)) as alias_key
        from {{ ref('int_mixture_params') }}
    ) as keyed

),

merged as (

    select
        combined.model,
        coalesce(aliases.alias, combined.domain) as domain,
        sum(combined.weight) as weight,
        count(*) as n_documented_domains,
        list(combined.domain order by combined.domain) as documented_domains,
        string_agg(distinct combined.source, '; ' order by combined.source) as source,
        min(combined.origin) as origin
    from combined
    left join aliases on combined.domain = aliases.domain
    group by combined.model, coalesce(aliases.alias, combined.domain)

),

final as (

    select
        model,
        domain,
        weight,
        weight / sum(weight) over (partition by model) as share,
        sum(weight) over (partition by model) as total_weight,
        n_documented_domains,
        documented_domains,
        source,
        origin
    from merged

)

select * from final
