"""Domain classifiers for data-mixture estimation (docs/mixture-method.md, section 2): train, calibrate, score.

    from ingest.classify import train_classifier, score_runs, load_classifier
    s = train_classifier(Lake(home), backend="tfidf", domains=["code", "documentation"], name="tfidf")
    score_runs(Lake(home), ["run-1"], classifier="tfidf")
    clf = load_classifier(Lake(home), "tfidf"); clf.posteriors(["def f(): pass"])

Backends (`list_backends()`): tfidf (CPU default), transformer (fine-tuned from a local checkpoint or
trained from scratch). New backends register with `@register_backend`.
"""

from ingest.classify.backends import Backend, list_backends, load_backend, make_backend, register_backend, softmax
from ingest.classify.score import LoadedClassifier, ScoreSummary, load_classifier, resolve_classifier, score_runs
from ingest.classify.train import CALIBRATIONS, TrainSummary, classifier_dir, classifier_id_for, nll, train_classifier

__all__ = [
    "Backend", "CALIBRATIONS", "LoadedClassifier", "ScoreSummary", "TrainSummary", "classifier_dir",
    "classifier_id_for", "list_backends", "load_backend", "load_classifier", "make_backend", "nll",
    "register_backend", "resolve_classifier", "score_runs", "softmax", "train_classifier",
]
