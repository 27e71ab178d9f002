-- noqa: disable=LT02
{#
  fct_document_provenance is incremental by document (corpus_key, doc_ix).

  A document's row is computed from its rows of int_document_reproductions (incremental by (run, tracing pass)
  group, each row carrying its group's input_hash), its row of stg_document_provenance (what `lmaudit provenance`
  read: licence, source, metadata) and its corpus' name. Each document row stores `group_keys`, the sorted
  keys of the groups it was computed from (md5 of run_id, trace_id and the group's input_hash), and `input_hash`,
  a hash over those keys, its provenance row and its corpus' name. Before the model runs,
  `provenance_document_delete_stale` deletes the row of every document
    - one of whose groups is gone or changed (a removed, re-imported or re-traced run, a changed var),
    - that a group new since the last build reproduces (an added run, or a changed group's new rows),
    - whose provenance row or corpus name changed;
  the model computes the documents of int_document_reproductions that have no row left. So the table equals a full
  refresh; a build with nothing changed aggregates no document, and one added run the documents it reproduces.
#}

{#- The (run, tracing pass) groups of int_document_reproductions, each with its key. -#}
{% macro provenance_document_groups() -%}
    select
        run_id,
        trace_id,
        input_hash,
        {{ propme_input_hash(['run_id', 'trace_id', 'input_hash']) }} as group_key
    from {{ ref('int_document_reproductions') }}
    group by run_id, trace_id, input_hash
{%- endmacro %}

{#- A document's input hash from its group keys, its provenance row (alias `provenance`) and its corpus (alias
    `corpora`, joined on the document's corpus_id). -#}
{% macro provenance_document_hash(group_keys) -%}
    {{ propme_input_hash([
        "array_to_string(" ~ group_keys ~ ", ',')",
        'hash(provenance.provenance_id, provenance.corpus_id, provenance.doc_id, provenance.source, provenance.path,
        provenance.url, provenance.repository, provenance.licence_declared, provenance.licence_declared_spdx,
        provenance.licence_detected, provenance.licence_evidence, provenance.licence_coverage,
        provenance.doc_tokens, provenance.metadata)',
        'corpora.name'
    ]) }}
{%- endmacro %}

{% macro provenance_document_delete_stale() -%}
    {%- if is_incremental() and incremental_has_columns(['group_keys', 'input_hash']) -%}
        delete from {{ this }} as old
        where
            not list_has_all(
                (select coalesce(list(cur.group_key), []) from ({{ provenance_document_groups() }}) as cur),
                old.group_keys
            )
            or exists (
                select 1
                from {{ ref('int_document_reproductions') }} as rep
                inner join (
                    select cur.run_id, cur.trace_id, cur.input_hash
                    from ({{ provenance_document_groups() }}) as cur
                    where cur.group_key not in (select distinct unnest(known.group_keys) from {{ this }} as known)
                ) as new_groups
                    on
                        rep.run_id = new_groups.run_id
                        and rep.trace_id = new_groups.trace_id
                        and rep.input_hash is not distinct from new_groups.input_hash
                where rep.corpus_key = old.corpus_key and rep.doc_ix = old.doc_ix
            )
            or exists (
                select 1
                from {{ this }} as kept
                left join {{ ref('stg_document_provenance') }} as provenance
                    on kept.corpus_key = provenance.corpus_key and kept.doc_ix = provenance.doc_ix
                left join {{ ref('stg_corpora') }} as corpora
                    on coalesce(provenance.corpus_id, kept.corpus_id) = corpora.corpus_id
                where
                    kept.corpus_key = old.corpus_key
                    and kept.doc_ix = old.doc_ix
                    and kept.input_hash is distinct from {{ provenance_document_hash('kept.group_keys') }}
            )
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
