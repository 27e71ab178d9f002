with

source as (

    select * from {{ source('lake', 'mia_labels') }}

),

final as (

    select
        cast(label_id as varchar) as label_id,
        cast(corpus as varchar) as corpus,
        cast(item_kind as varchar) as item_kind,
        cast(item_id as varchar) as item_id,
        cast(text_hash as varchar) as text_hash,
        cast(text as varchar) as text,
        cast(domain as varchar) as domain,
        cast(source as varchar) as source,
        cast(label as varchar) as label,
        cast(reason as varchar) as reason,
        cast(n_tokens as bigint) as n_tokens,
        cast(longest_match as bigint) as longest_match,
        cast(n_windows as bigint) as n_windows,
        cast(n_windows_found as bigint) as n_windows_found,
        cast(window_tokens as bigint) as window_tokens,
        cast(params as varchar) as params,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
