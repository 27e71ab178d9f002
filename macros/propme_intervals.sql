{#
    The one rule for a proportion with zero events (docs/propme-method.md section 4): its interval is the
    bootstrap's [0, 0], as the paper reports it, and the rule-of-three upper bound 3 / n_units (capped at 1)
    is kept beside it in its own column, upper_rule_of_three, so a reader can still see how little a small
    sample rules out.
#}
{% macro propme_rule_of_three_upper(zero_events, n_units) -%}
    case when {{ zero_events }} then least(1.0, 3.0 / {{ n_units }}) end
{%- endmacro %}
