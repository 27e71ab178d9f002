{#-
    A recorded model as the marts compare it (ingest.home.model_key is the same rule in Python). Model
    folders inside the warehouse are recorded relative to it; rows written before that hold absolute folders:
    one under this warehouse ($LMAUDIT_HOME) is read relative to it, and a sandbox model's
    (`.../sandbox/<name>/model`, or a checkpoint under it) as that tail, also when it names the place the
    warehouse was moved or copied from, so a run keeps pairing with its documented mixture after a move. Hub
    names, folders elsewhere and relative keys stay as recorded.
-#}
{% macro model_key(column) -%}
    {#- (sqlfluff's templater has no env_var: it lints the macro with a stand-in folder) -#}
    {#- without a trailing slash, as ingest.home.model_key reads the folder (a plain dbt run may be given one) -#}
    {%- set home = ((env_var('LMAUDIT_HOME') if env_var is defined else '/lint/warehouse').rstrip('/') or '/') ~ '/' -%}
    case
        when starts_with({{ column }}, '{{ home | replace("'", "''") }}')
            then rtrim(substr({{ column }}, {{ home | length + 1 }}), '/')
        else coalesce(
            nullif(
                regexp_extract(
                    {{ column }}, '^/(?:.*/)?(sandbox/[^/]+/model(?:/checkpoints/step-[0-9]+)?)/*$', 1
                ),
                ''
            ),
            {{ column }}
        )
    end
{%- endmacro %}
