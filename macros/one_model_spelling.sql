{#-
    The rows of one recorded spelling per model key, for a lake table that holds one set of rows per model
    (a documented recipe, a tokenizer estimate). `relation` has `model` (the key, macro model_key) and
    `recorded_model` (as the lake holds it). Before model folders were recorded relative to the warehouse,
    one model could be filed under two spellings (an old absolute place and the new relative key, or two
    old places); read as one key, their rows would be summed or duplicated. One spelling wins: the newest
    (`newest`, a timestamp column, when the table has one), then the key as written (a row written since),
    then the greatest spelling, so the choice depends on the rows alone. A row without a model is kept (its
    not_null test names it). `within`: columns the table holds one set of rows per model within (a
    benchmark's attacks): one spelling is chosen per model in each.
-#}
{% macro one_model_spelling(relation, newest=none, within=[]) -%}
    select {{ relation }}.*
    from {{ relation }}
    semi join (
        select
            {% for c in within %}{{ c }},
            {% endfor %}model,
            recorded_model
        from {{ relation }}
        group by {% for c in within %}{{ c }}, {% endfor %}model, recorded_model
        qualify row_number() over (
            partition by {% for c in within %}{{ c }}, {% endfor %}model
            order by
                {% if newest %}max({{ newest }}) desc nulls last,{% endif %}
                (recorded_model = model) desc,
                recorded_model desc
        ) = 1
    ) as chosen
        on
            {% for c in within %}{{ relation }}.{{ c }} is not distinct from chosen.{{ c }}
            and {% endfor %}{{ relation }}.model is not distinct from chosen.model
            and {{ relation }}.recorded_model is not distinct from chosen.recorded_model
{%- endmacro %}
