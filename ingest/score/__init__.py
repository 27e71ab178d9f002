"""Token log-probabilities of texts under a model, and the membership-inference scores built on them."""
