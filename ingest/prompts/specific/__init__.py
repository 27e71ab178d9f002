"""The `specific` setting's pipeline: sentences from sources the model has not seen, close to its training data.

Steps (docs/specific-prompts.md): read candidate source documents (`candidates`), keep documents that pass a
quality scorer (`quality`), take one whole sentence per document length-matched to the generic set
(`candidates`), drop sentences the training corpus contains (the leakage filter of the generic setting), embed
what is left and a sample of training documents (`embedders`), keep per source the sentences closest to the
training data after removing the length effect, equal shares per source (`select`), and measure how close the
final prompts are to an independent training sample (`closeness`). `pipeline` runs the steps and writes the
prompt set and the closeness rows to the lake.
"""
