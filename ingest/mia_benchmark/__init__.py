"""A membership-inference benchmark labelled by the index (issue 31 item 2).

mimir and the MIA papers need hand-made member and non-member splits; an exact index of the training corpus
can label membership itself. `labels` decides member / non_member / ambiguous from the index,
`candidates` gathers texts to label (reference documents, a run's generations, corpus documents, a file),
`run` writes the labels into the lake (`mia_labels`) and scores them with `lmaudit score`'s scorer,
`metrics` computes AUC and TPR at a fixed FPR as mimir reports them, and `marts` builds `fct_mia_benchmark`.
The rule and every default: docs/mia-benchmark.md.
"""
