"""Document-set audits: does a model reproduce *these* training documents in ordinary use, compared with an
attack? (`lmaudit audit documents`).

A rightsholder names a set of training documents (ids, or a SQL condition over the corpus's document
metadata: a source path, a repository, a URL prefix); `selection` resolves and checks it, `store` writes it as
the raw `document_sets` table (one partition per set name, so a re-run replaces it whole), and `attack` builds
prefix prompts drawn only from the set's documents. Every number is computed by dbt
(models/intermediate/audit, models/marts/audit) with PropMe's own definitions and bootstrap; `marts` is the
Python behind the bootstrap model.
"""
