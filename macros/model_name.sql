{#-
    A short model name for tables and figures: the last segment of a model path or hub name, or the folder
    above it when that segment is a generic name (`model`, `checkpoint`, `final`, `hf`), as in the sandbox's
    <size>-seed<n>/model. Full names stay in the `model` column.
-#}
{% macro model_name(column) -%}
    case
        when regexp_extract({{ column }}, '([^/]+)/*$', 1) in ('model', 'checkpoint', 'final', 'hf')
            then regexp_extract({{ column }}, '([^/]+)/+[^/]+/*$', 1)
        else regexp_extract({{ column }}, '([^/]+)/*$', 1)
    end
{%- endmacro %}
