-- int_propme_params must have exactly one row: every PropMe model cross-joins it.
select count(*) as n_rows
from {{ ref('int_propme_params') }}
having count(*) != 1
