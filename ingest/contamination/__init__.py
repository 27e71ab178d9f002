"""Benchmark contamination: is an evaluation benchmark in the training corpus, and does the model reproduce it?

`items` reads and checks a benchmark file, `tracing` traces each item's input and answer against the corpus's
index with the existing SimpleTrace tracer, `attack` prefix-attacks a model with the item's input, `run` writes
all of it to the lake in one transaction; the n-gram rule and the clean / partly / contaminated classes are
computed by the dbt models (docs/contamination.md), so the rule's numbers are vars, not baked into the lake.
"""
