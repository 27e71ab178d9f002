"""Document-set audits: does a model reproduce *these* training documents in ordinary use, compared with an
attack? (`lmaudit audit documents`).

A rightsholder names a set of training documents (ids, or a SQL condition over the corpus's document
metadata: a source path, a repository, a URL prefix); `documents` lists the corpus's documents from its index,
`selection` resolves and checks the set, `store` writes it as the raw `document_sets` table (one partition per set
name, so a re-run replaces it whole) with, when asked, prefix prompts drawn only from the set's documents (its own
targeted-extraction attack). Every number is computed by dbt
(models/intermediate/audit, models/marts/audit) with PropMe's own definitions and bootstrap; `marts` is the
Python behind the bootstrap model.
"""
